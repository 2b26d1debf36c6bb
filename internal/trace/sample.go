package trace

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/internal/resize"
)

// SampleOf reads one version of a pod, seen at time at, into a Sample.
// The three views of each container and the outcome come from
// resize.State.
func SampleOf(pod *corev1.Pod, at time.Time, cause Cause) Sample {
	st := resize.State(pod, at)
	s := Sample{
		At:                 at,
		Cause:              cause,
		Pod:                pod.Name,
		UID:                string(pod.UID),
		Node:               pod.Spec.NodeName,
		Phase:              string(pod.Status.Phase),
		QOSClass:           string(pod.Status.QOSClass),
		ResourceVersion:    pod.ResourceVersion,
		Generation:         pod.Generation,
		ObservedGeneration: pod.Status.ObservedGeneration,
		Deleting:           pod.DeletionTimestamp != nil,
		Outcome:            st.Outcome.String(),
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress {
			continue
		}
		s.Conditions = append(s.Conditions, Condition{
			Type:               string(c.Type),
			Status:             string(c.Status),
			Reason:             c.Reason,
			Message:            c.Message,
			ObservedGeneration: c.ObservedGeneration,
			Since:              c.LastTransitionTime.Time,
		})
	}
	statuses := map[string]*corev1.ContainerStatus{}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			statuses[list[i].Name] = &list[i]
		}
	}
	for _, cs := range st.Containers {
		c := Container{Name: cs.Name, Sidecar: cs.Sidecar, Desired: resourcesOf(cs.Desired)}
		if cs.Allocated != nil {
			a := resourcesOf(corev1.ResourceRequirements{Requests: cs.Allocated})
			c.Allocated = &a
		}
		if cs.Actual != nil {
			a := resourcesOf(*cs.Actual)
			c.Actual = &a
		}
		if status, ok := statuses[cs.Name]; ok {
			c.RestartCount = status.RestartCount
			c.ContainerID = status.ContainerID
			c.State = stateOf(status.State)
		}
		s.Containers = append(s.Containers, c)
	}
	return s
}

func resourcesOf(r corev1.ResourceRequirements) Resources {
	var out Resources
	if q, ok := r.Requests[corev1.ResourceCPU]; ok {
		out.CPURequestMillis = q.MilliValue()
	}
	if q, ok := r.Limits[corev1.ResourceCPU]; ok {
		out.CPULimitMillis = q.MilliValue()
	}
	if q, ok := r.Requests[corev1.ResourceMemory]; ok {
		out.MemoryRequestBytes = q.Value()
	}
	if q, ok := r.Limits[corev1.ResourceMemory]; ok {
		out.MemoryLimitBytes = q.Value()
	}
	return out
}

func stateOf(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Waiting != nil:
		return "waiting: " + s.Waiting.Reason
	case s.Terminated != nil:
		return "terminated: " + s.Terminated.Reason
	}
	return ""
}

// EventOf reads one version of an event about a pod, arrived at time at.
func EventOf(e *corev1.Event, at time.Time) Event {
	out := Event{
		At:      at,
		Pod:     e.InvolvedObject.Name,
		PodUID:  string(e.InvolvedObject.UID),
		Type:    e.Type,
		Reason:  e.Reason,
		Message: e.Message,
		Source:  e.ReportingController,
		Count:   e.Count,
	}
	if out.Source == "" {
		out.Source = e.Source.Component
	}
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		out.Last = e.Series.LastObservedTime.Time
		out.Count = max(out.Count, e.Series.Count)
	case !e.LastTimestamp.IsZero():
		out.Last = e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		out.Last = e.EventTime.Time
	}
	out.Resize = IsResizeEvent(out.Reason, out.Source, out.Message)
	return out
}

// vpaReasons are the upstream VPA's event reasons about updating pods.
var vpaReasons = map[string]bool{
	"EvictedByVPA":          true,
	"EvictedPod":            true,
	"InPlaceResizedByVPA":   true,
	"InPlaceResizeAttempt":  true,
	"InPlaceResizeFallback": true,
}

// IsResizeEvent reports whether an event is about resizing: the kubelet's
// Resize* reasons (ResizeStarted, ResizeCompleted, ResizeDeferred,
// ResizeInfeasible, ResizeError, ...), any reason or message that speaks of
// a resize, VPA's (EvictedByVPA, InPlaceResizedByVPA, ...) and whatever
// snug or a VPA component reports.
func IsResizeEvent(reason, source, message string) bool {
	src := strings.ToLower(source)
	switch {
	case strings.Contains(strings.ToLower(reason), "resize"), vpaReasons[reason]:
		return true
	case strings.HasPrefix(src, "snug"), strings.Contains(src, "vpa"), strings.Contains(src, "vertical-pod-autoscaler"):
		return true
	}
	return strings.Contains(strings.ToLower(message), "resiz")
}
