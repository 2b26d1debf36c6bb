package trace

import (
	"sort"
	"time"
)

// SpanKind is the kind of a resize condition span.
type SpanKind string

// The span kinds, one per resize state the kubelet reports.
const (
	SpanDeferred   SpanKind = "Deferred"
	SpanInfeasible SpanKind = "Infeasible"
	SpanInProgress SpanKind = "InProgress"
	SpanError      SpanKind = "Error"
)

// Span is a stretch of time during which a pod had one resize condition.
type Span struct {
	Kind     SpanKind
	Pod, UID string
	From, To time.Time
	// Open is true when the condition still held at the end of the pod's
	// trace.
	Open bool
	// Message is the condition's last message; ObservedGeneration its
	// last observedGeneration.
	Message            string
	ObservedGeneration int64
}

// kindOf classifies a true resize condition.
func kindOf(c Condition) (SpanKind, bool) {
	if c.Status != "True" {
		return "", false
	}
	switch c.Type {
	case "PodResizePending":
		if c.Reason == "Infeasible" {
			return SpanInfeasible, true
		}
		return SpanDeferred, true
	case "PodResizeInProgress":
		if c.Reason == "Error" {
			return SpanError, true
		}
		return SpanInProgress, true
	}
	return "", false
}

// Spans returns the resize condition spans of every pod, in the order they
// began. A span still open ends at end (normally Recording.End()).
func (t PodTrack) Spans(end time.Time) []Span {
	var out []Span
	open := map[SpanKind]int{} // kind -> index in out
	for _, s := range t.Samples {
		now := map[SpanKind]Condition{}
		if !s.Deleted {
			for _, c := range s.Conditions {
				if k, ok := kindOf(c); ok {
					now[k] = c
				}
			}
		}
		for k, i := range open {
			if _, still := now[k]; !still {
				out[i].To = s.At
				delete(open, k)
			}
		}
		for _, k := range []SpanKind{SpanDeferred, SpanInfeasible, SpanInProgress, SpanError} {
			c, ok := now[k]
			if !ok {
				continue
			}
			if i, ok := open[k]; ok {
				out[i].Message, out[i].ObservedGeneration = c.Message, c.ObservedGeneration
				continue
			}
			open[k] = len(out)
			out = append(out, Span{Kind: k, Pod: t.Pod, UID: t.UID, From: s.At, Message: c.Message, ObservedGeneration: c.ObservedGeneration})
		}
	}
	for _, i := range open {
		out[i].To, out[i].Open = end, true
	}
	return out
}

// Restart is a container seen restarting: its restart count grew or its
// container ID changed.
type Restart struct {
	At        time.Time
	Container string
	// Count is the restart count after the restart.
	Count int32
}

// Restarts returns the restarts seen in the pod's trace.
func (t PodTrack) Restarts() []Restart {
	var out []Restart
	type last struct {
		count int32
		id    string
	}
	prev := map[string]last{}
	for _, s := range t.Samples {
		for _, c := range s.Containers {
			p, ok := prev[c.Name]
			if ok && (c.RestartCount > p.count || (c.ContainerID != "" && p.id != "" && c.ContainerID != p.id)) {
				out = append(out, Restart{At: s.At, Container: c.Name, Count: c.RestartCount})
			}
			if c.ContainerID != "" || !ok {
				prev[c.Name] = last{c.RestartCount, c.ContainerID}
			} else {
				prev[c.Name] = last{c.RestartCount, p.id}
			}
		}
	}
	return out
}

// Until is when the pod's trace ends: its deletion, or end.
func (t PodTrack) Until(end time.Time) time.Time {
	if n := len(t.Samples); n > 0 && t.Samples[n-1].Deleted {
		return t.Samples[n-1].At
	}
	return end
}

// Resize is one change of a container's desired request, followed to the
// moment the kubelet allocated it and the moment the runtime applied it.
type Resize struct {
	Container string
	// Resource is "cpu" or "memory".
	Resource string
	// From and To are the desired request before and after, in
	// millicores (cpu) or bytes (memory).
	From, To int64
	// AskedAt is the first sample with the new desired request.
	AskedAt time.Time
	// AllocatedAt and ActualAt are the first samples, before the desired
	// request changed again, whose allocated and actual requests equal To;
	// zero when that was not seen.
	AllocatedAt, ActualAt time.Time
}

// Resizes follows every change of each container's desired cpu and memory
// request in the pod's trace.
func (t PodTrack) Resizes() []Resize {
	type view struct {
		resource string
		get      func(Resources) int64
	}
	views := []view{
		{"cpu", func(r Resources) int64 { return r.CPURequestMillis }},
		{"memory", func(r Resources) int64 { return r.MemoryRequestBytes }},
	}
	var out []Resize
	for _, name := range containerNames(t) {
		for _, v := range views {
			open := -1 // index in out of the resize being followed
			var prev *int64
			for _, s := range t.Samples {
				if s.Deleted {
					break
				}
				var c *Container
				for i := range s.Containers {
					if s.Containers[i].Name == name {
						c = &s.Containers[i]
					}
				}
				if c == nil {
					continue
				}
				d := v.get(c.Desired)
				if prev != nil && d != *prev {
					out = append(out, Resize{Container: name, Resource: v.resource, From: *prev, To: d, AskedAt: s.At})
					open = len(out) - 1
				}
				prev = &d
				if open < 0 {
					continue
				}
				r := &out[open]
				if r.AllocatedAt.IsZero() && c.Allocated != nil && v.get(*c.Allocated) == r.To {
					r.AllocatedAt = s.At
				}
				if r.ActualAt.IsZero() && c.Actual != nil && v.get(*c.Actual) == r.To {
					r.ActualAt = s.At
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].AskedAt.Before(out[j].AskedAt) })
	return out
}
