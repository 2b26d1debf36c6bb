package actuate

import (
	"fmt"

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
