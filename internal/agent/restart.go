package agent

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/internal/recommend"
)

// restartPolicy is the container's resizePolicy for res: the API's
// default, NotRequired, unless the container says RestartContainer.
func restartPolicy(pod *corev1.Pod, container string, res corev1.ResourceName) corev1.ResourceResizeRestartPolicy {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if c.Name != container {
			continue
		}
		for _, p := range c.ResizePolicy {
			if p.ResourceName == res {
				return p.RestartPolicy
			}
		}
	}
	return corev1.NotRequired
}

// holdRestarting holds the changes of dec whose resource the container
// declares RestartContainer: the kubelet would restart the container to
// apply them, and snug resizes in place only (restart windows,
// docs/design/restart-windows.md, are not built yet). The other resource
// is decided as usual: a JVM's memory is RestartContainer, its CPU is not,
// and before this hold the planner refused the pair and the CPU went
// unresized too. A held change keeps what it wanted in its reason. It
// reports whether it held anything.
func holdRestarting(pod *corev1.Pod, container string, dec recommend.Decision, actual recommend.Resources) (recommend.Decision, bool) {
	held := false
	if dec.CPU.Action != recommend.Hold && restartPolicy(pod, container, corev1.ResourceCPU) == corev1.RestartContainer {
		dec.CPU = restartHold(dec.CPU, false, actual.CPURequestMillis, actual.CPULimitMillis)
		held = true
	}
	if dec.Memory.Action != recommend.Hold && restartPolicy(pod, container, corev1.ResourceMemory) == corev1.RestartContainer {
		dec.Memory = restartHold(dec.Memory, true, actual.MemRequestBytes, actual.MemLimitBytes)
		held = true
	}
	return dec, held
}

// restartHold is ch held at the actual request and limit, for
// RestartRequired, with the request it wanted.
func restartHold(ch recommend.Change, memory bool, request, limit int64) recommend.Change {
	return recommend.Change{Action: recommend.Hold, Request: request, Limit: limit,
		Reason: recommend.Reason{Why: recommend.WhyRestartRequired, Memory: memory, Value: ch.Request, Request: request}}
}

// saidRestartRequired tells once per container instance, in an event and
// the log, that a change it wanted was held because it would restart the
// container: a Warning when a grow was held (the container may be starved
// or OOM-killed at its size), Normal for a shrink.
func (d *Decider) saidRestartRequired(pod *corev1.Pod, cs *containerState, ref ContainerRef, wanted, held recommend.Decision) {
	if cs.restartHeldID == ref.ContainerID {
		return
	}
	cs.restartHeldID = ref.ContainerID
	typ := corev1.EventTypeNormal
	var what []string
	for _, c := range [][2]recommend.Change{{wanted.CPU, held.CPU}, {wanted.Memory, held.Memory}} {
		if c[1].Reason.Why != recommend.WhyRestartRequired {
			continue
		}
		if c[0].Action == recommend.Grow {
			typ = corev1.EventTypeWarning
		}
		what = append(what, fmt.Sprintf("%s (%s: %s)", c[1].Reason, c[0].Action, c[0].Reason))
	}
	msg := fmt.Sprintf("snug leaves %s of container %s as it is, as it resizes in place only: %s", restartResources(held), ref.Container, strings.Join(what, "; "))
	d.containerLog(context.Background(), pod, ref.Container).Info("change held: the container's resizePolicy is RestartContainer", "held", strings.Join(what, "; "))
	d.event(pod, typ, ReasonRestartRequired, msg)
}

// restartResources names the resources dec holds for RestartRequired.
func restartResources(dec recommend.Decision) string {
	var rs []string
	if dec.CPU.Reason.Why == recommend.WhyRestartRequired {
		rs = append(rs, "cpu")
	}
	if dec.Memory.Reason.Why == recommend.WhyRestartRequired {
		rs = append(rs, "memory")
	}
	return strings.Join(rs, " and ")
}
