package resize

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ContainerState is the three views of one container's resources.
type ContainerState struct {
	// Name is the container's name.
	Name string
	// Sidecar is true for a restartable init container.
	Sidecar bool
	// PodLevel is true for the pod's own resources (Name is PodLevel):
	// Desired is spec.resources, Allocated and Actual as PodLevelActual
	// reads them.
	PodLevel bool
	// Desired is the spec: what was asked for.
	Desired corev1.ResourceRequirements
	// Allocated is status allocatedResources: the requests the kubelet has
	// accepted. Nil when the status has none.
	Allocated corev1.ResourceList
	// Actual is status resources: what the runtime applied. Nil when the
	// kubelet does not report it (container not running, old node).
	Actual *corev1.ResourceRequirements
}

// Settled reports whether the actual cpu and memory requests and limits
// equal the desired ones. A container without actual resources is not
// settled.
func (c ContainerState) Settled() bool {
	return c.Actual != nil && readValues(c.Desired) == readValues(*c.Actual)
}

// accepted reports whether the kubelet has allocated the desired requests.
func (c ContainerState) accepted() bool {
	if c.Allocated == nil {
		return true
	}
	d := readValues(c.Desired)
	a := readValues(corev1.ResourceRequirements{Requests: c.Allocated})
	for _, r := range resources {
		if d[r].req != a[r].req {
			return false
		}
	}
	return true
}

// ResizeCondition is one of the pod's resize conditions.
type ResizeCondition struct {
	// Type is PodResizePending or PodResizeInProgress.
	Type corev1.PodConditionType
	// Outcome is Deferred or Infeasible for PodResizePending, InProgress or
	// (reason Error) Error for PodResizeInProgress.
	Outcome Outcome
	// Reason and Message are the condition's.
	Reason, Message string
	// Since is the condition's lastTransitionTime; zero if unset.
	Since time.Time
	// Age is now - Since, rounded to the second; zero if Since is unset.
	Age time.Duration
}

// String returns the outcome and how long it has lasted, as in "Deferred
// 3m12s".
func (c ResizeCondition) String() string {
	if c.Since.IsZero() {
		return c.Outcome.String()
	}
	return c.Outcome.String() + " " + c.Age.String()
}

// PodState is the resize state of a pod, for `snug status` and for
// actuation to classify what became of a resize.
type PodState struct {
	// Containers lists the regular containers, then the sidecars, in pod
	// order, then the pod-level resources (PodLevel) when the pod sets
	// them. Non-sidecar init containers cannot be resized and are left out.
	Containers []ContainerState
	// Pending is the PodResizePending condition, if any.
	Pending *ResizeCondition
	// InProgress is the PodResizeInProgress condition, if any.
	InProgress *ResizeCondition
	// Outcome sums it up:
	//   - Deferred or Infeasible while a resize is pending;
	//   - Error or InProgress while one is in progress;
	//   - InProgress while the kubelet has not yet seen the latest spec
	//     (status.observedGeneration behind metadata.generation) or has not
	//     yet allocated or actuated it;
	//   - Applied when every container's actual resources equal its spec.
	Outcome Outcome
}

// String returns the main condition with its age ("Deferred 3m12s"), or the
// outcome alone.
func (s PodState) String() string {
	switch {
	case s.Pending != nil:
		return s.Pending.String()
	case s.InProgress != nil:
		return s.InProgress.String()
	}
	return s.Outcome.String()
}

// State describes the pod's resize state at time now.
func State(pod *corev1.Pod, now time.Time) PodState {
	var s PodState
	if pod == nil {
		return s
	}
	statuses := map[string]*corev1.ContainerStatus{}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			statuses[list[i].Name] = &list[i]
		}
	}
	add := func(c *corev1.Container, sidecar bool) {
		cs := ContainerState{Name: c.Name, Sidecar: sidecar, Desired: c.Resources}
		if st, ok := statuses[c.Name]; ok {
			cs.Allocated = st.AllocatedResources
			cs.Actual = st.Resources
		}
		s.Containers = append(s.Containers, cs)
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i], false)
	}
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			add(&pod.Spec.InitContainers[i], true)
		}
	}
	if hasPodLevelResources(pod) {
		pl := ContainerState{Name: PodLevel, PodLevel: true, Desired: *pod.Spec.Resources}
		if actual := PodLevelActual(pod); actual != nil {
			pl.Allocated, pl.Actual = actual.Requests, actual
		}
		s.Containers = append(s.Containers, pl)
	}
	for _, c := range pod.Status.Conditions {
		rc := &ResizeCondition{Type: c.Type, Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time}
		if !rc.Since.IsZero() {
			rc.Age = max(now.Sub(rc.Since), 0).Round(time.Second)
		}
		switch c.Type {
		case corev1.PodResizePending:
			rc.Outcome = Deferred
			if c.Reason == corev1.PodReasonInfeasible {
				rc.Outcome = Infeasible
			}
			s.Pending = rc
		case corev1.PodResizeInProgress:
			rc.Outcome = InProgress
			if c.Reason == corev1.PodReasonError {
				rc.Outcome = Error
			}
			s.InProgress = rc
		}
	}
	s.Outcome = outcomeOf(pod, s)
	return s
}

func outcomeOf(pod *corev1.Pod, s PodState) Outcome {
	switch {
	case s.Pending != nil:
		return s.Pending.Outcome
	case s.InProgress != nil:
		return s.InProgress.Outcome
	case pod.Status.ObservedGeneration > 0 && pod.Status.ObservedGeneration < pod.Generation:
		return InProgress
	}
	for _, c := range s.Containers {
		if c.Actual == nil {
			continue
		}
		if !c.accepted() || !c.Settled() {
			return InProgress
		}
	}
	return Applied
}
