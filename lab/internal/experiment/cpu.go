package experiment

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// CPUResizeResult is experiment 1: a Guaranteed pod's cpu resized from
// FromCPU to ToCPU (requests and limits) with resizePolicy NotRequired.
type CPUResizeResult struct {
	Run
	FromCPU, ToCPU string
	// Before is the pod just before the patch; StatusMatched the first
	// version whose status resources equal the new spec; After the last
	// version seen once the resize settled.
	Before, StatusMatched, After PodState
	// Patch is the JSON patch to the resize subresource.
	Patch PatchOutcome
	// MarkerBefore and MarkerAfter are /tmp/marker read with kubectl exec.
	MarkerBefore, MarkerAfter string
	// CgroupsBefore and CgroupsAfter are read from the host; nil without
	// Env.CgroupRoot.
	CgroupsBefore, CgroupsAfter *Cgroups
	// Events are the pod's events (ResizeStarted, ResizeCompleted, ...).
	Events []Event
}

// PatchToStatus is the time from sending the patch to the status showing
// the new resources.
func (r *CPUResizeResult) PatchToStatus() time.Duration {
	return r.StatusMatched.At.Sub(r.Patch.Sent)
}

// CPUResize runs experiment 1: the report's pod (busybox writing
// /tmp/marker, cpu 250m memory 128Mi, Guaranteed), resized to cpu 500m by
// a JSON patch of requests and limits to the resize subresource. It
// records restarts, the container ID, the marker, the cgroup CPU quota and
// the time from patch to status. The result is never nil.
func CPUResize(ctx context.Context, env Env) (res *CPUResizeResult, err error) {
	res = &CPUResizeResult{FromCPU: "250m", ToCPU: "500m"}
	s, err := begin(ctx, env, "cpu resize (NotRequired)", "snug-cpu-resize-")
	defer func() { res.Run = *s.run }()
	if err != nil {
		return res, err
	}
	defer s.end(ctx, &err)

	w, st, err := s.createRunning(ctx, markerPod("resize-cpu-test", res.FromCPU, "128Mi"))
	if err != nil {
		return res, err
	}
	defer w.stop()
	if res.MarkerBefore, err = s.readMarker(ctx, w.name); err != nil {
		return res, err
	}
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
	want := resource.MustParse(res.ToCPU)
	res.StatusMatched, from, err = s.await(ctx, w, from, "status resources match the spec", func(st PodState) bool {
		return st.Desired.CPULimit.Cmp(want) == 0 && st.HasActual && st.Actual.Equal(st.Desired)
	})
	if err != nil {
		return res, err
	}
	res.After = res.StatusMatched
	if !res.StatusMatched.Settled() {
		if res.After, _, err = s.await(ctx, w, from, "resize settled", PodState.Settled); err != nil {
			return res, err
		}
	}
	if res.CgroupsAfter, err = s.waitCgroups(ctx, res.After, 5*time.Second, func(c *Cgroups) bool {
		return c.Container.CPUQuotaMicros == quotaFor(res.ToCPU)
	}); err != nil {
		return res, err
	}
	if res.MarkerAfter, err = s.readMarker(ctx, w.name); err != nil {
		return res, err
	}
	res.After = w.latest()
	res.Events, err = s.podEvents(ctx, w.name, "ResizeCompleted")
	return res, err
}

// readMarker reads /tmp/marker in the pod's container.
func (s *session) readMarker(ctx context.Context, pod string) (string, error) {
	out, err := s.exec(ctx, pod, "cat", "/tmp/marker")
	return strings.TrimSpace(out), err
}
