package resize

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestClaimed(t *testing.T) {
	resizing := func(spec, allocated, actual string) *podBuilder {
		return newPod("r").with(ctr("app", spec, "")).
			statusAs("app", rl("cpu="+allocated), &corev1.ResourceRequirements{Requests: rl("cpu=" + actual)})
	}
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		exclude types.UID
		want    map[string]string
	}{
		{name: "no pods", want: map[string]string{}},
		{
			name: "containers add up",
			pods: []*corev1.Pod{newPod("a").with(ctr("x", "100m", "128Mi"), ctr("y", "200m/1", "")).get()},
			want: map[string]string{"cpu": "300m", "memory": "128Mi"},
		},
		{
			name: "pods add up, excluded and finished ones skipped",
			pods: []*corev1.Pod{
				newPod("a").with(ctr("x", "100m", "")).get(),
				newPod("b").with(ctr("x", "200m", "")).get(),
				newPod("done").with(ctr("x", "1", "")).phase(corev1.PodSucceeded).get(),
				newPod("failed").with(ctr("x", "1", "")).phase(corev1.PodFailed).get(),
				newPod("me").with(ctr("x", "5", "")).get(),
			},
			exclude: "uid-me",
			want:    map[string]string{"cpu": "300m"},
		},
		{
			name: "init container larger than the containers",
			pods: []*corev1.Pod{newPod("a").init(ctr("setup", "1", "64Mi")).with(ctr("x", "100m", "128Mi")).get()},
			want: map[string]string{"cpu": "1", "memory": "128Mi"},
		},
		{
			name: "init container counts the sidecars started before it",
			pods: []*corev1.Pod{newPod("a").
				sidecar(ctr("mesh", "100m", "")).
				init(ctr("setup", "500m", "")).
				sidecar(ctr("late", "1", "")).
				with(ctr("x", "200m", "")).get()},
			// regular + sidecars: 200m + 100m + 1 = 1300m; setup: 500m + 100m = 600m.
			want: map[string]string{"cpu": "1300m"},
		},
		{
			name: "sidecar before a large init container",
			pods: []*corev1.Pod{newPod("a").
				sidecar(ctr("mesh", "100m", "")).
				init(ctr("setup", "2", "")).
				with(ctr("x", "200m", "")).get()},
			want: map[string]string{"cpu": "2100m"},
		},
		{
			name: "overhead is added",
			pods: []*corev1.Pod{newPod("a").with(ctr("x", "100m", "")).overhead(rl("cpu=50m", "memory=10Mi")).get()},
			want: map[string]string{"cpu": "150m", "memory": "10Mi"},
		},
		{
			name: "largest of spec, allocated and actual",
			pods: []*corev1.Pod{
				resizing("100m", "300m", "200m").get(),
				resizing("1", "300m", "200m").get(),
			},
			want: map[string]string{"cpu": "1300m"},
		},
		{
			name: "infeasible spec is not claimed",
			pods: []*corev1.Pod{resizing("3", "100m", "100m").condition(corev1.PodResizePending, corev1.PodReasonInfeasible, since).get()},
			want: map[string]string{"cpu": "100m"},
		},
		{
			name: "deferred spec is claimed",
			pods: []*corev1.Pod{resizing("3", "100m", "100m").condition(corev1.PodResizePending, corev1.PodReasonDeferred, since).get()},
			want: map[string]string{"cpu": "3"},
		},
		{
			name: "pod-level requests replace the containers'",
			pods: []*corev1.Pod{newPod("a").with(ctr("x", "100m", "64Mi")).edit(func(p *corev1.Pod) {
				p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu=1")}
			}).get()},
			want: map[string]string{"cpu": "1", "memory": "64Mi"},
		},
		{
			name: "other resources are summed too",
			pods: []*corev1.Pod{
				newPod("a").with(ctr("x", "100m", "", func(c *corev1.Container) { c.Resources.Requests["nvidia.com/gpu"] = rl("g=1")["g"] })).get(),
				newPod("b").with(ctr("x", "100m", "", func(c *corev1.Container) { c.Resources.Requests["nvidia.com/gpu"] = rl("g=2")["g"] })).get(),
			},
			want: map[string]string{"cpu": "200m", "nvidia.com/gpu": "3"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var pods []corev1.Pod
			for _, p := range tc.pods {
				pods = append(pods, *p)
			}
			if diff := cmp.Diff(tc.want, listStrings(Claimed(pods, tc.exclude))); diff != "" {
				t.Errorf("Claimed() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeQoS(t *testing.T) {
	zeroCPU := func(c *corev1.Container) { c.Resources.Requests[corev1.ResourceCPU] = rl("cpu=0")[corev1.ResourceCPU] }
	tests := []struct {
		name string
		pod  *corev1.Pod
		want corev1.PodQOSClass
	}{
		{"nothing", newPod("p").with(ctr("a", "", "")).get(), corev1.PodQOSBestEffort},
		{"zero request is none", newPod("p").with(ctr("a", "", "1Mi", func(c *corev1.Container) {
			c.Resources.Requests[corev1.ResourceMemory] = rl("m=0")["m"]
		})).get(), corev1.PodQOSBestEffort},
		{"one request", newPod("p").with(ctr("a", "100m", "")).get(), corev1.PodQOSBurstable},
		{"equal", newPod("p").with(ctr("a", "1/1", "1Gi/1Gi")).get(), corev1.PodQOSGuaranteed},
		{"equal in every container", newPod("p").with(ctr("a", "1/1", "1Gi/1Gi"), ctr("b", "2/2", "1Mi/1Mi")).get(), corev1.PodQOSGuaranteed},
		{"one container unequal", newPod("p").with(ctr("a", "1/1", "1Gi/1Gi"), ctr("b", "1/2", "1Mi/1Mi")).get(), corev1.PodQOSBurstable},
		{"missing memory limit", newPod("p").with(ctr("a", "1/1", "")).get(), corev1.PodQOSBurstable},
		{"container without anything", newPod("p").with(ctr("a", "1/1", "1Gi/1Gi"), ctr("b", "", "")).get(), corev1.PodQOSBurstable},
		{"init container counts", newPod("p").init(ctr("i", "1", "")).with(ctr("a", "1/1", "1Gi/1Gi")).get(), corev1.PodQOSBurstable},
		{"best effort with a requesting init container", newPod("p").init(ctr("i", "1", "")).with(ctr("a", "", "")).get(), corev1.PodQOSBurstable},
		{"zero cpu request with limits", newPod("p").with(ctr("a", "1/1", "1Gi/1Gi", zeroCPU)).get(), corev1.PodQOSBurstable},
		{"other resources do not count", newPod("p").with(ctr("a", "1/1", "1Gi/1Gi", func(c *corev1.Container) {
			c.Resources.Requests["ephemeral-storage"] = rl("e=1Gi")["e"]
		})).get(), corev1.PodQOSGuaranteed},
		{"pod-level limits decide", newPod("p").with(ctr("a", "100m", "")).edit(func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu=1", "memory=1Gi"), Limits: rl("cpu=1", "memory=1Gi")}
		}).get(), corev1.PodQOSGuaranteed},
		{"pod-level limits without memory", newPod("p").with(ctr("a", "1/1", "1Gi/1Gi")).edit(func(p *corev1.Pod) {
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: rl("cpu=1")}
		}).get(), corev1.PodQOSBurstable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ComputeQoS(tc.pod); got != tc.want {
				t.Errorf("ComputeQoS() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCurrentQoSPrefersStatus(t *testing.T) {
	pod := newPod("p").with(ctr("a", "1/1", "1Gi/1Gi")).get()
	pod.Status.QOSClass = corev1.PodQOSBurstable
	if got := currentQoS(pod); got != corev1.PodQOSBurstable {
		t.Errorf("currentQoS() = %s, want the stored Burstable", got)
	}
}

// TestPreemptionReserve: the largest claim, per resource, of the other
// pods with a higher priority that may preempt; equal or lower priorities,
// PreemptNever, finished pods and the pod itself leave nothing.
func TestPreemptionReserve(t *testing.T) {
	prio := func(p int32) func(*corev1.Pod) { return func(pod *corev1.Pod) { pod.Spec.Priority = &p } }
	never := corev1.PreemptNever
	me := newPod("me").with(ctr("app", "1", "1Gi")).edit(prio(0)).get()
	tests := []struct {
		name string
		pods []*corev1.Pod
		want map[string]string
	}{
		{name: "alone", pods: []*corev1.Pod{me}, want: map[string]string{}},
		{
			name: "the largest of each resource, not the sum",
			pods: []*corev1.Pod{
				me,
				newPod("agent").with(ctr("a", "100m", "256Mi")).edit(prio(2000001000)).get(),
				newPod("controller").with(ctr("c", "300m", "64Mi")).edit(prio(2000000000)).get(),
			},
			want: map[string]string{"cpu": "300m", "memory": "256Mi"},
		},
		{
			name: "equal, lower and unset priorities leave nothing",
			pods: []*corev1.Pod{
				me,
				newPod("peer").with(ctr("a", "2", "")).edit(prio(0)).get(),
				newPod("unset").with(ctr("a", "2", "")).get(),
				newPod("low").with(ctr("a", "2", "")).edit(prio(-10)).get(),
			},
			want: map[string]string{},
		},
		{
			name: "a pod that never preempts, a finished one",
			pods: []*corev1.Pod{
				me,
				newPod("polite").with(ctr("a", "2", "")).edit(prio(1000)).edit(func(p *corev1.Pod) { p.Spec.PreemptionPolicy = &never }).get(),
				newPod("done").with(ctr("a", "2", "")).edit(prio(1000)).phase(corev1.PodSucceeded).get(),
				newPod("terminating").with(ctr("a", "150m", "")).edit(prio(1000)).edit(func(p *corev1.Pod) {
					p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
				}).get(),
			},
			want: map[string]string{"cpu": "150m"},
		},
		{
			name: "a low-priority pod reserves for the others too",
			pods: []*corev1.Pod{
				newPod("me").with(ctr("app", "1", "")).edit(prio(-5)).get(),
				newPod("default").with(ctr("a", "400m", "")).get(),
			},
			want: map[string]string{"cpu": "400m"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var pods []corev1.Pod
			for _, p := range tc.pods {
				pods = append(pods, *p)
			}
			if diff := cmp.Diff(tc.want, listStrings(PreemptionReserve(pods, tc.pods[0]))); diff != "" {
				t.Errorf("PreemptionReserve() (-want +got):\n%s", diff)
			}
		})
	}
}

// listStrings is a resource list as name -> quantity string.
func listStrings(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}
