package experiment

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// MemoryRestartResult is experiment 2: memory resized with resizePolicy
// RestartContainer.
type MemoryRestartResult struct {
	Run
	FromMemory, ToMemory string
	// Before is the pod just before the patch, After the first version
	// with the restarted container running on the new resources.
	Before, After PodState
	Patch         PatchOutcome
	// MarkerBefore and MarkerAfter are /tmp/marker; the marker holds a
	// random value written at container start, so a restarted container's
	// marker differs.
	MarkerBefore, MarkerAfter string
	// CgroupsAfter is read from the host once the resize settled.
	CgroupsAfter *Cgroups
	Events       []Event
}

// PatchToRunning is the time from sending the patch to the restarted
// container running with the new resources.
func (r *MemoryRestartResult) PatchToRunning() time.Duration { return r.After.At.Sub(r.Patch.Sent) }

// MemoryRestart runs experiment 2: a pod with restartPolicy Always, cpu
// NotRequired and memory RestartContainer, memory 128Mi -> 256Mi
// (requests and limits). The result is never nil.
func MemoryRestart(ctx context.Context, env Env) (res *MemoryRestartResult, err error) {
	res = &MemoryRestartResult{FromMemory: "128Mi", ToMemory: "256Mi"}
	s, err := begin(ctx, env, "memory resize (RestartContainer)", "snug-mem-restart-")
	defer func() { res.Run = *s.run }()
	if err != nil {
		return res, err
	}
	defer s.end(ctx, &err)

	spec := markerPod("resize-mem-restart", "250m", res.FromMemory)
	spec.memPolicy = corev1.RestartContainer
	spec.restartPolicy = corev1.RestartPolicyAlways
	w, _, err := s.createRunning(ctx, spec)
	if err != nil {
		return res, err
	}
	defer w.stop()
	if res.MarkerBefore, err = s.readMarker(ctx, w.name); err != nil {
		return res, err
	}

	s.start()
	from := w.mark()
	res.Before = w.latest()
	if res.Patch, err = s.patchResize(ctx, w, types.JSONPatchType, memoryPatch(res.ToMemory)); err != nil {
		return res, err
	}
	if err = res.Patch.mustAccept(); err != nil {
		return res, err
	}
	want := resource.MustParse(res.ToMemory)
	res.After, _, err = s.await(ctx, w, from, "restarted container runs with the new memory", func(st PodState) bool {
		return st.Desired.MemoryLimit.Cmp(want) == 0 && st.RestartCount > res.Before.RestartCount && running(st) && st.Settled()
	})
	if err != nil {
		return res, err
	}
	if res.CgroupsAfter, err = s.waitCgroups(ctx, res.After, 5*time.Second, func(c *Cgroups) bool {
		return c.Container.MemoryLimitBytes == want.Value()
	}); err != nil {
		return res, err
	}
	if res.MarkerAfter, err = s.readMarker(ctx, w.name); err != nil {
		return res, err
	}
	res.Events, err = s.podEvents(ctx, w.name, "ResizeCompleted")
	return res, err
}

// MemoryDecreaseResult is experiment 6: a memory limit lowered below, then
// above, what the container uses.
type MemoryDecreaseResult struct {
	Run
	// HeldMemory is what snug-load holds; FromMemory the starting requests
	// and limits; BelowMemory and AboveMemory the two targets.
	HeldMemory, FromMemory, BelowMemory, AboveMemory string
	// UsageBytes is the container's memory usage just before the first
	// patch (host cgroup, or read inside the container by exec).
	UsageBytes uint64
	// KubeletUsage is the same as the kubelet's stats summary reported it
	// just before the first patch.
	KubeletUsage KubeletUsage
	Before       PodState
	// Below is the patch to BelowMemory; BelowSeen the first version that
	// shows what the kubelet made of it: PodResizeInProgress with reason
	// Error, PodResizePending, the new limit applied, or a restart.
	Below     PatchOutcome
	BelowSeen PodState
	// BelowCgroups is read when BelowSeen arrived.
	BelowCgroups *Cgroups
	// Above is the patch to AboveMemory; AboveSettled the version where it
	// was applied.
	Above        PatchOutcome
	AboveSettled PodState
	AboveCgroups *Cgroups
	Events       []Event
}

// MemoryDecrease runs experiment 6: snug-load holds HeldMemory in a
// Guaranteed pod with memory 256Mi (requests and limits, resizePolicy
// NotRequired, restartPolicy Always). The limit is lowered below usage
// (64Mi), and what the pod then says is recorded; then it is set above
// usage (200Mi). The result is never nil.
func MemoryDecrease(ctx context.Context, env Env) (res *MemoryDecreaseResult, err error) {
	res = &MemoryDecreaseResult{HeldMemory: "100Mi", FromMemory: "256Mi", BelowMemory: "64Mi", AboveMemory: "200Mi"}
	s, err := begin(ctx, env, "memory limit decrease", "snug-mem-decrease-")
	defer func() { res.Run = *s.run }()
	if err != nil {
		return res, err
	}
	defer s.end(ctx, &err)

	spec := podSpec{
		name: "resize-mem-decrease", image: LoadImage,
		args:       []string{"--memory=" + res.HeldMemory, "--listen="},
		cpuRequest: "100m", cpuLimit: "100m", memRequest: res.FromMemory, memLimit: res.FromMemory,
		cpuPolicy: corev1.NotRequired, memPolicy: corev1.NotRequired,
		restartPolicy: corev1.RestartPolicyAlways,
	}
	w, st, err := s.createRunning(ctx, spec)
	if err != nil {
		return res, err
	}
	defer w.stop()
	held := uint64(bytesOf(res.HeldMemory))
	err = s.pollFor(ctx, "snug-load to hold "+res.HeldMemory, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		u, err := s.memoryUsage(ctx, st)
		res.UsageBytes = u
		return u >= held, err
	})
	if err != nil {
		return res, err
	}
	// The kubelet checks a decrease against its own statistics, which
	// lag: wait until they show the memory held, pod and container both,
	// so that the check sees what the cgroup holds.
	err = s.pollFor(ctx, "the kubelet's statistics to show "+res.HeldMemory+" held", 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		u, err := s.kubeletUsage(ctx, st)
		res.KubeletUsage = u
		return u.HasPodBytes && u.HasContainerBytes && u.PodBytes >= held && u.ContainerBytes >= held, err
	})
	if err != nil {
		return res, fmt.Errorf("%w (last: pod %s, container %s)", err,
			formatBytes(res.KubeletUsage.PodBytes), formatBytes(res.KubeletUsage.ContainerBytes))
	}
	s.step(fmt.Sprintf("container uses %s (kubelet's statistics: pod %s, container %s)", formatBytes(res.UsageBytes),
		formatBytes(res.KubeletUsage.PodBytes), formatBytes(res.KubeletUsage.ContainerBytes)), w.latest(), "")

	s.start()
	from := w.mark()
	res.Before = w.latest()
	if res.Below, err = s.patchResize(ctx, w, types.JSONPatchType, memoryPatch(res.BelowMemory)); err != nil {
		return res, err
	}
	if err = res.Below.mustAccept(); err != nil {
		return res, err
	}
	below := resource.MustParse(res.BelowMemory)
	res.BelowSeen, from, err = s.await(ctx, w, from, "the kubelet's answer to the decrease", func(st PodState) bool {
		if c, ok := st.Condition(corev1.PodResizeInProgress); ok && c.Reason == corev1.PodReasonError {
			return true
		}
		if _, ok := st.Condition(corev1.PodResizePending); ok {
			return true
		}
		applied := st.Desired.MemoryLimit.Cmp(below) == 0 && st.Settled()
		return applied || st.RestartCount > res.Before.RestartCount
	})
	if err != nil {
		return res, err
	}
	if res.BelowCgroups, err = s.readCgroups(res.BelowSeen); err != nil {
		return res, err
	}

	if res.Above, err = s.patchResize(ctx, w, types.JSONPatchType, memoryPatch(res.AboveMemory)); err != nil {
		return res, err
	}
	if err = res.Above.mustAccept(); err != nil {
		return res, err
	}
	above := resource.MustParse(res.AboveMemory)
	res.AboveSettled, _, err = s.await(ctx, w, from, "the raised limit applied", func(st PodState) bool {
		return st.Desired.MemoryLimit.Cmp(above) == 0 && st.Settled()
	})
	if err != nil {
		return res, err
	}
	if res.AboveCgroups, err = s.waitCgroups(ctx, res.AboveSettled, 5*time.Second, func(c *Cgroups) bool {
		return c.Container.MemoryLimitBytes == above.Value()
	}); err != nil {
		return res, err
	}
	res.Events, err = s.podEvents(ctx, w.name, "ResizeCompleted")
	return res, err
}

// memoryUsage reads the container's memory usage from the host's cgroups,
// or, without a CgroupRoot, from inside the container (v2 memory.current,
// else v1 memory.usage_in_bytes).
func (s *session) memoryUsage(ctx context.Context, st PodState) (uint64, error) {
	if s.env.CgroupRoot != "" {
		c, err := s.readCgroups(st)
		if err != nil {
			return 0, err
		}
		return c.Container.MemoryUsageBytes, nil
	}
	out, err := s.exec(ctx, st.Name, "sh", "-c", "cat /sys/fs/cgroup/memory.current 2>/dev/null || cat /sys/fs/cgroup/memory/memory.usage_in_bytes")
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(out), 10, 64)
}

// formatBytes is n in MiB, e.g. "104.6Mi".
func formatBytes(n uint64) string { return fmt.Sprintf("%.1fMi", float64(n)/(1<<20)) }
