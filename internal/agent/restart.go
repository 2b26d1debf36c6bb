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
	"github.com/snug-dev/snug/internal/resize"
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

// holdRestarting returns dec with the changes whose resource the
// container declares RestartContainer held: the kubelet would restart the
// container to apply them, which only a usable restart window allows (the
// caller, decide.go, uses the held decision unless restartGoes, and asks
// the controller for a window). The other resource is decided as usual:
// a JVM's memory is RestartContainer, its CPU is not, and before this hold
// the planner refused the pair and the CPU went unresized too. A held
// change keeps what it wanted in its reason. It reports whether it held
// anything.
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

// restartAskHold is how long a container keeps asking for a window after
// the last sample that wanted the change: longer than what holds a change
// back for a while (the pod's hourly budget spent by in-place resizes, a
// backoff, a working set dipping under near-limit between collections), so
// that the pod's RestartWanted condition does not flap, nor lose its place
// in the controller's queue (oldest ask first).
const restartAskHold = 2 * time.Minute

// restartGrantMargin is how long before a grant expires
// (policy.RestartGrantTTL, on the controller's clock) the agent stops
// using it: a resize sent at the last moment could restart the container
// after the controller granted the policy's next pod.
const restartGrantMargin = 30 * time.Second

// Which resources a container asks a window for (containerState.restartRes).
const (
	restartCPU uint8 = 1 << iota
	restartMemory
)

// restartGoes decides a held change's fate under the policy's restart
// window (docs/agent.md, "Restart windows"). It keeps cs's ask (which
// resources would change with a restart, which the pod's RestartWanted
// condition follows, handleRestart) and reports whether the change goes
// out now: the pod's grant is usable (grantUsable) and no restarting
// resize was sent yet for this container instance.
//
// A container starts asking when the policy has a window, the change is
// worth a restart (restartWorth) and the container is past its start-up:
// Ready and running for the window's minimum interval. A container that
// runs because its last instance was OOM-killed asks at once: the kill
// already cost the restart, and the window makes the next start the last
// at this size. Once asking, it asks until the change has not been wanted
// for restartAskHold, or the instance changes.
func (d *Decider) restartGoes(st *podState, cs *containerState, pod *corev1.Pod, ref ContainerRef, status *corev1.ContainerStatus, dec recommend.Decision, actual recommend.Resources, now time.Time) bool {
	w, ok := policy.RestartWindowOf(st.pol)
	if !ok || !st.actuates() || status == nil || status.State.Running == nil {
		cs.setRestartWant(ref, 0, now)
		return false
	}
	res := restartWorth(w, pod, ref.Container, dec, actual)
	if now.Before(cs.restartQuietUntil) {
		res = 0 // a take-back's backoff: the kubelet deferred the last one
	}
	asking := cs.restartRes != 0 && cs.restartWantID == ref.ContainerID
	switch {
	case res != 0 && (asking || cs.oomInstance == ref.ContainerID ||
		(status.Ready && now.Sub(status.State.Running.StartedAt.Time) >= w.MinInterval)):
		cs.setRestartWant(ref, res, now)
	default:
		cs.restartIdle(ref, now)
	}
	return res != 0 && cs.restartRes != 0 && cs.restartSentID != ref.ContainerID && st.grantUsable(pod, now)
}

// restartWorth says which of the container's RestartContainer resources
// dec changes by enough for a restart: RestartWindow.Worth on the limit
// (the request without one) or on the request, whichever moves more, so
// that a RequestsOnly grow, whose limit stays, counts too.
func restartWorth(w policy.RestartWindow, pod *corev1.Pod, container string, dec recommend.Decision, actual recommend.Resources) uint8 {
	var res uint8
	worth := func(ch recommend.Change, req, lim int64) bool {
		return ch.Action != recommend.Hold &&
			(w.Worth(limitOr(lim, req), limitOr(ch.Limit, ch.Request)) || w.Worth(req, ch.Request))
	}
	if restartPolicy(pod, container, corev1.ResourceCPU) == corev1.RestartContainer && worth(dec.CPU, actual.CPURequestMillis, actual.CPULimitMillis) {
		res |= restartCPU
	}
	if restartPolicy(pod, container, corev1.ResourceMemory) == corev1.RestartContainer && worth(dec.Memory, actual.MemRequestBytes, actual.MemLimitBytes) {
		res |= restartMemory
	}
	return res
}

// setRestartWant records that the container instance ref asks a window
// for res at now (0: it asks for none); its message part is made only
// when what it asks for changes.
func (cs *containerState) setRestartWant(ref ContainerRef, res uint8, now time.Time) {
	if res == 0 {
		cs.restartRes, cs.restartWant, cs.restartWantID = 0, "", ""
		return
	}
	if res != cs.restartRes || cs.restartWantID != ref.ContainerID {
		var names []string
		if res&restartCPU != 0 {
			names = append(names, "cpu")
		}
		if res&restartMemory != 0 {
			names = append(names, "memory")
		}
		cs.restartRes, cs.restartWantID = res, ref.ContainerID
		cs.restartWant = ref.Container + " (" + strings.Join(names, ", ") + ")"
	}
	cs.restartWantAt = now
}

// restartIdle is a sample that wants no restarting change: an ask goes
// once nothing has wanted it for restartAskHold, or with its instance.
func (cs *containerState) restartIdle(ref ContainerRef, now time.Time) {
	if cs.restartRes != 0 && (cs.restartWantID != ref.ContainerID || now.Sub(cs.restartWantAt) >= restartAskHold) {
		cs.setRestartWant(ref, 0, now)
	}
}

// grantUsable reports whether pod holds a grant (RestartGranted True) the
// agent may still use at now: not within restartGrantMargin of its expiry,
// by the controller's time nor by the agent's own since it first saw the
// grant (the node's clock may differ from the controller's), and not spent
// (the agent said it no longer asks while the grant was shown: the
// controller closes it, and may grant the policy's next pod before this
// agent's cache shows the close).
func (st *podState) grantUsable(pod *corev1.Pod, now time.Time) bool {
	g := policy.PodCondition(pod, policy.ConditionRestartGranted)
	if g == nil || g.Status != corev1.ConditionTrue {
		return false
	}
	if at := g.LastTransitionTime.Time; !at.Equal(st.grantAt) {
		st.grantAt, st.grantSeen, st.grantSpent = at, now, false
	}
	limit := policy.RestartGrantTTL - restartGrantMargin
	return !st.grantSpent && now.Sub(st.grantAt) < limit && now.Sub(st.grantSeen) < limit
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
// containers ask for (restartGoes), and ends a restart the agent sent: once
// the container runs again as a new instance and is Ready, it no longer
// asks (its start is the new minimum interval's beginning), and the
// controller, seeing the condition False, closes the window. A window
// taken back before the restart came lets the container ask again. It
// writes nothing, and allocates nothing, for a pod none of whose
// containers asks or restarts and whose condition is not True.
//
// A restarting resize the kubelet has not applied (Deferred, say) when its
// window closed would restart the container whenever the kubelet gets to
// it, outside any window: its restarting part is taken back
// (takeBackRestart), and handleRestart reports true when that resize went
// out.
func (d *Decider) handleRestart(ctx context.Context, log logr.Logger, st *podState, pod *corev1.Pod, now time.Time) bool {
	busy := false
	for _, cs := range st.containers {
		busy = busy || cs.restartRes != 0 || cs.restartSentID != ""
	}
	if !busy && st.restartCond.status != corev1.ConditionTrue && !policy.PodConditionTrue(pod, policy.ConditionRestartWanted) {
		return false
	}
	granted := st.grantUsable(pod, now)
	var wants, takeBack []string
	restarted := false
	for _, name := range sortedNames(st.containers) {
		cs := st.containers[name]
		if cs.restartSentID != "" {
			status := containerStatus(pod, name)
			switch {
			case status != nil && status.ContainerID != cs.restartSentID && status.Ready:
				log.Info("container restarted to resize", "pod", st.ns+"/"+st.name, "container", name)
				d.metrics.restartResizes.WithLabelValues(st.ns, policyName(st.policy), "Restarted").Inc()
				cs.restartSentID, restarted = "", true
				cs.setRestartWant(ContainerRef{}, 0, now)
			case !granted && !policy.RestartResizePending(pod, name):
				// The window was taken back and nothing of the resize
				// is left to apply: the container may ask again.
				cs.restartSentID = ""
			case !granted && !restartAccepted(pod, name):
				takeBack = append(takeBack, name)
				wants = append(wants, name+" (restarting)")
				continue
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
	if c.status == corev1.ConditionFalse && policy.PodConditionTrue(pod, policy.ConditionRestartGranted) {
		// Saying it no longer asks spends the grant shown.
		st.grantSpent = true
	}
	d.setPodCondition(ctx, log, st, pod, policy.ConditionRestartWanted, c, &st.restartCond, true)
	if len(takeBack) == 0 {
		return false
	}
	// While a take-back is due, nothing else is planned for the pod (a
	// FitToNode of its deferred resize would apply the restarting part).
	if st.phase != phaseInFlight && d.sender != nil && d.takeBackRestart(ctx, log, st, pod, takeBack, now) {
		for _, name := range takeBack {
			cs := st.containers[name]
			cs.restartTakeBacks++
			cs.restartQuietUntil = now.Add(min(restartAskHold<<cs.restartTakeBacks, time.Hour))
		}
	}
	return true
}

// restartAccepted reports whether the kubelet has taken up the pod's
// resize (PodResizeInProgress True, or the container's allocated requests
// equal the spec's for a RestartContainer resource): it may be restarting
// the container now, and taking the resize back would restart it again.
func restartAccepted(pod *corev1.Pod, container string) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizeInProgress && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	spec, status := specOf(pod, container), containerStatus(pod, container)
	if spec == nil || status == nil || status.AllocatedResources == nil {
		return false
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if restartPolicy(pod, container, res) != corev1.RestartContainer {
			continue
		}
		want, ok := spec.Requests[res]
		got, has := status.AllocatedResources[res]
		if ok && has && want.Cmp(got) == 0 && !restartSameAsActual(spec, status, res) {
			return true
		}
	}
	return false
}

// restartSameAsActual reports whether the spec's request of res is the
// actual one: nothing of it to apply.
func restartSameAsActual(spec *corev1.ResourceRequirements, status *corev1.ContainerStatus, res corev1.ResourceName) bool {
	if status.Resources == nil {
		return false
	}
	a, b := spec.Requests[res], status.Resources.Requests[res]
	return a.Cmp(b) == 0
}

// deferredRestartClosed labels the resize that takes back the restarting
// part of one the kubelet had not applied when its window closed.
const deferredRestartClosed = "RestartWindowClosed"

// takeBackRestart sets the RestartContainer resources of the named
// containers back to their actual values, their other resources staying
// as the spec has them (resize.Revert of a copy whose actual resources are
// what is wanted). It reports whether the resize went out.
func (d *Decider) takeBackRestart(ctx context.Context, log logr.Logger, st *podState, pod *corev1.Pod, names []string, now time.Time) bool {
	target := pod.DeepCopy()
	spec := map[string]corev1.ResourceRequirements{}
	statuses := make([]*corev1.ContainerStatus, 0, len(target.Status.ContainerStatuses)+len(target.Status.InitContainerStatuses))
	for i := range target.Status.ContainerStatuses {
		statuses = append(statuses, &target.Status.ContainerStatuses[i])
	}
	for i := range target.Status.InitContainerStatuses {
		statuses = append(statuses, &target.Status.InitContainerStatuses[i])
	}
	// Every container's "actual" is what is wanted: its spec, but the
	// named ones' RestartContainer resources, which go back to actual.
	for _, cst := range statuses {
		rr := specOf(target, cst.Name)
		if rr == nil || cst.Resources == nil {
			continue
		}
		want := *rr.DeepCopy()
		if slices.Contains(names, cst.Name) {
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if restartPolicy(pod, cst.Name, res) != corev1.RestartContainer {
					continue
				}
				for _, pair := range [2][2]corev1.ResourceList{{want.Requests, cst.Resources.Requests}, {want.Limits, cst.Resources.Limits}} {
					if q, ok := pair[1][res]; ok && pair[0] != nil {
						pair[0][res] = q
					}
				}
			}
			spec[cst.Name] = want
		}
		cst.Resources = &want
	}
	patch, err := resize.Revert(target)
	if err != nil || patch == nil {
		if err != nil {
			log.Error(err, "taking back a restarting resize whose window closed", "pod", st.ns+"/"+st.name)
		}
		return false
	}
	summary := "the restarting part of " + strings.Join(names, ", ") + "'s resize, back to the actual resources (its restart window closed before the kubelet applied it)"
	job := sendJob{uid: pod.UID, pod: pod, policy: policyName(st.policy), patch: patch, want: specPlans(spec), decidedAt: now, deferred: deferredRestartClosed, spec: spec, summary: summary}
	if !d.send(ctx, job) {
		return false
	}
	st.fire(evSent)
	log.Info("taking back a restarting resize", "pod", st.ns+"/"+st.name, "containers", names)
	return true
}

// restartAllowed reports whether a change to a RestartContainer resource
// of container cs may go into the pod's plan now: the pod's grant is
// usable and no restarting resize was sent for this instance yet. A stale
// decision (a container without a sample this pass) cannot slip one
// through after the grant has gone.
func restartAllowed(st *podState, pod *corev1.Pod, cs *containerState, now time.Time) bool {
	return cs.restartSentID != cs.containerID && st.grantUsable(pod, now)
}

// wishRestarts reports whether the wish changes a resource that the
// container declares RestartContainer.
func wishRestarts(pod *corev1.Pod, wish resize.Wish) bool {
	for _, c := range wish.Containers {
		for res := range c.Target {
			if restartPolicy(pod, c.Name, res) == corev1.RestartContainer {
				return true
			}
		}
	}
	return false
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
