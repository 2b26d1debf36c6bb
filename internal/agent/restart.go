package agent

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
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
func (d *Decider) saidRestartRequired(pod *corev1.Pod, st *podState, cs *containerState, ref ContainerRef, wanted, held recommend.Decision) {
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
	msg := fmt.Sprintf("snug leaves %s of container %s as it is for now: %s", restartResources(held), ref.Container, strings.Join(what, "; "))
	switch w, ok := policy.RestartWindowOf(st.pol); {
	case cs.restartWant != "":
		msg += "; it asks the controller for a restart window (pod condition " + string(policy.ConditionRestartWanted) + ")"
	case ok:
		msg += fmt.Sprintf("; the policy's restart window is for a change worth a restart (a grow, or a shrink of %d%% or more) of a container Ready and running for %s, or restarted by an OOM kill", w.MinShrinkPercent, w.MinInterval)
	default:
		msg += "; a policy with updatePolicy.restartWindow lets snug restart it to resize, at a safe moment"
	}
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

// Reasons of the pod condition policy.ConditionRestartWanted.
const (
	reasonRestartWanted     = "ResizeNeedsRestart"
	reasonRestartNotWanted  = "NotWanted"
	reasonRestartedToResize = v1alpha1.PodReasonRestarted
)

// restartGoes decides a held change's fate under the policy's restart
// window (docs/agent.md, "Restart windows"). It records in cs.restartWant
// which of the container's resources would change with a restart, which
// the pod's RestartWanted condition follows (handleRestart), and reports
// whether the change goes out now: the controller granted the pod a window
// (RestartGranted True) and no restarting resize was sent yet for this
// container instance.
//
// A container asks when the policy has a window, the change is worth a
// restart (RestartWindow.Worth on the limit, or the request without one),
// and the container is past its start-up: Ready and running for the
// window's minimum interval. A container that runs because its last
// instance was OOM-killed asks at once: the kill already cost the restart,
// and the window makes the next start the last at this size.
func (d *Decider) restartGoes(st *podState, cs *containerState, pod *corev1.Pod, ref ContainerRef, status *corev1.ContainerStatus, dec recommend.Decision, actual recommend.Resources, now time.Time) bool {
	cs.restartWant = ""
	w, ok := policy.RestartWindowOf(st.pol)
	if !ok || !st.actuates() || status == nil || status.State.Running == nil {
		return false
	}
	if cs.oomInstance != ref.ContainerID && (!status.Ready || now.Sub(status.State.Running.StartedAt.Time) < w.MinInterval) {
		return false
	}
	var res []string
	if dec.CPU.Action != recommend.Hold && restartPolicy(pod, ref.Container, corev1.ResourceCPU) == corev1.RestartContainer &&
		w.Worth(limitOr(actual.CPULimitMillis, actual.CPURequestMillis), limitOr(dec.CPU.Limit, dec.CPU.Request)) {
		res = append(res, "cpu")
	}
	if dec.Memory.Action != recommend.Hold && restartPolicy(pod, ref.Container, corev1.ResourceMemory) == corev1.RestartContainer &&
		w.Worth(limitOr(actual.MemLimitBytes, actual.MemRequestBytes), limitOr(dec.Memory.Limit, dec.Memory.Request)) {
		res = append(res, "memory")
	}
	if len(res) == 0 {
		return false
	}
	cs.restartWant = ref.Container + " (" + strings.Join(res, ", ") + ")"
	return cs.restartSentID != ref.ContainerID && policy.PodConditionTrue(pod, policy.ConditionRestartGranted)
}

// sizeForRestart sizes a grow that goes out in a restart window to last: a
// restart is paid once, so a RestartContainer resource grows to at least
// the recommender's target (which has the headroom), not only to the fast
// path's step (a near-limit grow is x1.5 of the limit), which the
// baseline would otherwise follow with a second restart a minimum interval
// later. The limit keeps its ratio to the request.
func sizeForRestart(pod *corev1.Pod, container string, dec recommend.Decision, rec recommend.Recommendation, actual recommend.Resources) recommend.Decision {
	grow := func(ch recommend.Change, target, req, lim int64) recommend.Change {
		if ch.Action != recommend.Grow || target <= ch.Request {
			return ch
		}
		ch.Request = target
		if req > 0 && lim > 0 {
			ch.Limit = int64(math.Ceil(float64(target) * float64(lim) / float64(req)))
		}
		return ch
	}
	if restartPolicy(pod, container, corev1.ResourceCPU) == corev1.RestartContainer {
		dec.CPU = grow(dec.CPU, rec.CPU.Target, actual.CPURequestMillis, actual.CPULimitMillis)
	}
	if restartPolicy(pod, container, corev1.ResourceMemory) == corev1.RestartContainer {
		dec.Memory = grow(dec.Memory, rec.Memory.Target, actual.MemRequestBytes, actual.MemLimitBytes)
	}
	return dec
}

// limitOr is limit, or request for a container without one.
func limitOr(limit, request int64) int64 {
	if limit > 0 {
		return limit
	}
	return request
}

// handleRestart keeps the pod's RestartWanted condition with what its
// containers want (restartGoes), and ends a restart the agent sent: once
// the container runs again as a new instance and is Ready, it no longer
// wants one (its start is the new minimum interval's beginning), and the
// controller, seeing the condition False, closes the window. A window
// that closed before the restart came (the controller took it back) lets
// the container ask again. It writes nothing for a pod whose policy has
// no window and that never asked.
func (d *Decider) handleRestart(ctx context.Context, log logr.Logger, st *podState, pod *corev1.Pod) {
	if _, ok := policy.RestartWindowOf(st.pol); !ok && st.restartCond.status == "" && !policy.PodConditionTrue(pod, policy.ConditionRestartWanted) {
		return
	}
	granted := policy.PodConditionTrue(pod, policy.ConditionRestartGranted)
	var wants []string
	restarted := false
	for _, name := range sortedNames(st.containers) {
		cs := st.containers[name]
		if cs.restartSentID != "" {
			status := containerStatus(pod, name)
			switch {
			case status != nil && status.ContainerID != cs.restartSentID && status.Ready:
				log.Info("container restarted to resize", "pod", st.ns+"/"+st.name, "container", name)
				d.metrics.restartResizes.WithLabelValues(st.ns, policyName(st.policy), "Restarted").Inc()
				cs.restartSentID, cs.restartWant, restarted = "", "", true
			case !granted:
				// The window closed without the restart: ask again.
				cs.restartSentID = ""
			default:
				wants = append(wants, name+" (restarting)")
				continue
			}
		}
		if cs.restartWant != "" {
			wants = append(wants, cs.restartWant)
		}
	}
	c := podCondition{status: corev1.ConditionFalse, reason: reasonRestartNotWanted, message: "no container wants a restart to be resized"}
	switch {
	case len(wants) > 0:
		c = podCondition{status: corev1.ConditionTrue, reason: reasonRestartWanted, message: "resized only with a restart: " + strings.Join(wants, "; ")}
	case restarted:
		c = podCondition{status: corev1.ConditionFalse, reason: reasonRestartedToResize, message: "restarted with the new size"}
	case st.restartCond.reason == reasonRestartedToResize:
		c = st.restartCond
	}
	d.setPodCondition(ctx, log, st, pod, policy.ConditionRestartWanted, c, &st.restartCond)
}

// restartingPlan reports whether plan changes a resource that restarts its
// container (only a granted window lets such a change through, restartGoes),
// and names those changes for the event.
func restartingPlan(pod *corev1.Pod, st *podState) (names []string) {
	for _, name := range sortedNames(st.containers) {
		cs := st.containers[name]
		if (cs.last.CPU.Action != recommend.Hold && restartPolicy(pod, name, corev1.ResourceCPU) == corev1.RestartContainer) ||
			(cs.last.Memory.Action != recommend.Hold && restartPolicy(pod, name, corev1.ResourceMemory) == corev1.RestartContainer) {
			names = append(names, name)
		}
	}
	return names
}

// sortedNames are m's keys in order.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
