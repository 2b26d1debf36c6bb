// Package experiment runs the field report's in-place resize experiments
// (lab/docs/experiments.md) against a live cluster and returns what happened:
// timelines of desired (spec), allocated and actual (status) resources and
// the resize conditions, the cgroup values the kubelet wrote, the errors the
// API server returned, and how long each step took.
//
// It owns:
//
//   - one function per experiment (CPUResize, MemoryRestart, Deferred,
//     Infeasible, QoSChange, MemoryDecrease, MergePatch), each in its own
//     namespace that it deletes, and waits for, before returning;
//   - the small pod builders, the waits on a pod (a watch that keeps every
//     version it saw, with the time it arrived) and the one place that
//     patches the pods/resize subresource;
//   - Env, what an experiment needs: a clientset, kubectl for exec, and
//     optionally the node's cgroup root when the node is this machine.
//
// It does not judge: a result records what was seen and never asserts what
// should have been. lab/e2e asserts; `snug-lab demo` prints. It does not plan
// resizes (internal/resize does) and it does not manage the lab.
//
// Every wait is bounded by Env.Timeout and fails with an error that names
// what it waited for and the last state it saw. Experiments run one at a
// time: Deferred and Infeasible measure the node's free room, so another
// workload on the node changes their outcome.
package experiment
