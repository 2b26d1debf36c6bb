package experiment

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DeferredResult is experiment 3: a resize that does not fit beside a
// filler pod, and completes by itself once the filler is gone.
type DeferredResult struct {
	Run
	// NodeAllocatableCPU is the node's allocatable cpu, e.g. 2.
	NodeAllocatableCPU string
	// FillerCPU is the filler's cpu request; FromCPU and ToCPU the test
	// pod's cpu (requests and limits, so it stays Guaranteed).
	FillerCPU, FromCPU, ToCPU string
	Before                    PodState
	Patch                     PatchOutcome
	// Deferred is the first version with PodResizePending reason Deferred.
	Deferred PodState
	// Held is the last version seen before the filler's deletion was sent:
	// desired and actual still differ.
	Held PodState
	// FillerDeleted is when the filler's deletion was sent, FillerGone
	// when the pod object disappeared.
	FillerDeleted, FillerGone time.Time
	// Completed is the first version where the resize settled.
	Completed                   PodState
	CgroupsBefore, CgroupsAfter *Cgroups
	Events                      []Event
}

// PatchToDeferred is the time from the patch to the Deferred condition.
func (r *DeferredResult) PatchToDeferred() time.Duration { return r.Deferred.At.Sub(r.Patch.Sent) }

// DeleteToCompleted is the time from the filler's deletion to the resize
// settling.
func (r *DeferredResult) DeleteToCompleted() time.Duration {
	return r.Completed.At.Sub(r.FillerDeleted)
}

// Deferred runs experiment 3: the report's test pod (cpu 250m, Guaranteed)
// beside a filler requesting 1400m, on a node sized like the lab's
// (2000m allocatable); the test pod is resized to 700m, requests and
// limits together so that it stays Guaranteed and its cgroup quota shows
// when the resize really happens. Then the filler is deleted. On an
// Env.Node of another size the three are the same shares of its
// allocatable cpu (12.5 %, 70 %, 35 %). The result is never nil.
func Deferred(ctx context.Context, env Env) (res *DeferredResult, err error) {
	res = &DeferredResult{FillerCPU: "1400m", FromCPU: "250m", ToCPU: "700m"}
	s, err := begin(ctx, env, "deferred resize", "snug-deferred-")
	defer func() { res.Run = *s.run }()
	if err != nil {
		return res, err
	}
	defer s.end(ctx, &err)
	if env.Node != "" {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, env.Node, metav1.GetOptions{})
		if err != nil {
			return res, fmt.Errorf("reading node %s: %w", env.Node, err)
		}
		res.FromCPU, res.FillerCPU, res.ToCPU = deferredSizes(n.Status.Allocatable.Cpu().MilliValue())
	}

	w, st, err := s.createRunning(ctx, markerPod("resize-cpu-test", res.FromCPU, "128Mi"))
	if err != nil {
		return res, err
	}
	defer w.stop()
	if res.NodeAllocatableCPU, err = s.allocatableCPU(ctx, w.name); err != nil {
		return res, err
	}
	fw, _, err := s.createRunning(ctx, fillerPod("filler", res.FillerCPU))
	if err != nil {
		return res, err
	}
	defer fw.stop()
	if res.CgroupsBefore, err = s.readCgroups(st); err != nil {
		return res, err
	}

	s.start()
	from := w.mark()
	res.Before = w.latest()
	if res.Patch, err = s.patchResize(ctx, w, types.JSONPatchType, cpuPatch(res.ToCPU)); err != nil {
		return res, err
	}
	if err = res.Patch.mustAccept(); err != nil {
		return res, err
	}
	res.Deferred, from, err = s.await(ctx, w, from, "the kubelet deferred the resize", func(st PodState) bool {
		c, ok := st.Condition(corev1.PodResizePending)
		return ok && c.Reason == corev1.PodReasonDeferred
	})
	if err != nil {
		return res, err
	}

	res.Held = w.latest()
	s.hold()
	res.FillerDeleted = s.env.now()
	s.step("filler pod deletion sent", PodState{At: res.FillerDeleted}, "")
	if err = s.env.Client.CoreV1().Pods(s.run.Namespace).Delete(ctx, fw.name, metav1.DeleteOptions{}); err != nil {
		s.release()
		return res, fmt.Errorf("deleting the filler pod: %w", err)
	}
	want := resource.MustParse(res.ToCPU)
	res.Completed, _, err = s.await(ctx, w, from, "resize completed by itself", func(st PodState) bool {
		return st.Desired.CPULimit.Cmp(want) == 0 && st.Settled()
	})
	if err != nil {
		s.release()
		return res, err
	}
	res.FillerGone, err = fw.untilGone(ctx, s.env.timeout())
	if err == nil {
		s.step("filler pod gone", PodState{At: res.FillerGone}, "")
	}
	s.release()
	if err != nil {
		return res, err
	}
	if res.CgroupsAfter, err = s.waitCgroups(ctx, res.Completed, 5*time.Second, func(c *Cgroups) bool {
		return c.Container.CPUQuotaMicros == quotaFor(res.ToCPU)
	}); err != nil {
		return res, err
	}
	res.Events, err = s.podEvents(ctx, w.name, "ResizeDeferred", "ResizeCompleted")
	return res, err
}

// InfeasibleResult is experiment 4: a resize above the node's allocatable.
type InfeasibleResult struct {
	Run
	NodeAllocatableCPU string
	FromCPU, ToCPU     string
	Before             PodState
	// Patch is the resize to ToCPU. Since Kubernetes 1.36 the API server's
	// PodResizeValidator admission plugin rejects it (Patch.Rejected);
	// before, the API server accepts it and the kubelet answers.
	Patch PatchOutcome
	// Pending is the first version with a PodResizePending condition, nil
	// when the patch was rejected.
	Pending *PodState
	// Revert is the patch back to FromCPU, sent only when Pending is set;
	// Cleared is the version where the pod settled on FromCPU again.
	Revert  *PatchOutcome
	Cleared *PodState
	// After is the pod at the end.
	After  PodState
	Events []Event
}

// Outcome is "Rejected" when the API server refused the patch, else the
// reason of the PodResizePending condition (Infeasible, Deferred).
func (r *InfeasibleResult) Outcome() string {
	switch {
	case r.Patch.Rejected != nil:
		return "Rejected"
	case r.Pending != nil:
		c, _ := r.Pending.Condition(corev1.PodResizePending)
		return c.Reason
	}
	return ""
}

// Infeasible runs experiment 4: the report's test pod resized to 2500m,
// above the allocatable 2000m of a node like the lab's; then, if the API
// server let the patch through, back to 250m. The result is never nil.
func Infeasible(ctx context.Context, env Env) (res *InfeasibleResult, err error) {
	res = &InfeasibleResult{FromCPU: "250m", ToCPU: "2500m"}
	s, err := begin(ctx, env, "infeasible resize", "snug-infeasible-")
	defer func() { res.Run = *s.run }()
	if err != nil {
		return res, err
	}
	defer s.end(ctx, &err)

	w, _, err := s.createRunning(ctx, markerPod("resize-cpu-test", res.FromCPU, "128Mi"))
	if err != nil {
		return res, err
	}
	defer w.stop()
	if res.NodeAllocatableCPU, err = s.allocatableCPU(ctx, w.name); err != nil {
		return res, err
	}

	s.start()
	from := w.mark()
	res.Before = w.latest()
	if res.Patch, err = s.patchResize(ctx, w, types.JSONPatchType, cpuPatch(res.ToCPU)); err != nil {
		return res, err
	}
	if res.Patch.Rejected != nil {
		res.After, err = s.getState(ctx, w.name)
		if err == nil {
			res.Events, err = s.podEvents(ctx, w.name)
		}
		return res, err
	}
	pending, from, err := s.await(ctx, w, from, "the kubelet answered with PodResizePending", func(st PodState) bool {
		_, ok := st.Condition(corev1.PodResizePending)
		return ok
	})
	if err != nil {
		return res, err
	}
	res.Pending = &pending

	revert, err := s.patchResize(ctx, w, types.JSONPatchType, cpuPatch(res.FromCPU))
	res.Revert = &revert
	if err != nil {
		return res, err
	}
	if err = revert.mustAccept(); err != nil {
		return res, err
	}
	old := resource.MustParse(res.FromCPU)
	cleared, _, err := s.await(ctx, w, from, "pending condition cleared", func(st PodState) bool {
		return st.Desired.CPULimit.Cmp(old) == 0 && st.Settled()
	})
	if err != nil {
		return res, err
	}
	res.Cleared = &cleared
	res.After = w.latest()
	res.Events, err = s.podEvents(ctx, w.name, "Resize"+res.Outcome())
	return res, err
}

// deferredSizes are experiment 3's test pod, filler and target cpu for a
// node with allocatable millicores: the report's 250m, 1400m and 700m of
// 2000m, in the same shares.
func deferredSizes(allocatable int64) (from, filler, to string) {
	m := func(share float64) string { return fmt.Sprintf("%dm", int64(float64(allocatable)*share)) }
	return m(0.125), m(0.7), m(0.35)
}

// allocatableCPU is the allocatable cpu of the node the pod runs on.
func (s *session) allocatableCPU(ctx context.Context, pod string) (string, error) {
	p, err := s.env.Client.CoreV1().Pods(s.run.Namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading pod %s: %w", pod, err)
	}
	n, err := s.env.Client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading node %s: %w", p.Spec.NodeName, err)
	}
	q := n.Status.Allocatable[corev1.ResourceCPU]
	return q.String(), nil
}

// getState reads the pod afresh.
func (s *session) getState(ctx context.Context, pod string) (PodState, error) {
	p, err := s.env.Client.CoreV1().Pods(s.run.Namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return PodState{}, fmt.Errorf("reading pod %s: %w", pod, err)
	}
	return stateOf(p, s.env.now()), nil
}
