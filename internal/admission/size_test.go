package admission

import (
	"encoding/json"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/policy"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

var now = tb.T0.Add(time.Hour)

// learnt is checkpoint data of a workload whose container app used about
// cpuMillis and memBytes for an hour.
func learnt(t *testing.T, pol *v1alpha1.SnugPolicy, cpuMillis, memBytes float64) map[string]string {
	t.Helper()
	a := recommend.NewAggregate(policy.HistoryConfig(pol))
	for s := 0; s < 3600; s += 10 {
		at := now.Add(-time.Duration(3600-s) * time.Second)
		a.CPU.Add(cpuMillis, 10, at)
		a.Memory.Add(memBytes, 10, at)
	}
	a.CPUSeconds, a.MemorySeconds = 3600, 3600
	a.MemoryPeakBytes, a.MemoryPeakTime = int64(memBytes), now.Add(-time.Minute)
	text, err := a.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{history.AggregateKey("app"): string(text)}
}

// admit applies a decision's patch to pod as the API server would.
func admit(t *testing.T, pod *corev1.Pod, d Decision) *corev1.Pod {
	t.Helper()
	if d.Patch == nil {
		return pod
	}
	raw, _ := json.Marshal(pod)
	p, err := jsonpatch.DecodePatch(d.Patch)
	if err != nil {
		t.Fatalf("decoding the patch: %v\n%s", err, d.Patch)
	}
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("applying the patch: %v\n%s", err, d.Patch)
	}
	var got corev1.Pod
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

func res(pod *corev1.Pod) (cpuReq, cpuLim, memReq, memLim string) {
	r := pod.Spec.Containers[0].Resources
	s := func(l corev1.ResourceList, n corev1.ResourceName) string {
		if q, ok := l[n]; ok {
			return q.String()
		}
		return "-"
	}
	return s(r.Requests, corev1.ResourceCPU), s(r.Limits, corev1.ResourceCPU), s(r.Requests, corev1.ResourceMemory), s(r.Limits, corev1.ResourceMemory)
}

func TestSize(t *testing.T) {
	const mi = 1 << 20
	base := func(m v1alpha1.UpdateMode) *v1alpha1.SnugPolicy {
		return tb.Policy("web").Namespace("ns").Selector("app", "web").Mode(m).Get()
	}
	pod := func() *corev1.Pod {
		return tb.Pod("").Namespace("ns").Labels("app", "web").Container("app", "500m", "1", "256Mi", "512Mi").Get()
	}
	guaranteed := func() *corev1.Pod {
		return tb.Pod("").Namespace("ns").Labels("app", "web").Container("app", "500m", "500m", "256Mi", "256Mi").Get()
	}
	tests := []struct {
		name    string
		pol     *v1alpha1.SnugPolicy
		pod     *corev1.Pod
		data    bool
		want    Outcome
		wantQoS corev1.PodQOSClass
		check   func(t *testing.T, got *corev1.Pod)
	}{
		{name: "no policy", pol: tb.Policy("web").Namespace("ns").Selector("app", "other").Get(), pod: pod(), data: true, want: NoPolicy},
		{name: "off", pol: base(v1alpha1.UpdateModeOff), pod: pod(), data: true, want: ModeOff},
		{name: "no history", pol: base(v1alpha1.UpdateModeInPlace), pod: pod(), want: NoHistory},
		{name: "yields to a VPA", pol: func() *v1alpha1.SnugPolicy {
			p := base(v1alpha1.UpdateModeInPlace)
			p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionVPAConflict, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonYieldsToVPA}}
			return p
		}(), pod: pod(), data: true, want: YieldsToVPA},
		{name: "inplace: requests to the learnt size, limit ratio kept", pol: base(v1alpha1.UpdateModeInPlace), pod: pod(), data: true, want: Sized, wantQoS: corev1.PodQOSBurstable,
			check: func(t *testing.T, got *corev1.Pod) {
				cr, cl, mr, ml := res(got)
				cpu := resource.MustParse(cr)
				if cpu.MilliValue() < 100 || cpu.MilliValue() > 200 {
					t.Errorf("cpu request %s, want about the learnt 100m", cr)
				}
				lim := resource.MustParse(cl)
				if lim.MilliValue() != 2*cpu.MilliValue() {
					t.Errorf("cpu limit %s, want twice the request %s (the template's ratio)", cl, cr)
				}
				m := resource.MustParse(mr)
				if m.Value() < 64*mi || m.Value() > 128*mi {
					t.Errorf("memory request %s, want about the learnt 64Mi", mr)
				}
				if ml != "512Mi" {
					t.Errorf("memory limit %s, want the template's 512Mi (a Burstable limit is not lowered, as in a resize)", ml)
				}
				a, ok, err := history.ParseAdmission(got)
				if !ok || err != nil || a.Policy != "web" || len(a.Containers) != 1 {
					t.Errorf("annotation %v %v %+v", ok, err, a)
				}
			}},
		{name: "initial", pol: base(v1alpha1.UpdateModeInitial), pod: pod(), data: true, want: Sized, wantQoS: corev1.PodQOSBurstable},
		{name: "guaranteed stays guaranteed", pol: base(v1alpha1.UpdateModeInPlaceOrRecreate), pod: guaranteed(), data: true, want: Sized, wantQoS: corev1.PodQOSGuaranteed,
			check: func(t *testing.T, got *corev1.Pod) {
				cr, cl, mr, ml := res(got)
				if cr != cl || mr != ml || cr == "500m" {
					t.Errorf("got %s/%s %s/%s, want requests = limits at the learnt size", cr, cl, mr, ml)
				}
			}},
		{name: "requests only", pol: tb.Policy("web").Namespace("ns").Selector("app", "web").
			Container(v1alpha1.ContainerResourcePolicy{ContainerName: "*", ControlledValues: v1alpha1.ContainerControlledValuesRequestsOnly}).Get(),
			pod: pod(), data: true, want: Sized, wantQoS: corev1.PodQOSBurstable,
			check: func(t *testing.T, got *corev1.Pod) {
				if _, cl, _, ml := res(got); cl != "1" || ml != "512Mi" {
					t.Errorf("limits %s %s, want the template's", cl, ml)
				}
			}},
		{name: "cpu only, min allowed", pol: tb.Policy("web").Namespace("ns").Selector("app", "web").
			Container(v1alpha1.ContainerResourcePolicy{ContainerName: "app", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
				MinAllowed: &v1alpha1.ResourceAmounts{CPU: ptr(resource.MustParse("300m"))}}).Get(),
			pod: pod(), data: true, want: Sized, wantQoS: corev1.PodQOSBurstable,
			check: func(t *testing.T, got *corev1.Pod) {
				cr, cl, mr, ml := res(got)
				if cr != "300m" || cl != "600m" || mr != "256Mi" || ml != "512Mi" {
					t.Errorf("got cpu %s/%s memory %s/%s, want cpu 300m/600m (minAllowed), memory untouched", cr, cl, mr, ml)
				}
			}},
		{name: "container mode off", pol: tb.Policy("web").Namespace("ns").Selector("app", "web").
			Container(v1alpha1.ContainerResourcePolicy{ContainerName: "app", Mode: v1alpha1.ContainerScalingModeOff}).Get(),
			pod: pod(), data: true, want: NoHistory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var data map[string]string
			if tt.data {
				data = learnt(t, tt.pol, 100, 64*mi)
			}
			d := Size(tt.pod, []*v1alpha1.SnugPolicy{tt.pol}, func(ns, name string) map[string]string {
				if ns != "ns" || name != history.CheckpointName(tt.pol.Name) {
					t.Errorf("read checkpoint %s/%s", ns, name)
				}
				return data
			}, now)
			if d.Outcome != tt.want {
				t.Fatalf("outcome %s (%s), want %s", d.Outcome, d.Summary, tt.want)
			}
			got := admit(t, tt.pod, d)
			if d.Outcome != Sized {
				if d.Patch != nil {
					t.Errorf("a patch for outcome %s", d.Outcome)
				}
				return
			}
			if q := resize.ComputeQoS(got); q != tt.wantQoS {
				t.Errorf("QoS %s, want %s", q, tt.wantQoS)
			}
			if !strings.Contains(d.Summary, "app cpu") && !strings.Contains(d.Summary, "app memory") {
				t.Errorf("summary %q", d.Summary)
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestSizeEvicted: a new pod of the owner of a pod evicted for a Deferred
// resize starts at no less than what that resize asked for, with or
// without learnt history; a record of another owner, an expired one, or
// the evicted pod itself changes nothing.
func TestSizeEvicted(t *testing.T) {
	const mi = 1 << 20
	pol := tb.Policy("web").Namespace("ns").Selector("app", "web").Mode(v1alpha1.UpdateModeInPlaceOrRecreate).Deferred(v1alpha1.DeferredActionEvict, 0).Get()
	pod := func(owner string) *corev1.Pod {
		return tb.Pod("").Namespace("ns").Labels("app", "web").OwnedBy(owner).Container("app", "100m", "200m", "64Mi", "128Mi").Get()
	}
	// The evicted pod had asked for 700m of cpu (its spec) and kept 64Mi.
	victim := tb.Pod("web-old").Namespace("ns").Labels("app", "web").OwnedBy("web-rs").Container("app", "700m", "1400m", "64Mi", "128Mi").Get()
	record := func(at time.Time) map[string]string {
		e, ok := history.NewEvicted(victim, at)
		if !ok {
			t.Fatal("no record for an owned pod")
		}
		v, err := history.EncodeEvicted([]history.Evicted{e})
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{history.EvictedKey: v}
	}
	with := func(a, b map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range a {
			out[k] = v
		}
		for k, v := range b {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name                   string
		pod                    *corev1.Pod
		data                   map[string]string
		want                   Outcome
		cpuReq, cpuLim, evicts string
	}{
		{name: "no history: the asked-for size, the template's ratio", pod: pod("web-rs"), data: record(now.Add(-time.Minute)), want: Sized, cpuReq: "700m", cpuLim: "1400m", evicts: "web-old"},
		{name: "history under the asked-for size: the asked-for size", pod: pod("web-rs"), data: with(learnt(t, pol, 100, 64*mi), record(now.Add(-time.Minute))), want: Sized, cpuReq: "700m", cpuLim: "1400m", evicts: "web-old"},
		{name: "history over it: the history", pod: pod("web-rs"), data: with(learnt(t, pol, 1500, 64*mi), record(now.Add(-time.Minute))), want: Sized, evicts: "web-old"},
		{name: "another owner's eviction", pod: pod("other-rs"), data: record(now.Add(-time.Minute)), want: NoHistory},
		{name: "expired", pod: pod("web-rs"), data: record(now.Add(-history.EvictedTTL)), want: NoHistory},
		{name: "the evicted pod itself", pod: victim, data: record(now.Add(-time.Minute)), want: NoHistory},
		{name: "a damaged record is not a size", pod: pod("web-rs"), data: map[string]string{history.EvictedKey: "{"}, want: NoHistory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Size(tt.pod, []*v1alpha1.SnugPolicy{pol}, func(string, string) map[string]string { return tt.data }, now)
			if d.Outcome != tt.want {
				t.Fatalf("outcome %s (%s), want %s", d.Outcome, d.Summary, tt.want)
			}
			if d.Outcome != Sized {
				return
			}
			got := admit(t, tt.pod, d)
			cr, cl, _, _ := res(got)
			if tt.cpuReq != "" && (cr != tt.cpuReq || cl != tt.cpuLim) {
				t.Errorf("cpu %s/%s, want %s/%s", cr, cl, tt.cpuReq, tt.cpuLim)
			}
			if q := resource.MustParse(cr); q.MilliValue() < 700 {
				t.Errorf("cpu request %s, under the 700m the evicted pod asked for", cr)
			}
			a, ok, err := history.ParseAdmission(got)
			if !ok || err != nil || a.Evicted != tt.evicts {
				t.Errorf("annotation %v %v %+v, want evicted %q", ok, err, a, tt.evicts)
			}
			if q := resize.ComputeQoS(got); q != corev1.PodQOSBurstable {
				t.Errorf("QoS %s, want Burstable kept", q)
			}
		})
	}
	if d := Size(pod("web-rs"), []*v1alpha1.SnugPolicy{pol}, func(string, string) map[string]string {
		return map[string]string{history.EvictedKey: "{"}
	}, now); !strings.Contains(d.Summary, history.EvictedKey) {
		t.Errorf("summary %q does not name the damaged %s", d.Summary, history.EvictedKey)
	}
}
