package policy

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// The pod conditions of a restart window (docs/agent.md, "Restart
// windows"). The agent asks, the controller grants; each writes only its
// own.
const (
	// ConditionRestartWanted is True while the agent wants to restart a
	// container of the pod to apply a change to a RestartContainer
	// resource; its message names the change. The agent sets it False once
	// the restarted container is Ready, or when the change is no longer
	// wanted.
	ConditionRestartWanted = v1alpha1.PodConditionRestartWanted
	// ConditionRestartGranted is True while the controller lets the agent
	// restart the pod's container: at most one pod of a policy at a time.
	ConditionRestartGranted = v1alpha1.PodConditionRestartGranted
)

// RestartGrantTTL is how long a grant the agent does not close stays: a
// window whose restart never came (the agent restarted, the resize was
// deferred) is taken back, and the policy's next pod may have one.
const RestartGrantTTL = 5 * time.Minute

// The restart window's defaults (api/v1alpha1 RestartWindow; checked
// against the CRD by TestRestartWindowDefaultsMatchCRD).
const (
	DefaultRestartMinIntervalSeconds int32 = 3600
	DefaultRestartMinShrinkPercent   int32 = 20
)

// RestartWindow is updatePolicy.restartWindow with its defaults applied.
type RestartWindow struct {
	SingleReplica bool
	// MinInterval is the least time between two restarts of one container,
	// counted from its last start.
	MinInterval time.Duration
	// MinShrinkPercent is the least share of the limit a shrink takes off
	// to be worth a restart.
	MinShrinkPercent int32
}

// RestartWindowOf reads p's restart window: ok is false when p has none, or
// its mode resizes no pod in place (Off, Initial).
func RestartWindowOf(p *v1alpha1.SnugPolicy) (w RestartWindow, ok bool) {
	u := p.Spec.UpdatePolicy
	if u == nil || u.RestartWindow == nil || !Actuates(UpdateMode(p)) {
		return RestartWindow{}, false
	}
	rw := u.RestartWindow
	return RestartWindow{
		SingleReplica:    rw.SingleReplica,
		MinInterval:      time.Duration(orDefault32(rw.MinIntervalSeconds, DefaultRestartMinIntervalSeconds)) * time.Second,
		MinShrinkPercent: orDefault32(rw.MinShrinkPercent, DefaultRestartMinShrinkPercent),
	}, true
}

func orDefault32(v *int32, def int32) int32 {
	if v == nil {
		return def
	}
	return *v
}

// Worth reports whether a change of a limit from cur to next is worth a
// restart: any grow is (the container is starved or near an OOM kill at
// its size), a shrink when it takes at least MinShrinkPercent of cur off.
// A container without a limit (0) compares requests the same way.
func (w RestartWindow) Worth(cur, next int64) bool {
	switch {
	case next > cur:
		return true
	case next == cur || cur <= 0:
		return false
	}
	return (cur-next)*100 >= int64(w.MinShrinkPercent)*cur
}

// PodCondition returns pod's condition of type t, nil when it has none.
func PodCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// PodConditionTrue reports whether pod's condition of type t is True.
func PodConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	c := PodCondition(pod, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// RestartResizePending reports whether the pod's regular container named
// container has a resize of a RestartContainer resource that the kubelet
// has not applied: spec and status (requests or limits) differ for it.
// The kubelet may still apply it, restarting the container. A container
// whose status shows no resources has none pending.
func RestartResizePending(pod *corev1.Pod, container string) bool {
	var spec *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == container {
			spec = &pod.Spec.Containers[i]
		}
	}
	var status *corev1.ContainerStatus
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == container {
			status = &pod.Status.ContainerStatuses[i]
		}
	}
	if spec == nil || status == nil || status.Resources == nil {
		return false
	}
	for _, rp := range spec.ResizePolicy {
		if rp.RestartPolicy != corev1.RestartContainer {
			continue
		}
		for _, pair := range [2][2]corev1.ResourceList{{spec.Resources.Requests, status.Resources.Requests}, {spec.Resources.Limits, status.Resources.Limits}} {
			a, b := pair[0][rp.ResourceName], pair[1][rp.ResourceName]
			if a.Cmp(b) != 0 {
				return true
			}
		}
	}
	return false
}
