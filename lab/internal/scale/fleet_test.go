package scale

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/snug-dev/snug/internal/agent"
)

// TestLimitsFrom: a container's limits are its status resources (what the
// node applied), for the instance the agent tracks; an unknown pod,
// container or instance is not known.
func TestLimitsFrom(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", ContainerID: "containerd://1",
			Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
		}}},
	}
	if err := store.Add(pod); err != nil {
		t.Fatal(err)
	}
	limits := limitsFrom(store)
	ref := agent.ContainerRef{Namespace: "ns", Pod: "p", Container: "app", ContainerID: "containerd://1"}
	if cpu, mem, ok := limits(ref); !ok || cpu != 200 || mem != 64<<20 {
		t.Errorf("limits %dm %d %v, want the status's 200m, 64Mi (not the spec's 1)", cpu, mem, ok)
	}
	for name, r := range map[string]agent.ContainerRef{
		"other pod":       {Namespace: "ns", Pod: "q", Container: "app", ContainerID: "containerd://1"},
		"other container": {Namespace: "ns", Pod: "p", Container: "side", ContainerID: "containerd://1"},
		"other instance":  {Namespace: "ns", Pod: "p", Container: "app", ContainerID: "containerd://2"},
	} {
		if _, _, ok := limits(r); ok {
			t.Errorf("%s: known, want not", name)
		}
	}
}

// TestWrites: only create, update, patch and delete count as writes.
func TestWrites(t *testing.T) {
	got := Writes(map[string]map[Request]float64{
		"a": {{"patch", "pods"}: 3, {"list", "pods"}: 9, {"watch", "pods"}: 2},
		"b": {{"patch", "pods"}: 1, {"create", "events"}: 2},
	})
	want := map[Request]float64{{"patch", "pods"}: 4, {"create", "events"}: 2}
	if len(got) != len(want) || got[Request{"patch", "pods"}] != 4 || got[Request{"create", "events"}] != 2 {
		t.Errorf("writes %v, want %v", got, want)
	}
}
