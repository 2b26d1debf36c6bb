package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// FormatVersion is the version of the JSON form written by Save. Load
// refuses other versions.
const FormatVersion = 1

// Recording is everything a trace saw. It is a plain value: the JSON form
// (Save, Load) is stable, and every renderer works from a Recording alone.
type Recording struct {
	// Format is FormatVersion.
	Format int `json:"format"`
	// Namespace is the traced pods' namespace.
	Namespace string `json:"namespace"`
	// Pod is the traced pod's name, when one pod was traced by name.
	Pod string `json:"pod,omitempty"`
	// Selector is the label selector, when pods were traced by selector.
	Selector string `json:"selector,omitempty"`
	// ServerVersion is the API server's version, e.g. v1.35.4.
	ServerVersion string `json:"serverVersion,omitempty"`
	// IntervalSeconds is the period of the samples taken between watch
	// events.
	IntervalSeconds float64 `json:"intervalSeconds"`
	// Started and Ended bound the trace.
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	// EndReason says why the trace ended: "stopped", or the error that ended
	// it early.
	EndReason string `json:"endReason,omitempty"`
	// Marks are named instants added while recording (Recorder.Mark), such
	// as "patch sent".
	Marks []Mark `json:"marks,omitempty"`
	// Samples are in the order taken, which is time order. Each is one pod
	// at one moment.
	Samples []Sample `json:"samples"`
	// Events are the traced pods' events, in the order they arrived. An
	// event the API server updates (its count grows) appears once per
	// update.
	Events []Event `json:"events"`
}

// Mark is a named instant.
type Mark struct {
	At   time.Time `json:"at"`
	Name string    `json:"name"`
}

// Cause says why a sample was taken.
type Cause string

// The causes of a sample.
const (
	// CauseList: the pod was read when the trace started.
	CauseList Cause = "list"
	// CauseWatch: a watch event brought a new version of the pod.
	CauseWatch Cause = "watch"
	// CauseTick: the periodic sample; the pod is the last version seen.
	CauseTick Cause = "tick"
	// CauseRelist: the pod was re-read after its watch had expired.
	CauseRelist Cause = "relist"
	// CauseDeleted: the pod was deleted; the sample is its last version.
	CauseDeleted Cause = "deleted"
)

// Sample is one pod at one moment.
type Sample struct {
	// At is when the sample was taken: for a watch event, when it arrived.
	At    time.Time `json:"at"`
	Cause Cause     `json:"cause"`
	// Pod and UID name the pod; a recreated pod has a new UID.
	Pod string `json:"pod"`
	UID string `json:"uid"`
	// Node is spec.nodeName.
	Node string `json:"node,omitempty"`
	// Phase is status.phase, QOSClass status.qosClass.
	Phase    string `json:"phase,omitempty"`
	QOSClass string `json:"qosClass,omitempty"`
	// ResourceVersion is the version of the pod the sample was made from.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Generation is metadata.generation: every accepted resize bumps it.
	// ObservedGeneration is status.observedGeneration: the generation the
	// kubelet has seen (0 when it does not report it).
	Generation         int64 `json:"generation"`
	ObservedGeneration int64 `json:"observedGeneration"`
	// Deleting is true once the pod's deletion was requested
	// (metadata.deletionTimestamp is set).
	Deleting bool `json:"deleting,omitempty"`
	// Deleted is true for the last sample of a deleted pod.
	Deleted bool `json:"deleted,omitempty"`
	// Outcome sums up the resize state as internal/resize classifies it:
	// Applied, InProgress, Deferred, Infeasible or Error.
	Outcome string `json:"outcome,omitempty"`
	// Conditions are the resize conditions (PodResizePending,
	// PodResizeInProgress) the pod has, in the order it lists them.
	Conditions []Condition `json:"conditions,omitempty"`
	// Containers are the regular containers, then the sidecars, in pod
	// order.
	Containers []Container `json:"containers"`
}

// Condition is one resize condition of a pod.
type Condition struct {
	// Type is PodResizePending or PodResizeInProgress.
	Type   string `json:"type"`
	Status string `json:"status"`
	// Reason is Deferred or Infeasible (pending), empty or Error (in
	// progress).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// ObservedGeneration is the pod generation the condition was set for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Since is the condition's lastTransitionTime.
	Since time.Time `json:"since,omitzero"`
}

// Container is one container in a sample. Quantities are whole
// millicores and bytes; 0 means not set.
type Container struct {
	Name    string `json:"name"`
	Sidecar bool   `json:"sidecar,omitempty"`
	// Desired is spec resources: what is asked for.
	Desired Resources `json:"desired"`
	// Allocated is status allocatedResources: the requests the kubelet has
	// accepted (limits are not reported there). Nil when not reported.
	Allocated *Resources `json:"allocated,omitempty"`
	// Actual is status resources: what the runtime applied. Nil when not
	// reported (container not running).
	Actual *Resources `json:"actual,omitempty"`
	// RestartCount and ContainerID change when the container restarts.
	RestartCount int32  `json:"restartCount"`
	ContainerID  string `json:"containerID,omitempty"`
	// State is "running", "waiting: REASON" or "terminated: REASON".
	State string `json:"state,omitempty"`
	// Usage is the measured usage, on tick samples when a UsageSource
	// gave one.
	Usage *Usage `json:"usage,omitempty"`
}

// Resources are a container's cpu and memory requests and limits.
type Resources struct {
	CPURequestMillis   int64 `json:"cpuRequestMillis,omitempty"`
	CPULimitMillis     int64 `json:"cpuLimitMillis,omitempty"`
	MemoryRequestBytes int64 `json:"memoryRequestBytes,omitempty"`
	MemoryLimitBytes   int64 `json:"memoryLimitBytes,omitempty"`
}

// Usage is a container's measured usage.
type Usage struct {
	// CPUMillis is the cpu used, in millicores, over the source's last
	// interval.
	CPUMillis float64 `json:"cpuMillis"`
	// MemoryBytes is the working set.
	MemoryBytes int64 `json:"memoryBytes"`
	// ThrottledFraction is the fraction of cfs periods throttled over the
	// source's last interval, in [0, 1].
	ThrottledFraction float64 `json:"throttledFraction"`
}

// Event is one version of one event about a traced pod.
type Event struct {
	// At is when the event (or this update of it) arrived.
	At time.Time `json:"at"`
	// Pod and PodUID name the pod the event is about.
	Pod    string `json:"pod"`
	PodUID string `json:"podUID,omitempty"`
	// Type is Normal or Warning.
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Source is the component that reported it (kubelet,
	// vpa-updater, snug, ...).
	Source string `json:"source,omitempty"`
	// Count is how often the event happened so far.
	Count int32 `json:"count,omitempty"`
	// Last is the event's own time of its last occurrence.
	Last time.Time `json:"last,omitzero"`
	// Resize is true for events about resizing: the kubelet's Resize*,
	// snug's and VPA's.
	Resize bool `json:"resize,omitempty"`
}

// Save writes r as indented JSON.
func (r *Recording) Save(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing recording: %w", err)
	}
	return nil
}

// SaveFile writes r to the file at path.
func (r *Recording) SaveFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("saving recording: %w", err)
	}
	if err := r.Save(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("saving recording: %w", err)
	}
	return nil
}

// Load reads a recording written by Save.
func Load(rd io.Reader) (*Recording, error) {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	var r Recording
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("reading recording: %w", err)
	}
	if r.Format != FormatVersion {
		return nil, fmt.Errorf("reading recording: format %d, want %d", r.Format, FormatVersion)
	}
	if r.Started.IsZero() {
		return nil, errors.New("reading recording: no start time")
	}
	return &r, nil
}

// LoadFile reads the recording in the file at path.
func LoadFile(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("loading recording: %w", err)
	}
	defer f.Close()
	r, err := Load(f)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	return r, nil
}

// End is when the trace ended, or its last sample, event or mark if it has
// not ended.
func (r *Recording) End() time.Time {
	if !r.Ended.IsZero() {
		return r.Ended
	}
	end := r.Started
	for _, s := range r.Samples {
		end = later(end, s.At)
	}
	for _, e := range r.Events {
		end = later(end, e.At)
	}
	for _, m := range r.Marks {
		end = later(end, m.At)
	}
	return end
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// PodTrack is the samples of one pod (one UID), in time order.
type PodTrack struct {
	Pod, UID string
	Samples  []Sample
}

// Pods splits the samples by pod UID, in the order the pods first
// appeared.
func (r *Recording) Pods() []PodTrack {
	index := map[string]int{}
	var out []PodTrack
	for _, s := range r.Samples {
		i, ok := index[s.UID]
		if !ok {
			i = len(out)
			index[s.UID] = i
			out = append(out, PodTrack{Pod: s.Pod, UID: s.UID})
		}
		out[i].Samples = append(out[i].Samples, s)
	}
	return out
}

// Origin resolves the instant times are shown relative to: "" or "start"
// is the start of the trace; "change" is the first sample whose desired
// resources differ from the pod's previous sample (the first resize seen);
// any other name is the first mark of that name, else the first event with
// that reason.
func (r *Recording) Origin(name string) (time.Time, error) {
	switch name {
	case "", "start":
		return r.Started, nil
	case "change":
		var first time.Time
		for _, p := range r.Pods() {
			for i := 1; i < len(p.Samples); i++ {
				if !sameDesired(p.Samples[i-1], p.Samples[i]) {
					if first.IsZero() || p.Samples[i].At.Before(first) {
						first = p.Samples[i].At
					}
					break
				}
			}
		}
		if first.IsZero() {
			return time.Time{}, errors.New("origin \"change\": the desired resources never changed")
		}
		return first, nil
	}
	for _, m := range r.Marks {
		if m.Name == name {
			return m.At, nil
		}
	}
	events := append([]Event(nil), r.Events...)
	sort.SliceStable(events, func(i, j int) bool { return events[i].At.Before(events[j].At) })
	for _, e := range events {
		if e.Reason == name {
			return e.At, nil
		}
	}
	return time.Time{}, fmt.Errorf("origin %q: no such mark or event reason (try start, change, a mark or an event reason)", name)
}

func sameDesired(a, b Sample) bool {
	if len(a.Containers) != len(b.Containers) {
		return false
	}
	for i := range a.Containers {
		if a.Containers[i].Name != b.Containers[i].Name || a.Containers[i].Desired != b.Containers[i].Desired {
			return false
		}
	}
	return true
}
