package convert

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// vpa returns a VPA on Deployment web with updateMode InPlace, changed by
// each of edits.
func vpa(edits ...func(*VerticalPodAutoscaler)) *VerticalPodAutoscaler {
	v := &VerticalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: VPASpec{
			TargetRef:    &autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			UpdatePolicy: &VPAUpdatePolicy{UpdateMode: ptr.To(VPAModeInPlace)},
		},
	}
	for _, e := range edits {
		e(v)
	}
	return v
}

// policy returns the SnugPolicy vpa() converts to, changed by each of edits.
func policy(edits ...func(*v1alpha1.SnugPolicy)) *v1alpha1.SnugPolicy {
	p := &v1alpha1.SnugPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling.snug.dev/v1alpha1", Kind: "SnugPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: v1alpha1.SnugPolicySpec{
			TargetRef:    &v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
		},
	}
	for _, e := range edits {
		e(p)
	}
	return p
}

func mode(m v1alpha1.UpdateMode, evict bool) func(*v1alpha1.SnugPolicy) {
	return func(p *v1alpha1.SnugPolicy) {
		p.Spec.UpdatePolicy.UpdateMode = m
		if evict {
			p.Spec.Behavior = &v1alpha1.Behavior{Deferred: &v1alpha1.DeferredBehavior{Action: v1alpha1.DeferredActionEvict}}
		}
	}
}

func vpaMode(m string) func(*VerticalPodAutoscaler) {
	return func(v *VerticalPodAutoscaler) { v.Spec.UpdatePolicy.UpdateMode = ptr.To(m) }
}

func vpaContainers(cps ...VPAContainerPolicy) func(*VerticalPodAutoscaler) {
	return func(v *VerticalPodAutoscaler) { v.Spec.ResourcePolicy = &VPAResourcePolicy{ContainerPolicies: cps} }
}

func containers(cps ...v1alpha1.ContainerResourcePolicy) func(*v1alpha1.SnugPolicy) {
	return func(p *v1alpha1.SnugPolicy) {
		p.Spec.ResourcePolicy = &v1alpha1.PodResourcePolicy{ContainerPolicies: cps}
	}
}

func q(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func resources(r ...corev1.ResourceName) *[]corev1.ResourceName { return &r }

// TestConvert covers every field of VPA 1.8.1's v1 spec: each maps to a
// policy field, or gives a note on that field (noted lists the notes'
// fields, in order).
func TestConvert(t *testing.T) {
	tests := []struct {
		name  string
		vpa   *VerticalPodAutoscaler
		want  *v1alpha1.SnugPolicy
		noted []string
	}{
		{name: "InPlace maps as it is", vpa: vpa(), want: policy()},
		{name: "metadata.labels are copied",
			vpa:  vpa(func(v *VerticalPodAutoscaler) { v.Labels = map[string]string{"source": "goldilocks"} }),
			want: policy(func(p *v1alpha1.SnugPolicy) { p.Labels = map[string]string{"source": "goldilocks"} })},
		{name: "targetRef without apiVersion", vpa: vpa(func(v *VerticalPodAutoscaler) { v.Spec.TargetRef.APIVersion = "" }),
			want: policy(func(p *v1alpha1.SnugPolicy) { p.Spec.TargetRef.APIVersion = "" })},
		{name: "targetRef of an old apiVersion",
			vpa:   vpa(func(v *VerticalPodAutoscaler) { v.Spec.TargetRef.APIVersion = "apps/v1beta2" }),
			want:  policy(func(p *v1alpha1.SnugPolicy) { p.Spec.TargetRef.APIVersion = "" }),
			noted: []string{"spec.targetRef.apiVersion"}},
		{name: "targetRef CronJob",
			vpa: vpa(func(v *VerticalPodAutoscaler) {
				v.Spec.TargetRef = &autoscalingv1.CrossVersionObjectReference{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly"}
			}),
			want: policy(func(p *v1alpha1.SnugPolicy) {
				p.Spec.TargetRef = &v1alpha1.CrossVersionObjectReference{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly"}
			})},
		{name: "updateMode Off", vpa: vpa(vpaMode("Off")), want: policy(mode(v1alpha1.UpdateModeOff, false))},
		{name: "updateMode Initial", vpa: vpa(vpaMode("Initial")), want: policy(mode(v1alpha1.UpdateModeInitial, false))},
		{name: "updateMode InPlaceOrRecreate", vpa: vpa(vpaMode("InPlaceOrRecreate")),
			want: policy(mode(v1alpha1.UpdateModeInPlaceOrRecreate, true)), noted: []string{"spec.updatePolicy.updateMode"}},
		{name: "updateMode Recreate", vpa: vpa(vpaMode("Recreate")),
			want: policy(mode(v1alpha1.UpdateModeInPlaceOrRecreate, true)), noted: []string{"spec.updatePolicy.updateMode"}},
		{name: "updateMode Auto", vpa: vpa(vpaMode("Auto")),
			want: policy(mode(v1alpha1.UpdateModeInPlaceOrRecreate, true)), noted: []string{"spec.updatePolicy.updateMode"}},
		{name: "updateMode unknown", vpa: vpa(vpaMode("Sometimes")),
			want: policy(mode(v1alpha1.UpdateModeOff, false)), noted: []string{"spec.updatePolicy.updateMode"}},
		{name: "no updatePolicy means Recreate", vpa: vpa(func(v *VerticalPodAutoscaler) { v.Spec.UpdatePolicy = nil }),
			want: policy(mode(v1alpha1.UpdateModeInPlaceOrRecreate, true)), noted: []string{"spec.updatePolicy.updateMode"}},
		{name: "minReplicas", vpa: vpa(func(v *VerticalPodAutoscaler) { v.Spec.UpdatePolicy.MinReplicas = ptr.To[int32](1) }),
			want: policy(func(p *v1alpha1.SnugPolicy) { p.Spec.UpdatePolicy.MinReplicas = ptr.To[int32](1) })},
		{name: "minReplicas below 1", vpa: vpa(func(v *VerticalPodAutoscaler) { v.Spec.UpdatePolicy.MinReplicas = ptr.To[int32](0) }),
			want:  policy(func(p *v1alpha1.SnugPolicy) { p.Spec.UpdatePolicy.MinReplicas = ptr.To[int32](1) }),
			noted: []string{"spec.updatePolicy.minReplicas"}},
		{name: "evictionRequirements",
			vpa: vpa(func(v *VerticalPodAutoscaler) {
				v.Spec.UpdatePolicy.EvictionRequirements = []*VPAEvictionRequirement{{Resources: []corev1.ResourceName{"cpu"}, ChangeRequirement: "TargetHigherThanRequests"}}
			}),
			want: policy(), noted: []string{"spec.updatePolicy.evictionRequirements"}},
		{name: "evictAfterOOMSeconds", vpa: vpa(func(v *VerticalPodAutoscaler) { v.Spec.UpdatePolicy.EvictAfterOOMSeconds = ptr.To[int32](60) }),
			want: policy(), noted: []string{"spec.updatePolicy.evictAfterOOMSeconds"}},
		{name: "containerPolicies: name, mode, bounds, resources, values",
			vpa: vpa(vpaContainers(
				VPAContainerPolicy{ContainerName: "*", Mode: ptr.To("Auto"), MinAllowed: list("cpu", "25m", "memory", "128Mi"),
					MaxAllowed: list("cpu", "1", "memory", "512Mi"), ControlledResources: resources("cpu", "memory"),
					ControlledValues: ptr.To("RequestsAndLimits")},
				VPAContainerPolicy{ContainerName: "sidecar", Mode: ptr.To("Off")},
				VPAContainerPolicy{ContainerName: "app", ControlledResources: resources("memory")},
			)),
			want: policy(containers(
				v1alpha1.ContainerResourcePolicy{ContainerName: "*", Mode: v1alpha1.ContainerScalingModeAuto,
					MinAllowed: &v1alpha1.ResourceAmounts{CPU: q("25m"), Memory: q("128Mi")}, MaxAllowed: &v1alpha1.ResourceAmounts{CPU: q("1"), Memory: q("512Mi")},
					ControlledResources: []corev1.ResourceName{"cpu", "memory"}, ControlledValues: v1alpha1.ContainerControlledValuesRequestsAndLimits},
				v1alpha1.ContainerResourcePolicy{ContainerName: "sidecar", Mode: v1alpha1.ContainerScalingModeOff},
				v1alpha1.ContainerResourcePolicy{ContainerName: "app", ControlledResources: []corev1.ResourceName{"memory"}},
			))},
		{name: "controlledValues RequestsOnly",
			vpa:   vpa(vpaContainers(VPAContainerPolicy{ContainerName: "*", ControlledValues: ptr.To("RequestsOnly")})),
			want:  policy(containers(v1alpha1.ContainerResourcePolicy{ContainerName: "*", ControlledValues: v1alpha1.ContainerControlledValuesRequestsOnly})),
			noted: []string{"spec.resourcePolicy.containerPolicies[0].controlledValues"}},
		{name: "resources other than cpu and memory",
			vpa: vpa(vpaContainers(VPAContainerPolicy{ContainerName: "*", ControlledResources: resources("cpu", "ephemeral-storage"),
				MinAllowed: list("ephemeral-storage", "1Gi"), MaxAllowed: list("memory", "1Gi", "nvidia.com/gpu", "1")})),
			want: policy(containers(v1alpha1.ContainerResourcePolicy{ContainerName: "*", ControlledResources: []corev1.ResourceName{"cpu"},
				MaxAllowed: &v1alpha1.ResourceAmounts{Memory: q("1Gi")}})),
			noted: []string{"spec.resourcePolicy.containerPolicies[0].controlledResources",
				"spec.resourcePolicy.containerPolicies[0].minAllowed.ephemeral-storage",
				"spec.resourcePolicy.containerPolicies[0].maxAllowed.nvidia.com/gpu"}},
		{name: "no controlled resources means Off",
			vpa:   vpa(vpaContainers(VPAContainerPolicy{ContainerName: "app", ControlledResources: resources()})),
			want:  policy(containers(v1alpha1.ContainerResourcePolicy{ContainerName: "app", Mode: v1alpha1.ContainerScalingModeOff})),
			noted: []string{"spec.resourcePolicy.containerPolicies[0].controlledResources"}},
		{name: "unknown container mode and values",
			vpa:  vpa(vpaContainers(VPAContainerPolicy{ContainerName: "app", Mode: ptr.To("Maybe"), ControlledValues: ptr.To("LimitsOnly")})),
			want: policy(containers(v1alpha1.ContainerResourcePolicy{ContainerName: "app", Mode: v1alpha1.ContainerScalingModeOff})),
			noted: []string{"spec.resourcePolicy.containerPolicies[0].mode",
				"spec.resourcePolicy.containerPolicies[0].controlledValues"}},
		{name: "a container policy without a name is dropped",
			vpa:  vpa(vpaContainers(VPAContainerPolicy{Mode: ptr.To("Off")}, VPAContainerPolicy{ContainerName: "app"})),
			want: policy(containers(v1alpha1.ContainerResourcePolicy{ContainerName: "app"})), noted: []string{"spec.resourcePolicy.containerPolicies[0]"}},
		{name: "OOM bump-up, memory aggregation, startup boost of a container",
			vpa: vpa(vpaContainers(VPAContainerPolicy{ContainerName: "app", OOMBumpUpRatio: q("1.5"), OOMMinBumpUp: q("100Mi"),
				MemoryAggregationIntervalSeconds: ptr.To[int32](3600), MemoryAggregationIntervalCount: ptr.To[int64](8),
				StartupBoost: &VPAStartupBoost{CPU: &VPAGenericStartupBoost{Type: "Factor", Factor: ptr.To[int32](2)}}})),
			want: policy(containers(v1alpha1.ContainerResourcePolicy{ContainerName: "app",
				StartupBoost: &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: v1alpha1.CPUBoostFactor, Factor: ptr.To[int32](2)}}})),
			noted: []string{"spec.resourcePolicy.containerPolicies[0].oomBumpUpRatio/oomMinBumpUp",
				"spec.resourcePolicy.containerPolicies[0].memoryAggregationInterval*",
				"spec.resourcePolicy.containerPolicies[0].startupBoost"}},
		{name: "recommenders", vpa: vpa(func(v *VerticalPodAutoscaler) { v.Spec.Recommenders = []*VPARecommenderSelector{{Name: "custom"}} }),
			want: policy(), noted: []string{"spec.recommenders[0]"}},
		{name: "startupBoost",
			vpa: vpa(func(v *VerticalPodAutoscaler) {
				v.Spec.StartupBoost = &VPAStartupBoost{CPU: &VPAGenericStartupBoost{Type: "Quantity", Quantity: q("2"), DurationSeconds: ptr.To[int32](30)}}
			}),
			want: policy(containers(v1alpha1.ContainerResourcePolicy{ContainerName: "*",
				StartupBoost: &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: v1alpha1.CPUBoostQuantity, Quantity: q("2"), DurationSeconds: ptr.To[int32](30)}}})),
			noted: []string{"spec.startupBoost"}},
		{name: "the pod's startupBoost goes to the containers without their own",
			vpa: vpa(vpaContainers(VPAContainerPolicy{ContainerName: "app"},
				VPAContainerPolicy{ContainerName: "side", StartupBoost: &VPAStartupBoost{CPU: &VPAGenericStartupBoost{Type: "Factor", Factor: ptr.To[int32](1)}}}),
				func(v *VerticalPodAutoscaler) {
					v.Spec.StartupBoost = &VPAStartupBoost{CPU: &VPAGenericStartupBoost{Type: "Factor", Factor: ptr.To[int32](3)}}
				}),
			want: policy(containers(
				v1alpha1.ContainerResourcePolicy{ContainerName: "app", StartupBoost: &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: v1alpha1.CPUBoostFactor, Factor: ptr.To[int32](3)}}},
				v1alpha1.ContainerResourcePolicy{ContainerName: "side", StartupBoost: &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: v1alpha1.CPUBoostFactor, Factor: ptr.To[int32](1)}}},
				v1alpha1.ContainerResourcePolicy{ContainerName: "*", StartupBoost: &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: v1alpha1.CPUBoostFactor, Factor: ptr.To[int32](3)}}})),
			noted: []string{"spec.resourcePolicy.containerPolicies[1].startupBoost", "spec.startupBoost"}},
		{name: "a startupBoost beyond snug's bounds is clamped",
			vpa: vpa(func(v *VerticalPodAutoscaler) {
				v.Spec.StartupBoost = &VPAStartupBoost{CPU: &VPAGenericStartupBoost{Type: "Factor", Factor: ptr.To[int32](500), DurationSeconds: ptr.To[int32](7200)}}
			}),
			want: policy(containers(v1alpha1.ContainerResourcePolicy{ContainerName: "*",
				StartupBoost: &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: v1alpha1.CPUBoostFactor, Factor: ptr.To[int32](100), DurationSeconds: ptr.To[int32](3600)}}})),
			noted: []string{"spec.startupBoost.cpu.factor", "spec.startupBoost.cpu.durationSeconds", "spec.startupBoost"}},
		{name: "a startupBoost of an unknown type is dropped",
			vpa: vpa(func(v *VerticalPodAutoscaler) {
				v.Spec.StartupBoost = &VPAStartupBoost{CPU: &VPAGenericStartupBoost{Type: "Percent"}}
			}),
			want: policy(), noted: []string{"spec.startupBoost"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes, err := Convert(tt.vpa)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
			var fields []string
			for _, n := range notes {
				fields = append(fields, n.Field)
				if n.Message == "" {
					t.Errorf("note on %s says nothing", n.Field)
				}
			}
			if diff := cmp.Diff(tt.noted, fields); diff != "" {
				t.Errorf("noted fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConvertRefuses(t *testing.T) {
	tests := []struct {
		name, want string
		vpa        *VerticalPodAutoscaler
	}{
		{"no targetRef", "spec.targetRef", vpa(func(v *VerticalPodAutoscaler) { v.Spec.TargetRef = nil })},
		{"no target name", "spec.targetRef", vpa(func(v *VerticalPodAutoscaler) { v.Spec.TargetRef.Name = "" })},
		{"a kind snug does not size", "kind Rollout", vpa(func(v *VerticalPodAutoscaler) {
			v.Spec.TargetRef = &autoscalingv1.CrossVersionObjectReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web"}
		})},
		{"the wrong group", "spec.targetRef.apiVersion", vpa(func(v *VerticalPodAutoscaler) { v.Spec.TargetRef.APIVersion = "batch/v1" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, err := Convert(tt.vpa)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Convert = %v, %v; want an error about %s", p, err, tt.want)
			}
		})
	}
}

// fieldReportVPA is the field report's VPA manifest, as written there.
const fieldReportVPA = `
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: resize-demo
  namespace: resize-test
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: resize-demo
  updatePolicy:
    updateMode: InPlaceOrRecreate
    minReplicas: 1
  resourcePolicy:
    containerPolicies:
      - containerName: '*'
        controlledResources: ["cpu", "memory"]
        controlledValues: RequestsAndLimits
        minAllowed:
          cpu: 25m
          memory: 128Mi
        maxAllowed:
          cpu: "1"
          memory: 512Mi
        futureKnob: 3
  futureField: {a: 1}
`

// TestObject converts an object as the dynamic client gives it (the field
// report's VPA), with two fields VPA 1.8.1 does not have.
func TestObject(t *testing.T) {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(fieldReportVPA), &obj); err != nil {
		t.Fatal(err)
	}
	got, notes, err := Object(obj)
	if err != nil {
		t.Fatal(err)
	}
	want := &v1alpha1.SnugPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling.snug.dev/v1alpha1", Kind: "SnugPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "resize-demo", Namespace: "resize-test"},
		Spec: v1alpha1.SnugPolicySpec{
			TargetRef:    &v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "resize-demo"},
			UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate, MinReplicas: ptr.To[int32](1)},
			ResourcePolicy: &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
				ContainerName: "*", ControlledResources: []corev1.ResourceName{"cpu", "memory"},
				ControlledValues: v1alpha1.ContainerControlledValuesRequestsAndLimits,
				MinAllowed:       &v1alpha1.ResourceAmounts{CPU: q("25m"), Memory: q("128Mi")},
				MaxAllowed:       &v1alpha1.ResourceAmounts{CPU: q("1"), Memory: q("512Mi")},
			}}},
			Behavior: &v1alpha1.Behavior{Deferred: &v1alpha1.DeferredBehavior{Action: v1alpha1.DeferredActionEvict}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("policy (-want +got):\n%s", diff)
	}
	var fields []string
	for _, n := range notes {
		fields = append(fields, n.Field)
	}
	if diff := cmp.Diff([]string{"spec.updatePolicy.updateMode", "spec.futureField", "spec.resourcePolicy.containerPolicies[0].futureKnob"}, fields); diff != "" {
		t.Errorf("noted fields (-want +got):\n%s", diff)
	}
}

func TestActs(t *testing.T) {
	for m, want := range map[string]bool{"Off": false, "Initial": true, "Recreate": true, "Auto": true, "InPlaceOrRecreate": true, "InPlace": true} {
		if got := vpa(vpaMode(m)).Acts(); got != want {
			t.Errorf("mode %s: Acts = %v, want %v", m, got, want)
		}
	}
	if !vpa(func(v *VerticalPodAutoscaler) { v.Spec.UpdatePolicy = nil }).Acts() {
		t.Error("a VPA without updatePolicy (Recreate) does not act")
	}
}
