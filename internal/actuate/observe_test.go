package actuate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/internal/resize"
)

// rl builds a cpu/memory list; "" leaves a value out.
func rl(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

// fixture is a running one-container pod at generation 2 whose spec asks
// for 700m/700m cpu and 128Mi memory; status says the kubelet saw
// generation observed and runs actual cpu.
type fixture struct {
	observed    int64
	allocCPU    string
	actualCPU   string
	conditions  []corev1.PodCondition
	specCPU     string
	noAllocated bool
}

func (f fixture) pod() *corev1.Pod {
	spec := f.specCPU
	if spec == "" {
		spec = "700m"
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: 2},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "app",
			Resources: corev1.ResourceRequirements{Requests: rl(spec, "128Mi"), Limits: rl(spec, "128Mi")},
		}}},
		Status: corev1.PodStatus{
			Phase:              corev1.PodRunning,
			ObservedGeneration: f.observed,
			Conditions:         f.conditions,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name:               "app",
				AllocatedResources: rl(f.allocCPU, "128Mi"),
				Resources:          &corev1.ResourceRequirements{Requests: rl(f.actualCPU, "128Mi"), Limits: rl(f.actualCPU, "128Mi")},
			}},
		},
	}
	if f.noAllocated {
		p.Status.ContainerStatuses[0].AllocatedResources = nil
	}
	return p
}

func condition(typ corev1.PodConditionType, reason, msg string, gen int64) corev1.PodCondition {
	return corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: gen}
}

func TestObserve(t *testing.T) {
	want := []resize.ContainerPlan{{Name: "app", Requests: rl("0.7", "128Mi"), Limits: rl("700m", "134217728")}}
	const deferredMsg = "Node didn't have enough resource: cpu, requested: 700, used: 1400, capacity: 2000"
	tests := []struct {
		name string
		f    fixture
		// wantCPU is the resize's cpu request and limit; "" means 700m.
		wantCPU string
		want    observation
	}{
		{
			name: "kubelet has not seen the new generation; an old Deferred does not count",
			f: fixture{observed: 1, allocCPU: "250m", actualCPU: "250m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonDeferred, "old", 1)}},
			want: observation{outcome: resize.InProgress},
		},
		{
			name: "deferred",
			f: fixture{observed: 2, allocCPU: "250m", actualCPU: "250m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonDeferred, deferredMsg, 2)}},
			want: observation{outcome: resize.Deferred, message: deferredMsg},
		},
		{
			name: "infeasible",
			f: fixture{observed: 2, allocCPU: "250m", actualCPU: "250m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonInfeasible, "Node didn't have enough capacity", 2)}},
			want: observation{outcome: resize.Infeasible, message: "Node didn't have enough capacity"},
		},
		{
			name: "in progress, allocated",
			f: fixture{observed: 2, allocCPU: "700m", actualCPU: "250m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizeInProgress, "", "", 2)}},
			want: observation{outcome: resize.InProgress, allocated: true},
		},
		{
			name: "kubelet error",
			f: fixture{observed: 2, allocCPU: "700m", actualCPU: "250m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizeInProgress, corev1.PodReasonError, "cannot decrease memory limits", 2)}},
			want: observation{outcome: resize.Error, message: "cannot decrease memory limits", allocated: true},
		},
		{
			name: "applied",
			f:    fixture{observed: 2, allocCPU: "700m", actualCPU: "0.7"},
			want: observation{outcome: resize.Applied, allocated: true, actual: true},
		},
		{
			name: "actual matches but status.observedGeneration behind",
			f:    fixture{observed: 1, allocCPU: "700m", actualCPU: "700m"},
			want: observation{outcome: resize.InProgress, allocated: true, actual: true},
		},
		{
			name: "actual matches but a current condition remains",
			f: fixture{observed: 2, allocCPU: "700m", actualCPU: "700m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizeInProgress, "", "", 2)}},
			want: observation{outcome: resize.InProgress, allocated: true, actual: true},
		},
		{
			name: "old kubelet: no observed generations at all",
			f: fixture{allocCPU: "250m", actualCPU: "250m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonDeferred, deferredMsg, 0)}},
			want: observation{outcome: resize.Deferred, message: deferredMsg},
		},
		{
			name: "no allocatedResources reported",
			f:    fixture{observed: 2, actualCPU: "700m", noAllocated: true},
			want: observation{outcome: resize.Applied, allocated: true, actual: true},
		},
		{
			// 1.35.4: a fit from 700m down to 450m; the kubelet has stamped
			// generation 2 on the old Deferred condition, which still names
			// the old total. It is no answer about this resize.
			name: "stale Deferred (names the old cpu total)",
			f: fixture{observed: 2, specCPU: "450m", allocCPU: "250m", actualCPU: "250m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonDeferred, deferredMsg, 2)}},
			wantCPU: "450m",
			want:    observation{outcome: resize.InProgress, message: "passing over a stale Deferred condition: " + deferredMsg},
		},
		{
			name: "stale Deferred, then the fit applies",
			f: fixture{observed: 2, specCPU: "450m", allocCPU: "450m", actualCPU: "450m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonDeferred, deferredMsg, 2)}},
			wantCPU: "450m",
			want:    observation{outcome: resize.Applied, allocated: true, actual: true, message: "passing over a stale Deferred condition: " + deferredMsg},
		},
		{
			name: "current Deferred for the fit (names its total)",
			f: fixture{observed: 2, specCPU: "450m", allocCPU: "250m", actualCPU: "250m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonDeferred,
					"Node didn't have enough resource: cpu, requested: 450, used: 1800, capacity: 2000", 2)}},
			wantCPU: "450m",
			want:    observation{outcome: resize.Deferred, message: "Node didn't have enough resource: cpu, requested: 450, used: 1800, capacity: 2000"},
		},
		{
			name: "stale Deferred on memory (bytes)",
			f: fixture{observed: 2, allocCPU: "250m", actualCPU: "250m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonDeferred,
					"Node didn't have enough resource: memory, requested: 268435456, used: 3221225472, capacity: 4294967296", 2)}},
			want: observation{outcome: resize.InProgress,
				message: "passing over a stale Deferred condition: Node didn't have enough resource: memory, requested: 268435456, used: 3221225472, capacity: 4294967296"},
		},
		{
			name: "current Deferred on memory (bytes)",
			f: fixture{observed: 2, allocCPU: "250m", actualCPU: "250m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonDeferred,
					"Node didn't have enough resource: memory, requested: 134217728, used: 4160749568, capacity: 4294967296", 2)}},
			want: observation{outcome: resize.Deferred, message: "Node didn't have enough resource: memory, requested: 134217728, used: 4160749568, capacity: 4294967296"},
		},
		{
			name: "stale Infeasible (names the old total)",
			f: fixture{observed: 2, allocCPU: "250m", actualCPU: "250m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonInfeasible, "Node didn't have enough capacity: cpu, requested: 2500, capacity: 2000", 2)}},
			want: observation{outcome: resize.InProgress, message: "passing over a stale Infeasible condition: Node didn't have enough capacity: cpu, requested: 2500, capacity: 2000"},
		},
		{
			name: "Deferred naming another resource is believed",
			f: fixture{observed: 2, allocCPU: "250m", actualCPU: "250m",
				conditions: []corev1.PodCondition{condition(corev1.PodResizePending, corev1.PodReasonDeferred, "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110", 2)}},
			want: observation{outcome: resize.Deferred, message: "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110"},
		},
		{
			name: "someone else changed the spec",
			f:    fixture{observed: 2, allocCPU: "700m", actualCPU: "700m", specCPU: "800m"},
			want: observation{outcome: resize.Conflict, message: `container "app"'s resources were changed by someone else while waiting (generation 2)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := want
			if tt.wantCPU != "" {
				w = []resize.ContainerPlan{{Name: "app", Requests: rl(tt.wantCPU, "128Mi"), Limits: rl(tt.wantCPU, "128Mi")}}
			}
			got := observe(tt.f.pod(), 2, w)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(observation{})); diff != "" {
				t.Errorf("observe (-want +got):\n%s", diff)
			}
		})
	}
}

func TestObservationDecisive(t *testing.T) {
	for o, want := range map[resize.Outcome][2]bool{
		resize.Applied:    {true, true},
		resize.Deferred:   {true, false},
		resize.Infeasible: {true, true},
		resize.Error:      {true, true},
		resize.Conflict:   {true, true},
		resize.InProgress: {false, false},
	} {
		obs := observation{outcome: o}
		if got := [2]bool{obs.decisive(false), obs.decisive(true)}; got != want {
			t.Errorf("%v decisive (plain, through deferred) = %v, want %v", o, got, want)
		}
	}
}

func TestActualPlan(t *testing.T) {
	p := fixture{observed: 2, allocCPU: "700m", actualCPU: "250m"}.pod()
	got := actualPlan(p)
	want := []resize.ContainerPlan{{Name: "app", Requests: rl("250m", "128Mi"), Limits: rl("250m", "128Mi")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actualPlan (-want +got):\n%s", diff)
	}
	// The pod level: allocated requests, the pod cgroup's limits.
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	p.Status.ContainerStatuses = nil
	p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("700m", "128Mi"), Limits: rl("1400m", "256Mi")}
	p.Status.AllocatedResources = rl("250m", "128Mi")
	p.Status.Resources = &corev1.ResourceRequirements{Requests: rl("250m", "100Mi"), Limits: rl("500m", "256Mi")}
	want = []resize.ContainerPlan{{Name: resize.PodLevel, PodLevel: true, Index: -1, Requests: rl("250m", "128Mi"), Limits: rl("500m", "256Mi")}}
	if diff := cmp.Diff(want, actualPlan(p)); diff != "" {
		t.Errorf("actualPlan of the pod level (-want +got):\n%s", diff)
	}
}

func TestObservePodLevel(t *testing.T) {
	want := []resize.ContainerPlan{{Name: resize.PodLevel, PodLevel: true, Index: -1,
		Requests: rl("600m", "128Mi"), Limits: rl("1200m", "256Mi")}}
	pod := func(specCPU, allocCPU, limitCPU string, edit func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: 2},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app"}},
				Resources:  &corev1.ResourceRequirements{Requests: rl(specCPU, "128Mi"), Limits: rl("1200m", "256Mi")},
			},
			Status: corev1.PodStatus{
				Phase: corev1.PodRunning, ObservedGeneration: 2,
				ContainerStatuses:  []corev1.ContainerStatus{{Name: "app", Resources: &corev1.ResourceRequirements{}}},
				AllocatedResources: rl(allocCPU, "128Mi"),
				// The 1.35 and 1.36 kubelets keep the old memory request
				// of a running pod here.
				Resources: &corev1.ResourceRequirements{Requests: rl("598m", "100Mi"), Limits: rl(limitCPU, "256Mi")},
			},
		}
		if edit != nil {
			edit(p)
		}
		return p
	}
	inProgress := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, ObservedGeneration: 2}}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want resize.Outcome
	}{
		{"allocated and limits applied", pod("600m", "600m", "1200m", nil), resize.Applied},
		{"not allocated yet", pod("600m", "400m", "800m", nil), resize.InProgress},
		{"allocated, limits not applied", pod("600m", "600m", "800m", nil), resize.InProgress},
		{"allocated, in progress", pod("600m", "600m", "1200m", inProgress), resize.InProgress},
		{"no pod-level status", pod("600m", "600m", "1200m", func(p *corev1.Pod) { p.Status.Resources, p.Status.AllocatedResources = nil, nil }), resize.InProgress},
		{"changed by someone else", pod("700m", "700m", "1200m", nil), resize.Conflict},
		{"pod-level resources gone", pod("600m", "600m", "1200m", func(p *corev1.Pod) { p.Spec.Resources = nil }), resize.Conflict},
		{"overhead counts in allocatedResources", pod("600m", "650m", "1200m", func(p *corev1.Pod) { p.Spec.Overhead = rl("50m", "") }), resize.Applied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := observe(tc.pod, 2, want); got.outcome != tc.want {
				t.Errorf("observe() = %s (%s), want %s", got.outcome, got.message, tc.want)
			}
		})
	}
}
