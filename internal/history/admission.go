package history

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// AdmissionAnnotation is set by snug's admission webhook on a pod it sized
// at creation from the workload's learnt history, as an Admission in JSON.
// It tells the agent that the pod starts at the learnt size: the agent
// then does not resize it again toward the same history (it still acts on
// starvation). docs/controller.md, "New pods: one owner".
const AdmissionAnnotation = "autoscaling.snug.dev/admission"

// Admission is the value of AdmissionAnnotation.
type Admission struct {
	// Policy is the governing SnugPolicy's name (in the pod's namespace)
	// and Generation its metadata.generation when the pod was sized.
	Policy     string `json:"policy"`
	Generation int64  `json:"generation"`
	// Containers lists what changed, container by container.
	Containers []AdmittedContainer `json:"containers"`
	// Evicted names the pod, evicted for a Deferred resize, whose
	// asked-for size (EvictedKey) the pod started at no less than.
	Evicted string `json:"evicted,omitempty"`
}

// AdmittedContainer is one container's change at admission.
type AdmittedContainer struct {
	Name string `json:"name"`
	// Changes are "<resource> <request>/<limit> -> <request>/<limit>",
	// "-" for none: "cpu 100m/200m -> 25m/50m".
	Changes []string `json:"changes"`
}

// String is "app cpu 100m/- -> 25m/-, app memory ...".
func (a Admission) String() string {
	var parts []string
	for _, c := range a.Containers {
		for _, ch := range c.Changes {
			parts = append(parts, c.Name+" "+ch)
		}
	}
	return strings.Join(parts, ", ")
}

// ParseAdmission reads a pod's AdmissionAnnotation; ok is false when it
// has none.
func ParseAdmission(pod *corev1.Pod) (a Admission, ok bool, err error) {
	v, ok := pod.Annotations[AdmissionAnnotation]
	if !ok {
		return Admission{}, false, nil
	}
	if err := json.Unmarshal([]byte(v), &a); err != nil {
		return Admission{}, true, fmt.Errorf("decoding annotation %s: %w", AdmissionAnnotation, err)
	}
	return a, true, nil
}
