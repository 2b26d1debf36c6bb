package actuate

import (
	"fmt"
	"regexp"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/internal/resize"
)

// observation is what one version of the pod says about a resize.
type observation struct {
	outcome resize.Outcome
	message string
	// allocated: allocatedResources match the wanted requests of every
	// wanted container; actual: status resources match its requests and
	// limits.
	allocated, actual bool
}

// decisive reports whether the observation ends a wait. InProgress does
// not; Deferred does unless throughDeferred.
func (o observation) decisive(throughDeferred bool) bool {
	switch o.outcome {
	case resize.Applied, resize.Infeasible, resize.Error, resize.Conflict:
		return true
	case resize.Deferred:
		return !throughDeferred
	}
	return false
}

// observe classifies one version of the pod against the resources a resize
// with generation gen asked for (want). It is pure.
//
// The pod's resize conditions only count when they are about generation gen
// or later: a condition's observedGeneration (1.34+), or else the pod's
// status.observedGeneration, must have caught up, since a condition left
// from an earlier resize says nothing about this one. Applied needs the
// actual resources to equal want, no current resize condition and
// status.observedGeneration caught up (where the kubelet reports it). A spec
// that no longer equals want means someone else changed the pod since:
// Conflict.
//
// A PodResizePending condition whose message names a requested cpu or
// memory other than what the spec now asks for is stale (see
// stalePending) and is passed over: the 1.35 kubelet stamps a new
// generation on the old Deferred condition before it admits the resize.
func observe(pod *corev1.Pod, gen int64, want []resize.ContainerPlan) observation {
	o := observation{outcome: resize.InProgress}
	specs := map[string]*corev1.Container{}
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			specs[list[i].Name] = &list[i]
		}
	}
	statuses := map[string]*corev1.ContainerStatus{}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			statuses[list[i].Name] = &list[i]
		}
	}
	if pod.Spec.Resources != nil {
		specs[resize.PodLevel] = &corev1.Container{Name: resize.PodLevel, Resources: *pod.Spec.Resources}
	}
	for _, w := range want {
		c := specs[w.Name]
		if c == nil || !sameCPUMemory(c.Resources.Requests, w.Requests) || !sameCPUMemory(c.Resources.Limits, w.Limits) {
			o.outcome = resize.Conflict
			o.message = fmt.Sprintf("container %q's resources were changed by someone else while waiting (generation %d)", w.Name, pod.Generation)
			return o
		}
	}
	o.allocated, o.actual = true, true
	for _, w := range want {
		if w.PodLevel {
			allocated, actual := podLevelApplied(pod, w)
			o.allocated, o.actual = o.allocated && allocated, o.actual && actual
			continue
		}
		st := statuses[w.Name]
		if st == nil || st.Resources == nil {
			o.allocated, o.actual = false, false
			continue
		}
		if st.AllocatedResources != nil && !sameCPUMemory(st.AllocatedResources, w.Requests) {
			o.allocated = false
		}
		if !sameCPUMemory(st.Resources.Requests, w.Requests) || !sameCPUMemory(st.Resources.Limits, w.Limits) {
			o.actual = false
		}
	}
	caughtUp := pod.Status.ObservedGeneration == 0 || pod.Status.ObservedGeneration >= gen
	var pending, progress *corev1.PodCondition
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue || (c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress) {
			continue
		}
		current := c.ObservedGeneration >= gen || (c.ObservedGeneration == 0 && caughtUp)
		if !current {
			continue
		}
		if c.Type == corev1.PodResizePending {
			if stalePending(c.Message, pod) {
				o.message = "passing over a stale " + c.Reason + " condition: " + c.Message
				continue
			}
			pending = c
		} else {
			progress = c
		}
	}
	switch {
	case pending != nil:
		o.outcome, o.message = resize.Deferred, pending.Message
		if pending.Reason == corev1.PodReasonInfeasible {
			o.outcome = resize.Infeasible
		}
	case progress != nil && progress.Reason == corev1.PodReasonError:
		o.outcome, o.message = resize.Error, progress.Message
	case progress != nil:
		o.message = progress.Message
	case caughtUp && o.actual:
		o.outcome = resize.Applied
	}
	return o
}

// podLevelApplied compares a pod-level plan with what the kubelet reports
// of the pod level (resize.PodLevelActual: the allocated requests and the
// pod cgroup's limits).
func podLevelApplied(pod *corev1.Pod, w resize.ContainerPlan) (allocated, actual bool) {
	a := resize.PodLevelActual(pod)
	if a == nil {
		return false, false
	}
	allocated = sameCPUMemory(a.Requests, w.Requests)
	return allocated, allocated && sameCPUMemory(a.Limits, w.Limits)
}

// requestedInMessage finds the resources and figures the kubelet names in
// a PodResizePending message: "Node didn't have enough resource: cpu,
// requested: 700, used: 1400, capacity: 2000" (Deferred) or "Node didn't
// have enough capacity: memory, requested: 4294967296, capacity: ..."
// (Infeasible).
var requestedInMessage = regexp.MustCompile(`enough (?:resource|capacity): ([A-Za-z0-9./_-]+), requested: ([0-9]+)`)

// stalePending reports whether a PodResizePending message is about other
// values than the pod's spec asks for now: the kubelet's "requested" is
// the pod's total request (resize.SpecRequests) in millicores for cpu and
// bytes for memory. A message that names neither cpu nor memory, or has
// another shape, is not stale: it is believed.
//
// On 1.35.4 the kubelet, given a new resize while an older one is Deferred,
// first stamps the new generation on the old condition (its message still
// names the old total) and only then admits or defers the new one; without
// this check a fit that then applies would be recorded as Deferred.
func stalePending(msg string, pod *corev1.Pod) bool {
	ms := requestedInMessage.FindAllStringSubmatch(msg, -1)
	if len(ms) == 0 {
		return false
	}
	var reqs corev1.ResourceList
	for _, m := range ms {
		name := corev1.ResourceName(m[1])
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			continue
		}
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			continue
		}
		if reqs == nil {
			reqs = resize.SpecRequests(pod)
		}
		q, ok := reqs[name]
		if !ok {
			continue
		}
		have := q.Value()
		if name == corev1.ResourceCPU {
			have = q.MilliValue()
		}
		if have != n {
			return true
		}
	}
	return false
}

// sameCPUMemory compares the cpu and memory entries of two lists
// numerically (500m equals 0.5); a key absent from both is equal.
func sameCPUMemory(a, b corev1.ResourceList) bool {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		qa, okA := a[name]
		qb, okB := b[name]
		if okA != okB || (okA && qa.Cmp(qb) != 0) {
			return false
		}
	}
	return true
}
