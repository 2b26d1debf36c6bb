// Package recommend turns a container's per-second signals into resize
// decisions and VPA-style recommendations. It is pure: it reads no clock
// (every method takes now), no files and no cluster, and imports neither
// client-go nor controller-runtime.
//
// It owns:
//
//   - The fast path: sustained CPU throttling, or usage pinned at the CPU
//     limit, grows CPU within one or two samples by a factor of the limit
//     sized from the throttled fraction; a working set near the memory limit
//     or on course to reach it, memory stalls (PSI) near it, and OOM kills
//     grow memory at once.
//   - The baseline: exponentially decaying histograms of usage (Histogram,
//     as VPA's, mergeable and checkpointable), whose percentiles plus a
//     margin give target, lowerBound and upperBound; memory never below the
//     recent peak working set plus headroom.
//   - Stability: a hysteresis band around the current request, a
//     stabilization window before any shrink, bounded shrink steps, a
//     sliding-hour bound on resizes per pod with a reserve kept for grows,
//     and backoff after failed resizes.
//   - Outcomes: Pod.Feedback takes resize.Outcome. Deferred and Infeasible
//     cap later targets at what fitted; Error, InProgress, Rejected and
//     Timeout back off and are never remembered as caps.
//   - Per-workload learning: Aggregate merges pods' snapshots and seeds new
//     pods, so a new pod starts from its workload's history while each pod
//     is still sized on its own (a hot replica gets more than its siblings).
//
// It does not read cgroups (internal/cgroup does), plan or send patches
// (internal/resize and the agent do), or store checkpoints (the controller
// does). docs/recommend.md gives the math and the reasons for each default.
//
// Typical use, in the agent's per-second loop for one pod:
//
//	pod, _ := recommend.NewPod(recommend.DefaultConfig())
//	c, _ := pod.AddContainer("app", recommend.Bounds{}, workloadSeed)
//	...
//	d := c.Observe(now, cgroup.Rate(prev, cur), current)
//	if d.Resize() {
//		// plan with resize.NewPlan (Target = d.CPU.Request, d.Memory.Request),
//		// send, then:
//		pod.Sent(now)
//	}
//	...
//	pod.Feedback(now, recommend.Feedback{Outcome: outcome})
package recommend
