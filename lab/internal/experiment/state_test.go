package experiment

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestResizeJSONPatch(t *testing.T) {
	got := string(cpuPatch("500m"))
	want := `[{"op":"replace","path":"/spec/containers/0/resources/requests/cpu","value":"500m"},` +
		`{"op":"replace","path":"/spec/containers/0/resources/limits/cpu","value":"500m"}]`
	if got != want {
		t.Errorf("cpuPatch(500m) =\n%s\nwant\n%s", got, want)
	}
}

func TestQuotaFor(t *testing.T) {
	for cpu, want := range map[string]int64{"250m": 25000, "500m": 50000, "700m": 70000, "1": 100000} {
		if got := quotaFor(cpu); got != want {
			t.Errorf("quotaFor(%s) = %d, want %d", cpu, got, want)
		}
	}
}

// pod builds a pod whose first container asks for cpu (requests and
// limits) and whose status reports actualCPU, with the given conditions.
func pod(cpu, actualCPU string, conds ...corev1.PodCondition) *corev1.Pod {
	p := markerPod("p", cpu, "128Mi").build()
	p.Status.QOSClass = corev1.PodQOSGuaranteed
	cs := corev1.ContainerStatus{Name: containerName, ContainerID: "containerd://abc", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	if actualCPU != "" {
		a := p.Spec.Containers[0].Resources.DeepCopy()
		a.Requests[corev1.ResourceCPU] = resource.MustParse(actualCPU)
		a.Limits[corev1.ResourceCPU] = resource.MustParse(actualCPU)
		cs.Resources = a
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
	p.Status.Conditions = append([]corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}, conds...)
	return p
}

func TestPodState(t *testing.T) {
	deferred := corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred, Message: "no room"}
	inProgress := corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}
	tests := []struct {
		name        string
		pod         *corev1.Pod
		settled     bool
		conditions  string
		desired     string
		hasActual   bool
		runningWant bool
	}{
		{"settled", pod("500m", "0.5"), true, "-", "cpu 500m/500m mem 128Mi/128Mi", true, true},
		{"spec ahead of status", pod("700m", "250m"), false, "-", "cpu 700m/700m mem 128Mi/128Mi", true, true},
		{"deferred", pod("700m", "250m", deferred), false, "PodResizePending/Deferred", "cpu 700m/700m mem 128Mi/128Mi", true, true},
		{"matching but in progress", pod("500m", "500m", inProgress), false, "PodResizeInProgress", "cpu 500m/500m mem 128Mi/128Mi", true, true},
		{"no actual yet", pod("250m", ""), false, "-", "cpu 250m/250m mem 128Mi/128Mi", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := stateOf(tt.pod, time.Unix(0, 0))
			if got := st.Settled(); got != tt.settled {
				t.Errorf("Settled() = %v, want %v", got, tt.settled)
			}
			if got := st.ConditionsString(); got != tt.conditions {
				t.Errorf("ConditionsString() = %q, want %q", got, tt.conditions)
			}
			if got := st.Desired.String(); got != tt.desired {
				t.Errorf("Desired = %q, want %q", got, tt.desired)
			}
			if st.HasActual != tt.hasActual {
				t.Errorf("HasActual = %v, want %v", st.HasActual, tt.hasActual)
			}
			if got := running(st); got != tt.runningWant {
				t.Errorf("running() = %v, want %v", got, tt.runningWant)
			}
		})
	}
}

func TestPodStateChanges(t *testing.T) {
	deferred := corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred}
	inProgress := corev1.PodCondition{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}
	at := time.Unix(0, 0)
	tests := []struct {
		name       string
		prev, next *corev1.Pod
		want       string
	}{
		{"nothing", pod("250m", "250m"), pod("250m", "250m"), ""},
		{"deferred", pod("700m", "250m"), pod("700m", "250m", deferred), "+PodResizePending/Deferred"},
		{"pending to in progress", pod("700m", "250m", deferred), pod("700m", "250m", inProgress), "+PodResizeInProgress, -PodResizePending"},
		{"applied", pod("700m", "250m", inProgress), pod("700m", "700m"), "actual cpu 250m/250m -> 700m/700m, -PodResizeInProgress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stateOf(tt.next, at).changes(stateOf(tt.prev, at))
			if got != tt.want {
				t.Errorf("changes() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDeferredSizes(t *testing.T) {
	for _, tt := range []struct {
		alloc            int64
		from, filler, to string
	}{
		{2000, "250m", "1400m", "700m"}, // the field report's, on the lab's node
		{1000, "125m", "700m", "350m"},  // the cgroup-v2 node (one CPU)
	} {
		from, filler, to := deferredSizes(tt.alloc)
		if from != tt.from || filler != tt.filler || to != tt.to {
			t.Errorf("deferredSizes(%d) = %s %s %s, want %s %s %s", tt.alloc, from, filler, to, tt.from, tt.filler, tt.to)
		}
	}
}
