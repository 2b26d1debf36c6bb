package v1alpha1

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// full returns a policy with every field of snug's own types set, so that
// deep-copy tests reach all of them (TestFullSetsEveryField keeps it so).
func full() *SnugPolicy {
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	return &SnugPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "SnugPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"a": "b"}},
		Spec: SnugPolicySpec{
			TargetRef: &CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			Selector:  &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			UpdatePolicy: &PodUpdatePolicy{
				UpdateMode:    UpdateModeInPlaceOrRecreate,
				MinReplicas:   ptr.To[int32](3),
				RestartWindow: &RestartWindow{SingleReplica: true, MinIntervalSeconds: ptr.To[int32](600), MinShrinkPercent: ptr.To[int32](30)},
			},
			ResourcePolicy: &PodResourcePolicy{ContainerPolicies: []ContainerResourcePolicy{{
				ContainerName:       "app",
				Mode:                ContainerScalingModeAuto,
				ControlledResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
				ControlledValues:    ContainerControlledValuesRequestsOnly,
				MinAllowed:          &ResourceAmounts{CPU: ptr.To(resource.MustParse("100m")), Memory: ptr.To(resource.MustParse("64Mi"))},
				MaxAllowed:          &ResourceAmounts{CPU: ptr.To(resource.MustParse("2")), Memory: ptr.To(resource.MustParse("2Gi"))},
				StartupBoost: &StartupBoost{CPU: CPUStartupBoost{Type: CPUBoostFactor, Factor: ptr.To[int32](3),
					Quantity: ptr.To(resource.MustParse("1")), DurationSeconds: ptr.To[int32](10)}},
			}}},
			Behavior: &Behavior{
				ScaleUp: &ScaleUpBehavior{
					CPUThrottledPercent:     20,
					MemoryWorkingSetPercent: 85,
					OnOOMKill:               OOMKillActionGrow,
				},
				ScaleDown:             &ScaleDownBehavior{StabilizationWindowSeconds: ptr.To[int32](120), MaxStepPercent: 25},
				MemoryHeadroomPercent: ptr.To[int32](25),
				MaxResizesPerHour:     12,
				Deferred:              &DeferredBehavior{Action: DeferredActionEvict, AfterSeconds: ptr.To[int32](60)},
			},
		},
		Status: SnugPolicyStatus{
			ObservedGeneration:    4,
			Selector:              "app=web",
			UncontrolledResources: []corev1.ResourceName{corev1.ResourceCPU},
			Recommendation: &RecommendedPodResources{ContainerRecommendations: []RecommendedContainerResources{{
				ContainerName:  "app",
				Target:         rl("250m", "256Mi"),
				LowerBound:     rl("200m", "200Mi"),
				UpperBound:     rl("400m", "400Mi"),
				UncappedTarget: rl("250m", "256Mi"),
			}}},
			Conditions: []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: "Resolved"}},
			Restarts:   []RestartRecord{{PodName: "web-1", Time: metav1.NewTime(time.Unix(1, 0)), Message: "app (memory)"}},
		},
	}
}

// zeroFields lists the paths of zero-valued fields in v, descending into
// snug's own types only.
func zeroFields(path string, v reflect.Value) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []string{path}
		}
		return zeroFields(path, v.Elem())
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return []string{path}
		}
		if v.Kind() == reflect.Slice {
			return zeroFields(path+"[0]", v.Index(0))
		}
		return nil
	case reflect.Struct:
		if v.Type().PkgPath() != reflect.TypeFor[SnugPolicy]().PkgPath() {
			if v.IsZero() {
				return []string{path}
			}
			return nil
		}
		var out []string
		for i := range v.NumField() {
			out = append(out, zeroFields(path+"."+v.Type().Field(i).Name, v.Field(i))...)
		}
		return out
	default:
		if v.IsZero() {
			return []string{path}
		}
		return nil
	}
}

func TestFullSetsEveryField(t *testing.T) {
	if z := zeroFields("SnugPolicy", reflect.ValueOf(full())); len(z) > 0 {
		t.Errorf("full() leaves these fields zero; set them so deep copies are tested: %v", z)
	}
}

func TestDeepCopy(t *testing.T) {
	orig := full()
	cp := orig.DeepCopy()
	if diff := cmp.Diff(orig, cp); diff != "" {
		t.Fatalf("copy differs (-orig +copy):\n%s", diff)
	}
	// Change everything reachable in the copy; the original must not move.
	cp.Spec.TargetRef.Name = "other"
	cp.Spec.Selector.MatchLabels["app"] = "other"
	*cp.Spec.UpdatePolicy.MinReplicas = 9
	*cp.Spec.UpdatePolicy.RestartWindow.MinIntervalSeconds = 9
	*cp.Spec.UpdatePolicy.RestartWindow.MinShrinkPercent = 9
	p := &cp.Spec.ResourcePolicy.ContainerPolicies[0]
	p.ControlledResources[0] = corev1.ResourceMemory
	*p.MinAllowed.CPU = resource.MustParse("1")
	*p.MaxAllowed.Memory = resource.MustParse("3Gi")
	cp.Spec.Behavior.ScaleUp.CPUThrottledPercent = 99
	*cp.Spec.Behavior.ScaleDown.StabilizationWindowSeconds = 9
	*cp.Spec.Behavior.MemoryHeadroomPercent = 9
	*cp.Spec.Behavior.Deferred.AfterSeconds = 9
	cp.Status.Restarts[0].PodName = "other"
	r := &cp.Status.Recommendation.ContainerRecommendations[0]
	r.Target[corev1.ResourceCPU] = resource.MustParse("9")
	r.LowerBound[corev1.ResourceCPU] = resource.MustParse("9")
	r.UpperBound[corev1.ResourceCPU] = resource.MustParse("9")
	r.UncappedTarget[corev1.ResourceCPU] = resource.MustParse("9")
	cp.Status.Conditions[0].Status = metav1.ConditionFalse
	if diff := cmp.Diff(full(), orig); diff != "" {
		t.Errorf("changing the copy changed the original (-want +got):\n%s", diff)
	}

	list := &SnugPolicyList{Items: []SnugPolicy{*full()}}
	var obj runtime.Object = list.DeepCopyObject()
	lcp, ok := obj.(*SnugPolicyList)
	if !ok {
		t.Fatalf("DeepCopyObject returned %T", obj)
	}
	lcp.Items[0].Spec.TargetRef.Name = "other"
	if list.Items[0].Spec.TargetRef.Name != "web" {
		t.Error("changing the list copy changed the original")
	}
}

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for obj, kind := range map[runtime.Object]string{&SnugPolicy{}: "SnugPolicy", &SnugPolicyList{}: "SnugPolicyList"} {
		gvks, _, err := s.ObjectKinds(obj)
		if err != nil {
			t.Fatal(err)
		}
		if want := SchemeGroupVersion.WithKind(kind); len(gvks) != 1 || gvks[0] != want {
			t.Errorf("%T kinds = %v, want %v", obj, gvks, want)
		}
	}
	if !s.Recognizes(SchemeGroupVersion.WithKind("ListOptions")) {
		t.Error("the meta types (ListOptions) are not registered for the group version")
	}
	if got, want := Resource("snugpolicies"), SnugPolicyResource.GroupResource(); got != want {
		t.Errorf("Resource = %v, want %v", got, want)
	}
}
