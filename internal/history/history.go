package history

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snug-dev/snug/internal/recommend"
)

// SnapshotAnnotation is the pod annotation in which the agent publishes
// what each of the pod's containers has learnt by itself
// (recommend.Container.Snapshot), as a Snapshot in JSON. The agent replaces
// it as a whole, about once a minute; the controller reads the latest one
// of each pod.
const SnapshotAnnotation = "autoscaling.snug.dev/snapshot"

// Snapshot is the value of SnapshotAnnotation.
type Snapshot struct {
	// Time is when the agent took the snapshots.
	Time time.Time `json:"time"`
	// Containers maps a container's name to its recommend.Aggregate in
	// text form (Aggregate.MarshalText: base64 of MarshalBinary).
	Containers map[string]string `json:"containers"`
}

// ParseSnapshot reads a pod's SnapshotAnnotation; ok is false when it has
// none.
func ParseSnapshot(pod *corev1.Pod) (s Snapshot, ok bool, err error) {
	v, ok := pod.Annotations[SnapshotAnnotation]
	if !ok {
		return Snapshot{}, false, nil
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return Snapshot{}, false, fmt.Errorf("decoding annotation %s of pod %s: %w", SnapshotAnnotation, pod.Name, err)
	}
	return s, true, nil
}

// NewSnapshot encodes per-container aggregates, taken at t, as a Snapshot.
func NewSnapshot(t time.Time, containers map[string]*recommend.Aggregate) (Snapshot, error) {
	s := Snapshot{Time: t, Containers: make(map[string]string, len(containers))}
	for name, a := range containers {
		text, err := a.MarshalText()
		if err != nil {
			return Snapshot{}, fmt.Errorf("encoding the snapshot of container %s: %w", name, err)
		}
		s.Containers[name] = string(text)
	}
	return s, nil
}

// Aggregate decodes the snapshot of one container; nil if the snapshot has
// none.
func (s Snapshot) Aggregate(container string) (*recommend.Aggregate, error) {
	text, ok := s.Containers[container]
	if !ok {
		return nil, nil
	}
	return decode(text, "snapshot of container "+container)
}

// MergePatch is the JSON merge patch (application/merge-patch+json) that
// sets a pod's SnapshotAnnotation to s and changes nothing else. A
// non-empty uid goes into the patch as a precondition: the API server
// refuses to change a pod's UID, so the patch fails on a new pod of the
// same name instead of giving it another pod's history.
func (s Snapshot) MergePatch(uid types.UID) ([]byte, error) {
	v, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding snapshot: %w", err)
	}
	meta := map[string]any{"annotations": map[string]string{SnapshotAnnotation: string(v)}}
	if uid != "" {
		meta["uid"] = uid
	}
	return json.Marshal(map[string]any{"metadata": meta})
}

// CheckpointName returns the name of the checkpoint ConfigMap of a policy,
// in the policy's namespace.
func CheckpointName(policy string) string {
	return "snug-checkpoint-" + policy
}

// AggregatePrefix + container name is the checkpoint key of the workload's
// aggregate for that container (Aggregate.MarshalText), what the agent
// seeds a new pod's container with.
const AggregatePrefix = "aggregate."

// AggregateKey returns the checkpoint key of a container's workload
// aggregate.
func AggregateKey(container string) string { return AggregatePrefix + container }

// CheckpointAggregate decodes a container's workload aggregate from
// checkpoint ConfigMap data; nil if the checkpoint has none.
func CheckpointAggregate(data map[string]string, container string) (*recommend.Aggregate, error) {
	text, ok := data[AggregateKey(container)]
	if !ok {
		return nil, nil
	}
	return decode(text, AggregateKey(container))
}

func decode(text, what string) (*recommend.Aggregate, error) {
	var a recommend.Aggregate
	if err := a.UnmarshalText([]byte(text)); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", what, err)
	}
	return &a, nil
}
