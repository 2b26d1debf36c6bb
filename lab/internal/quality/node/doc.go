// Package node is the replay's model of a node running one container, one
// second at a time. It is pure and deterministic (randomness comes from
// the caller's source).
//
// The rules, each unit-tested:
//
//   - CPU: the second's demand is spread over the ten 100 ms CFS periods of
//     the second as demand x (0.75 ... 1.25) (ten evenly spaced factors: the
//     work arrives in bursts). A period whose share exceeds the limit is
//     throttled and runs at the limit. Usage is the mean of what ran;
//     ThrottledFraction is throttled periods over periods. Unmet demand
//     (demand - usage) accumulates as starved core-seconds. No limit: usage
//     is demand.
//   - Memory: the working set is the demand (by wall clock, or by the
//     container's age for a trace marked MemByAge, so a restarted leak
//     starts again). A working set above the memory limit is an OOM kill:
//     the container is down for the restart back-off (0 s for the first
//     restart, then 10 s doubling to 300 s, as the kubelet's
//     CrashLoopBackOff; reset after 10 minutes without a kill), and
//     starts again with its age at 0. While down it uses nothing and all
//     its CPU demand is starved. A restarted container whose demand follows
//     the clock rebuilds its working set over RestartWarmup (10 s,
//     linearly): the new process does not start with the old one's memory.
//   - Resizes take effect after a kubelet latency drawn from the measured
//     distribution (Latencies; docs/benchmarks.md, 1.35.4: the status showed
//     the new resources 0.24-0.92 s after the patch), rounded up to whole
//     seconds of the replay. A memory limit below the current working set
//     is refused as the kubelet does (lab/docs/experiments.md, the field report's
//     experiment 6): the resize stays pending (in progress) and is retried
//     every second until it fits or another resize replaces it.
//   - A resize of a resource whose resizePolicy is RestartContainer restarts
//     the container (its age goes to 0; no back-off).
package node
