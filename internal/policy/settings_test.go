package policy_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

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

func TestRulesForContainer(t *testing.T) {
	got := policy.RulesFor(v1alpha1.ContainerResourcePolicy{
		ContainerName: "app", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
		ControlledValues: v1alpha1.ContainerControlledValuesRequestsOnly,
		MinAllowed:       &v1alpha1.ResourceAmounts{CPU: ptr.To(resource.MustParse("20m"))},
		MaxAllowed:       &v1alpha1.ResourceAmounts{CPU: ptr.To(resource.MustParse("2")), Memory: ptr.To(resource.MustParse("1Gi"))},
	}, nil)
	want := policy.Rules{
		Bounds: recommend.Bounds{MinCPUMillis: 20, MaxCPUMillis: 2000, MaxMemBytes: 1 << 30, RequestsOnly: true, IgnoreMemory: true},
		Policy: resize.Policy{
			ControlledValues: resize.RequestsOnly, ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
			MinAllowed: rl("20m", ""), MaxAllowed: rl("2", "1Gi"),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if off := policy.RulesFor(v1alpha1.ContainerResourcePolicy{Mode: v1alpha1.ContainerScalingModeOff}, nil); !off.Off || !off.Bounds.IgnoreCPU || !off.Bounds.IgnoreMemory {
		t.Errorf("mode Off: %+v", off)
	}
}

func TestBehaviorConfig(t *testing.T) {
	p := tb.Policy("pol").Selector("app", "load").Get()
	p.Spec.Behavior = &v1alpha1.Behavior{
		MemoryHeadroomPercent: ptr.To[int32](30), MaxResizesPerHour: 1,
		ScaleUp:   &v1alpha1.ScaleUpBehavior{CPUThrottledPercent: 40, MemoryWorkingSetPercent: 85},
		ScaleDown: &v1alpha1.ScaleDownBehavior{StabilizationWindowSeconds: ptr.To[int32](30), MaxStepPercent: 100},
	}
	base := recommend.DefaultConfig()
	cfg, opts, err := policy.Behavior(base, p)
	if err != nil {
		t.Fatal(err)
	}
	want := base
	want.MemoryHeadroom, want.MaxResizesPerHour, want.GrowReserve = 0.3, 1, 0
	want.CPUThrottledFraction, want.MemoryNearLimitFraction = 0.4, 0.15
	want.ShrinkWindow, want.MaxCPUShrinkFraction, want.MaxMemoryShrinkFraction = 30*time.Second, 1, base.MaxMemoryShrinkFraction
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if opts.NoRoom != resize.NoRoomCap || opts.MemoryHeadroom != 0.3 {
		t.Errorf("options %+v: want NoRoomCap and headroom 0.3", opts)
	}
}

// TestBehaviorConfigEdges: the CRD's extremes are valid recommender
// configurations.
func TestBehaviorConfigEdges(t *testing.T) {
	p := tb.Policy("pol").Selector("app", "load").Get()
	p.Spec.Behavior = &v1alpha1.Behavior{
		MemoryHeadroomPercent: ptr.To[int32](0), MaxResizesPerHour: 3600,
		ScaleUp:   &v1alpha1.ScaleUpBehavior{CPUThrottledPercent: 100, MemoryWorkingSetPercent: 100},
		ScaleDown: &v1alpha1.ScaleDownBehavior{StabilizationWindowSeconds: ptr.To[int32](0), MaxStepPercent: 1},
	}
	if _, _, err := policy.Behavior(recommend.DefaultConfig(), p); err != nil {
		t.Errorf("extreme behavior: %v", err)
	}
}

// TestRulesForUncontrolled: resources in the policy's
// status.uncontrolledResources are never resized.
func TestRulesForUncontrolled(t *testing.T) {
	cpu, mem := corev1.ResourceCPU, corev1.ResourceMemory
	for _, tc := range []struct {
		name                string
		controlled          []corev1.ResourceName
		uncontrolled        []corev1.ResourceName
		ignoreCPU, ignoreMe bool
		policy              []corev1.ResourceName
	}{
		{"none", nil, nil, false, false, nil},
		{"cpu", nil, []corev1.ResourceName{cpu}, true, false, []corev1.ResourceName{mem}},
		{"both", nil, []corev1.ResourceName{cpu, mem}, true, true, []corev1.ResourceName{}},
		{"memory of a cpu-only container", []corev1.ResourceName{cpu}, []corev1.ResourceName{mem}, false, true, []corev1.ResourceName{cpu}},
		{"the only controlled one", []corev1.ResourceName{mem}, []corev1.ResourceName{mem}, true, true, []corev1.ResourceName{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := policy.RulesFor(v1alpha1.ContainerResourcePolicy{ControlledResources: tc.controlled}, tc.uncontrolled)
			if r.Bounds.IgnoreCPU != tc.ignoreCPU || r.Bounds.IgnoreMemory != tc.ignoreMe {
				t.Errorf("bounds %+v, want ignore cpu %v memory %v", r.Bounds, tc.ignoreCPU, tc.ignoreMe)
			}
			if diff := cmp.Diff(tc.policy, r.Policy.ControlledResources); diff != "" || (tc.policy != nil) != (r.Policy.ControlledResources != nil) {
				t.Errorf("planner's controlled resources (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRulesForPodGuaranteed: under RequestsOnly a Guaranteed container's
// limit follows its request, so the recommender must not hold it fixed;
// other classes keep RequestsOnly as written.
func TestRulesForPodGuaranteed(t *testing.T) {
	cp := v1alpha1.ContainerResourcePolicy{ContainerName: "app", ControlledValues: v1alpha1.ContainerControlledValuesRequestsOnly}
	for qos, wantFixed := range map[corev1.PodQOSClass]bool{
		corev1.PodQOSGuaranteed: false,
		corev1.PodQOSBurstable:  true,
	} {
		r := policy.RulesForPod(cp, nil, qos)
		if r.Bounds.RequestsOnly != wantFixed {
			t.Errorf("%s: Bounds.RequestsOnly = %v, want %v", qos, r.Bounds.RequestsOnly, wantFixed)
		}
		if r.Policy.ControlledValues != resize.RequestsOnly {
			t.Errorf("%s: planner policy %s, want RequestsOnly (the planner moves a Guaranteed limit itself)", qos, r.Policy.ControlledValues)
		}
	}
}

func TestLearnBounds(t *testing.T) {
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	tests := []struct {
		name         string
		p            v1alpha1.ContainerResourcePolicy
		uncontrolled []corev1.ResourceName
		want         recommend.Bounds
	}{
		{"no policy", v1alpha1.ContainerResourcePolicy{}, nil, recommend.Bounds{}},
		{"bounds", v1alpha1.ContainerResourcePolicy{
			MinAllowed: &v1alpha1.ResourceAmounts{CPU: q("100m"), Memory: q("64Mi")},
			MaxAllowed: &v1alpha1.ResourceAmounts{CPU: q("2"), Memory: q("1Gi")},
		}, nil, recommend.Bounds{MinCPUMillis: 100, MaxCPUMillis: 2000, MinMemBytes: 64 << 20, MaxMemBytes: 1 << 30}},
		{"requests only, memory only", v1alpha1.ContainerResourcePolicy{
			ControlledValues: v1alpha1.ContainerControlledValuesRequestsOnly, ControlledResources: []corev1.ResourceName{corev1.ResourceMemory},
		}, nil, recommend.Bounds{RequestsOnly: true, IgnoreCPU: true}},
		{"hpa takes cpu", v1alpha1.ContainerResourcePolicy{}, []corev1.ResourceName{corev1.ResourceCPU}, recommend.Bounds{IgnoreCPU: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, policy.LearnBounds(tt.p, tt.uncontrolled)); diff != "" {
				t.Errorf("bounds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestYieldsToVPA(t *testing.T) {
	p := &v1alpha1.SnugPolicy{}
	if policy.YieldsToVPA(p) {
		t.Error("a policy without conditions yields")
	}
	for status, want := range map[metav1.ConditionStatus]bool{metav1.ConditionTrue: true, metav1.ConditionFalse: false, metav1.ConditionUnknown: false} {
		p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionHPAConflict, Status: metav1.ConditionTrue}, {Type: v1alpha1.ConditionVPAConflict, Status: status}}
		if got := policy.YieldsToVPA(p); got != want {
			t.Errorf("VPAConflict %s: YieldsToVPA = %v, want %v", status, got, want)
		}
	}
}
