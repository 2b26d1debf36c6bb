package resize

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func quota(name string, hard, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) corev1.ResourceQuota {
	return corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes},
		Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: used},
	}
}

func limitRange(name string, items ...corev1.LimitRangeItem) corev1.LimitRange {
	return corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func TestQuotaRoom(t *testing.T) {
	pod := newPod("web").with(ctr("app", "500m/1", "128Mi/256Mi")).get()
	deadline := int64(60)
	batch := newPod("job").with(ctr("app", "500m/1", "128Mi/256Mi")).edit(func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = &deadline }).get()
	unsynced := quota("new", rl("limits.cpu=4"), nil)
	unsynced.Status = corev1.ResourceQuotaStatus{}
	qs := []corev1.ResourceQuota{
		quota("compute", rl("limits.cpu=2", "requests.memory=1Gi", "pods=10"), rl("limits.cpu=1400m", "requests.memory=512Mi", "pods=3")),
		quota("tighter", rl("limits.cpu=1"), rl("limits.cpu=700m")),
		quota("batch-only", rl("requests.cpu=100m"), rl("requests.cpu=0"), corev1.ResourceQuotaScopeTerminating),
		quota("besteffort-only", rl("requests.memory=1"), rl("requests.memory=0"), corev1.ResourceQuotaScopeBestEffort),
	}
	got := QuotaRoom(pod, qs)
	want := rl("limits.cpu=300m", "requests.memory=512Mi")
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("QuotaRoom(long-running pod) (-want +got):\n%s", diff)
	}
	got = QuotaRoom(batch, qs)
	if q := got["requests.cpu"]; q.Cmp(resource.MustParse("100m")) != 0 {
		t.Errorf("QuotaRoom(terminating pod) requests.cpu = %s, want the Terminating quota's 100m", q.String())
	}
	got = QuotaRoom(pod, []corev1.ResourceQuota{unsynced})
	if q, ok := got["limits.cpu"]; !ok || !q.IsZero() {
		t.Errorf("a quota without status leaves %v, want 0: the API server charges nothing against it until the controller writes it", got)
	}
	prio := newPod("p").with(ctr("app", "500m/1", "")).edit(func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }).get()
	sel := quota("high-only", rl("cpu=2"), rl("cpu=1"))
	sel.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}
	if q := QuotaRoom(prio, []corev1.ResourceQuota{sel})["cpu"]; q.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("priority-class quota room %s, want 1", q.String())
	}
	if got := QuotaRoom(pod, []corev1.ResourceQuota{sel}); len(got) != 0 {
		t.Errorf("a pod without the priority class got room %v from a quota scoped to it", got)
	}
}

func TestPlanFitsNamespace(t *testing.T) {
	pod := newPod("web").with(ctr("app", "500m/1", "128Mi/256Mi")).get()
	two := newPod("two").with(ctr("a", "250m/500m", "64Mi/128Mi"), ctr("b", "250m/500m", "64Mi/128Mi")).get()
	grow := []ContainerWish{aim("app", nil, "cpu=1250m")}
	runPlanCases(t, []planCase{
		{
			// The case: 600m of cpu limits left would allow 1.6
			// cores of limit; 1250m/2500m is cut to 800m/1600m.
			name: "quota on limits caps the grow", pod: pod, wish: grow,
			ns:      &Namespace{QuotaRoom: rl("limits.cpu=600m")},
			want:    map[string]string{"app": "cpu=800m/1600m memory=128Mi/256Mi"},
			wantAdj: []Adjustment{CappedToNamespace},
		},
		{
			name: "quota on requests caps the grow", pod: pod, wish: grow,
			ns:      &Namespace{QuotaRoom: rl("requests.cpu=100m")},
			want:    map[string]string{"app": "cpu=600m/1200m memory=128Mi/256Mi"},
			wantAdj: []Adjustment{CappedToNamespace},
		},
		{
			name: "the bare key is requests", pod: pod, wish: grow,
			ns:      &Namespace{QuotaRoom: rl("cpu=100m")},
			want:    map[string]string{"app": "cpu=600m/1200m memory=128Mi/256Mi"},
			wantAdj: []Adjustment{CappedToNamespace},
		},
		{
			name: "a full quota refuses", pod: pod, wish: grow,
			ns:         &Namespace{QuotaRoom: rl("limits.cpu=0")},
			wantReason: ReasonQuotaFull,
		},
		{
			name: "a full cpu quota leaves the memory grow", pod: pod, wish: []ContainerWish{aim("app", nil, "cpu=1250m", "memory=256Mi")},
			ns:      &Namespace{QuotaRoom: rl("limits.cpu=0")},
			want:    map[string]string{"app": "cpu=500m/1 memory=256Mi/512Mi"},
			wantAdj: []Adjustment{CappedToNamespace},
		},
		{
			name: "a quota on memory leaves cpu alone", pod: pod, wish: grow,
			ns:   &Namespace{QuotaRoom: rl("limits.memory=0")},
			want: map[string]string{"app": "cpu=1250m/2500m memory=128Mi/256Mi"},
		},
		{
			name: "a decrease needs no quota", pod: pod, wish: []ContainerWish{aim("app", nil, "cpu=250m")},
			ns:   &Namespace{QuotaRoom: rl("limits.cpu=0", "requests.cpu=0")},
			want: map[string]string{"app": "cpu=250m/500m memory=128Mi/256Mi"},
		},
		{
			name: "two containers share the room by one fraction", pod: two,
			wish:    []ContainerWish{aim("a", nil, "cpu=750m"), aim("b", nil, "cpu=450m")},
			ns:      &Namespace{QuotaRoom: rl("requests.cpu=350m")},
			want:    map[string]string{"a": "cpu=500m/1 memory=64Mi/128Mi", "b": "cpu=350m/700m memory=64Mi/128Mi"},
			wantAdj: []Adjustment{CappedToNamespace, CappedToNamespace},
		},
		{
			name: "guaranteed stays guaranteed", pod: newPod("db").with(ctr("app", "500m/500m", "128Mi/128Mi")).get(), wish: grow,
			ns:      &Namespace{QuotaRoom: rl("limits.cpu=250m")},
			want:    map[string]string{"app": "cpu=750m/750m memory=128Mi/128Mi"},
			wantAdj: []Adjustment{CappedToNamespace},
		},
		{
			name: "limit range container max", pod: pod, wish: grow,
			ns:      &Namespace{LimitRanges: []corev1.LimitRange{limitRange("lr", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu=2")})}},
			want:    map[string]string{"app": "cpu=1/2 memory=128Mi/256Mi"},
			wantAdj: []Adjustment{CappedToNamespace},
		},
		{
			name: "limit range container min stops a decrease", pod: pod, wish: []ContainerWish{aim("app", nil, "cpu=100m")},
			ns:      &Namespace{LimitRanges: []corev1.LimitRange{limitRange("lr", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("cpu=300m")})}},
			want:    map[string]string{"app": "cpu=300m/600m memory=128Mi/256Mi"},
			wantAdj: []Adjustment{RaisedToNamespace},
		},
		{
			name: "limit range ratio raises the request", pod: newPod("r").with(ctr("app", "500m/1", "128Mi/256Mi")).get(),
			wish:    []ContainerWish{exact("app", rl("cpu=200m"), nil)},
			ns:      &Namespace{LimitRanges: []corev1.LimitRange{limitRange("lr", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("cpu=4")})}},
			want:    map[string]string{"app": "cpu=250m/1 memory=128Mi/256Mi"},
			wantAdj: []Adjustment{RaisedToNamespace},
		},
		{
			name: "limit range pod max", pod: two, wish: []ContainerWish{aim("a", nil, "cpu=750m")},
			ns:      &Namespace{LimitRanges: []corev1.LimitRange{limitRange("lr", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu=1500m")})}},
			want:    map[string]string{"a": "cpu=500m/1 memory=64Mi/128Mi"},
			wantAdj: []Adjustment{CappedToNamespace},
		},
		{
			name: "no namespace, no check", pod: pod, wish: grow,
			want: map[string]string{"app": "cpu=1250m/2500m memory=128Mi/256Mi"},
		},
	})
}
