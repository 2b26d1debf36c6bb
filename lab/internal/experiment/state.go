package experiment

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Resources is one container's cpu and memory requests and limits. A zero
// Quantity means "not set".
type Resources struct {
	CPURequest, CPULimit       resource.Quantity
	MemoryRequest, MemoryLimit resource.Quantity
}

// resourcesOf reads the cpu and memory of r.
func resourcesOf(r corev1.ResourceRequirements) Resources {
	return Resources{
		CPURequest:    r.Requests[corev1.ResourceCPU],
		CPULimit:      r.Limits[corev1.ResourceCPU],
		MemoryRequest: r.Requests[corev1.ResourceMemory],
		MemoryLimit:   r.Limits[corev1.ResourceMemory],
	}
}

// Equal compares the four values numerically (500m equals 0.5).
func (r Resources) Equal(o Resources) bool {
	return r.CPURequest.Cmp(o.CPURequest) == 0 && r.CPULimit.Cmp(o.CPULimit) == 0 &&
		r.MemoryRequest.Cmp(o.MemoryRequest) == 0 && r.MemoryLimit.Cmp(o.MemoryLimit) == 0
}

// CPU is "request/limit", e.g. "250m/250m", with "-" for a value not set.
func (r Resources) CPU() string { return pair(r.CPURequest, r.CPULimit) }

// Memory is "request/limit", e.g. "128Mi/128Mi".
func (r Resources) Memory() string { return pair(r.MemoryRequest, r.MemoryLimit) }

// String is "cpu 250m/250m mem 128Mi/128Mi" (request/limit).
func (r Resources) String() string { return "cpu " + r.CPU() + " mem " + r.Memory() }

func pair(req, lim resource.Quantity) string { return qty(req) + "/" + qty(lim) }

func qty(q resource.Quantity) string {
	if q.IsZero() {
		return "-"
	}
	return q.String()
}

// Condition is one of a pod's resize conditions (PodResizePending or
// PodResizeInProgress) as the kubelet set it.
type Condition struct {
	Type    corev1.PodConditionType
	Status  corev1.ConditionStatus
	Reason  string
	Message string
}

// String is "PodResizePending/Deferred" (the message is left out).
func (c Condition) String() string {
	s := string(c.Type)
	if c.Status != corev1.ConditionTrue {
		s += "=" + string(c.Status)
	}
	if c.Reason != "" {
		s += "/" + c.Reason
	}
	return s
}

// PodState is what one version of a pod says about its first container's
// resources, as seen at a moment.
type PodState struct {
	// At is when this version of the pod was received.
	At time.Time
	// Name is the pod's name, Node the node it was scheduled to.
	Name, Node string
	// UID is the pod's UID; a recreated pod has a new one.
	UID types.UID
	// Generation is metadata.generation; every accepted resize bumps it.
	Generation int64
	// QOSClass is status.qosClass.
	QOSClass corev1.PodQOSClass
	// ContainerID is status.containerStatuses[0].containerID; a restarted
	// container has a new one.
	ContainerID string
	// RestartCount is status.containerStatuses[0].restartCount.
	RestartCount int32
	// Running is true while the container is in state running.
	Running bool
	// LastTermination is the reason of lastState.terminated (for example
	// OOMKilled or Completed); empty if the container never terminated.
	LastTermination string
	// Desired is spec.containers[0].resources.
	Desired Resources
	// Allocated is status.containerStatuses[0].allocatedResources: the
	// requests the kubelet accepted (limits are not reported there).
	Allocated Resources
	// Actual is status.containerStatuses[0].resources: what the runtime
	// applied. HasActual is false until the kubelet reports it.
	Actual    Resources
	HasActual bool
	// Conditions are the resize conditions, in the order the pod lists them.
	Conditions []Condition
}

// stateOf reads p's first container; the experiments' pods have one.
func stateOf(p *corev1.Pod, at time.Time) PodState {
	s := PodState{At: at, Name: p.Name, Node: p.Spec.NodeName, UID: p.UID, Generation: p.Generation, QOSClass: p.Status.QOSClass}
	if len(p.Spec.Containers) > 0 {
		s.Desired = resourcesOf(p.Spec.Containers[0].Resources)
	}
	if len(p.Status.ContainerStatuses) > 0 {
		cs := p.Status.ContainerStatuses[0]
		s.ContainerID = cs.ContainerID
		s.RestartCount = cs.RestartCount
		s.Running = cs.State.Running != nil
		if t := cs.LastTerminationState.Terminated; t != nil {
			s.LastTermination = t.Reason
		}
		s.Allocated = resourcesOf(corev1.ResourceRequirements{Requests: cs.AllocatedResources})
		if cs.Resources != nil {
			s.Actual, s.HasActual = resourcesOf(*cs.Resources), true
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			s.Conditions = append(s.Conditions, Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
	}
	return s
}

// Condition returns the resize condition of type t, if the pod has it with
// status True.
func (s PodState) Condition(t corev1.PodConditionType) (Condition, bool) {
	for _, c := range s.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return c, true
		}
	}
	return Condition{}, false
}

// Settled reports whether the runtime applied exactly the spec and no
// resize is pending or in progress.
func (s PodState) Settled() bool {
	if !s.HasActual || !s.Actual.Equal(s.Desired) {
		return false
	}
	for _, c := range s.Conditions {
		if c.Status == corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// ConditionsString lists the true resize conditions, or "-".
func (s PodState) ConditionsString() string {
	var parts []string
	for _, c := range s.Conditions {
		if c.Status == corev1.ConditionTrue {
			parts = append(parts, c.String())
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// String is a one-line summary for error messages.
func (s PodState) String() string {
	actual := "none"
	if s.HasActual {
		actual = s.Actual.String()
	}
	msg := ""
	for _, c := range s.Conditions {
		if c.Message != "" {
			msg += fmt.Sprintf(" (%s: %s)", c.Type, c.Message)
		}
	}
	return fmt.Sprintf("desired %s, actual %s, restarts %d, running %v, conditions %s%s",
		s.Desired, actual, s.RestartCount, s.Running, s.ConditionsString(), msg)
}

// changes describes what differs from prev to s, for a timeline, e.g.
// "actual cpu 250m/250m -> 500m/500m, -PodResizeInProgress".
func (s PodState) changes(prev PodState) string {
	var parts []string
	if !s.Desired.Equal(prev.Desired) {
		parts = append(parts, "desired "+diffResources(prev.Desired, s.Desired))
	}
	if !s.Allocated.Equal(prev.Allocated) {
		parts = append(parts, "allocated "+diffResources(prev.Allocated, s.Allocated))
	}
	switch {
	case s.HasActual && !prev.HasActual:
		parts = append(parts, "actual reported")
	case s.HasActual && !s.Actual.Equal(prev.Actual):
		parts = append(parts, "actual "+diffResources(prev.Actual, s.Actual))
	}
	before := map[string]Condition{}
	for _, c := range prev.Conditions {
		before[string(c.Type)] = c
	}
	for _, c := range s.Conditions {
		b, ok := before[string(c.Type)]
		delete(before, string(c.Type))
		switch {
		case !ok:
			parts = append(parts, "+"+c.String())
		case b != c:
			parts = append(parts, "~"+c.String())
		}
	}
	for _, c := range prev.Conditions {
		if _, gone := before[string(c.Type)]; gone {
			parts = append(parts, "-"+string(c.Type))
		}
	}
	if s.RestartCount != prev.RestartCount {
		parts = append(parts, fmt.Sprintf("restarts %d -> %d", prev.RestartCount, s.RestartCount))
	}
	if s.ContainerID != prev.ContainerID && prev.ContainerID != "" && s.ContainerID != "" {
		parts = append(parts, "new container ID")
	}
	if s.Running != prev.Running {
		parts = append(parts, fmt.Sprintf("running %v", s.Running))
	}
	return strings.Join(parts, ", ")
}

func diffResources(a, b Resources) string {
	var parts []string
	if a.CPURequest.Cmp(b.CPURequest) != 0 || a.CPULimit.Cmp(b.CPULimit) != 0 {
		parts = append(parts, "cpu "+a.CPU()+" -> "+b.CPU())
	}
	if a.MemoryRequest.Cmp(b.MemoryRequest) != 0 || a.MemoryLimit.Cmp(b.MemoryLimit) != 0 {
		parts = append(parts, "mem "+a.Memory()+" -> "+b.Memory())
	}
	return strings.Join(parts, " ")
}
