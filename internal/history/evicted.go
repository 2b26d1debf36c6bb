package history

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EvictedKey is the checkpoint key under which the controller keeps the
// sizes of the pods it evicted for a resize the node kept Deferred, as a
// JSON list of Evicted. The admission webhook starts a replacement (a new
// pod of the same owner) at no less than that size, so that it is
// scheduled where that size fits instead of returning, at its template's
// size, to the full node it left (docs/controller.md, "Eviction
// fallback").
const EvictedKey = "evicted.json"

// EvictedTTL is how long an Evicted size is held for the owner's new pods
// when no replacement carrying it has been seen.
const EvictedTTL = 10 * time.Minute

// Evicted is one pod evicted for a Deferred resize.
type Evicted struct {
	// Pod and UID name the evicted pod.
	Pod string    `json:"pod"`
	UID types.UID `json:"uid"`
	// Owner is the UID of the pod's controller (its ReplicaSet,
	// StatefulSet, ...): the replacement is the owner's next pod.
	Owner types.UID `json:"owner"`
	// Time is when the size was recorded, just before the eviction.
	Time time.Time `json:"time"`
	// Requests maps a container's name to the requests its Deferred resize
	// asked for (the pod's spec, which the kubelet had not granted).
	Requests map[string]corev1.ResourceList `json:"requests"`
}

// Expired reports whether the record is older than EvictedTTL at now.
func (e Evicted) Expired(now time.Time) bool { return now.Sub(e.Time) >= EvictedTTL }

// NewEvicted records pod's asked-for requests (its spec) at t; ok is false
// for a pod without a controller, whose replacement cannot be recognised.
func NewEvicted(pod *corev1.Pod, t time.Time) (e Evicted, ok bool) {
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return Evicted{}, false
	}
	e = Evicted{Pod: pod.Name, UID: pod.UID, Owner: owner.UID, Time: t.UTC().Truncate(time.Second), Requests: map[string]corev1.ResourceList{}}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if len(c.Resources.Requests) > 0 {
			e.Requests[c.Name] = c.Resources.Requests.DeepCopy()
		}
	}
	return e, true
}

// For returns the live Evicted record (younger than EvictedTTL at now) for
// a new pod of the same owner; ok is false when there is none. The latest
// record wins.
func For(list []Evicted, pod *corev1.Pod, now time.Time) (e Evicted, ok bool) {
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return Evicted{}, false
	}
	for _, x := range list {
		if x.Owner == owner.UID && x.UID != pod.UID && !x.Expired(now) && (!ok || x.Time.After(e.Time)) {
			e, ok = x, true
		}
	}
	return e, ok
}

// CheckpointEvicted decodes the Evicted records of checkpoint ConfigMap
// data (none when the key is absent).
func CheckpointEvicted(data map[string]string) ([]Evicted, error) {
	v, ok := data[EvictedKey]
	if !ok {
		return nil, nil
	}
	var list []Evicted
	if err := json.Unmarshal([]byte(v), &list); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", EvictedKey, err)
	}
	return list, nil
}

// EncodeEvicted is the value of EvictedKey for list.
func EncodeEvicted(list []Evicted) (string, error) {
	b, err := json.Marshal(list)
	if err != nil {
		return "", fmt.Errorf("encoding %s: %w", EvictedKey, err)
	}
	return string(b), nil
}
