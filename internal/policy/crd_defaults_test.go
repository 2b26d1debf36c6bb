package policy

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/config/crd"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
)

// defaulted returns spec with the CRD schema's defaults applied, as the API
// server applies them on create.
func defaulted(t *testing.T, spec map[string]any) *v1alpha1.SnugPolicy {
	t.Helper()
	c, err := crd.SnugPolicies()
	if err != nil {
		t.Fatal(err)
	}
	var v1props *apiextensionsv1.JSONSchemaProps
	for _, v := range c.Spec.Versions {
		if v.Name == v1alpha1.SchemeGroupVersion.Version {
			v1props = v.Schema.OpenAPIV3Schema
		}
	}
	if v1props == nil {
		t.Fatalf("the CRD has no version %s", v1alpha1.SchemeGroupVersion.Version)
	}
	obj := map[string]any{"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "SnugPolicy", "spec": spec}
	applyDefaults(t, obj, v1props)
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var p v1alpha1.SnugPolicy
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// applyDefaults sets the schema's default of every absent property, top
// down, as the API server's structural defaulting does (its package,
// k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting, would
// pull cel-go into go.mod for this one test).
func applyDefaults(t *testing.T, x any, s *apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	switch v := x.(type) {
	case map[string]any:
		for name, prop := range s.Properties {
			if _, ok := v[name]; !ok && prop.Default != nil {
				var d any
				if err := json.Unmarshal(prop.Default.Raw, &d); err != nil {
					t.Fatalf("default of %s: %v", name, err)
				}
				v[name] = d
			}
			if child, ok := v[name]; ok {
				applyDefaults(t, child, &prop)
			}
		}
	case []any:
		if s.Items == nil || s.Items.Schema == nil {
			return
		}
		for _, item := range v {
			applyDefaults(t, item, s.Items.Schema)
		}
	}
}

// TestDefaultsMatchCRD checks each default constant against the CRD's
// schema: a changed +kubebuilder:default marker without the code (or the
// code without the marker) fails here.
func TestDefaultsMatchCRD(t *testing.T) {
	p := defaulted(t, map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}})
	s := p.Spec
	if s.UpdatePolicy == nil || s.Behavior == nil || s.ResourcePolicy == nil ||
		s.Behavior.ScaleUp == nil || s.Behavior.ScaleDown == nil || s.Behavior.Deferred == nil ||
		s.Behavior.MemoryHeadroomPercent == nil || s.Behavior.ScaleDown.StabilizationWindowSeconds == nil ||
		s.Behavior.Deferred.AfterSeconds == nil || s.UpdatePolicy.MinReplicas == nil {
		t.Fatalf("the CRD no longer defaults every field this test reads: %+v", s)
	}
	if n := len(s.ResourcePolicy.ContainerPolicies); n != 1 {
		t.Fatalf("containerPolicies defaulted to %d entries, want 1", n)
	}
	cp := s.ResourcePolicy.ContainerPolicies[0]
	type defaults struct {
		UpdateMode                 v1alpha1.UpdateMode
		MinReplicas                int32
		ContainerName              string
		ContainerMode              v1alpha1.ContainerScalingMode
		ControlledResources        []corev1.ResourceName
		ControlledValues           v1alpha1.ContainerControlledValues
		MemoryHeadroomPercent      int32
		MaxResizesPerHour          int32
		CPUThrottledPercent        int32
		MemoryWorkingSetPercent    int32
		OnOOMKill                  v1alpha1.OOMKillAction
		StabilizationWindowSeconds int32
		MaxStepPercent             int32
		DeferredAction             v1alpha1.DeferredAction
		DeferredAfterSeconds       int32
	}
	crdDefaults := defaults{
		UpdateMode: s.UpdatePolicy.UpdateMode, MinReplicas: *s.UpdatePolicy.MinReplicas,
		ContainerName: cp.ContainerName, ContainerMode: cp.Mode, ControlledResources: cp.ControlledResources, ControlledValues: cp.ControlledValues,
		MemoryHeadroomPercent: *s.Behavior.MemoryHeadroomPercent, MaxResizesPerHour: s.Behavior.MaxResizesPerHour,
		CPUThrottledPercent: s.Behavior.ScaleUp.CPUThrottledPercent, MemoryWorkingSetPercent: s.Behavior.ScaleUp.MemoryWorkingSetPercent,
		OnOOMKill:                  s.Behavior.ScaleUp.OnOOMKill,
		StabilizationWindowSeconds: *s.Behavior.ScaleDown.StabilizationWindowSeconds, MaxStepPercent: s.Behavior.ScaleDown.MaxStepPercent,
		DeferredAction: s.Behavior.Deferred.Action, DeferredAfterSeconds: *s.Behavior.Deferred.AfterSeconds,
	}
	codeDefaults := defaults{
		UpdateMode: DefaultUpdateMode, MinReplicas: DefaultMinReplicas,
		ContainerName: DefaultContainerName, ContainerMode: DefaultContainerMode, ControlledResources: DefaultControlledResources(), ControlledValues: DefaultControlledValues,
		MemoryHeadroomPercent: DefaultMemoryHeadroomPercent, MaxResizesPerHour: DefaultMaxResizesPerHour,
		CPUThrottledPercent: DefaultCPUThrottledPercent, MemoryWorkingSetPercent: DefaultMemoryWorkingSetPercent,
		OnOOMKill:                  DefaultOnOOMKill,
		StabilizationWindowSeconds: DefaultStabilizationWindowSeconds, MaxStepPercent: DefaultMaxStepPercent,
		DeferredAction: DefaultDeferredAction, DeferredAfterSeconds: DefaultDeferredAfterSeconds,
	}
	if diff := cmp.Diff(crdDefaults, codeDefaults); diff != "" {
		t.Errorf("CRD defaults (-) and code defaults (+) differ:\n%s", diff)
	}
}

// TestUnsetMeansDefaulted checks that every effective setting of a policy
// with its fields unset (as built in code) equals that of the same policy
// after the API server's defaulting: the code reads an absent field as the
// CRD's default.
func TestUnsetMeansDefaulted(t *testing.T) {
	bare := &v1alpha1.SnugPolicy{Spec: v1alpha1.SnugPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	full := defaulted(t, map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}})
	type effective struct {
		Mode        v1alpha1.UpdateMode
		MinReplicas int32
		Rules       Rules
		Guaranteed  Rules
		Config      recommend.Config
		Options     resize.Options
		IgnoreOOM   bool
		Deferred    Deferred
		Evicts      bool
		History     recommend.Config
	}
	of := func(p *v1alpha1.SnugPolicy) effective {
		cfg, opts, err := Behavior(recommend.DefaultConfig(), p)
		if err != nil {
			t.Fatal(err)
		}
		cp := ContainerPolicy(p, "app")
		return effective{
			Mode: UpdateMode(p), MinReplicas: MinReplicas(p),
			Rules: RulesFor(cp, nil), Guaranteed: RulesForPod(cp, []corev1.ResourceName{corev1.ResourceCPU}, corev1.PodQOSGuaranteed),
			Config: cfg, Options: opts, IgnoreOOM: IgnoresOOMKills(p), Deferred: DeferredOf(p), Evicts: Evicts(p),
			History: HistoryConfig(p),
		}
	}
	// nil and [cpu, memory] controlled resources mean the same; the planner
	// reads both as both.
	opt := cmp.Transformer("both", func(r []corev1.ResourceName) []corev1.ResourceName {
		if r == nil {
			return DefaultControlledResources()
		}
		return r
	})
	if diff := cmp.Diff(of(bare), of(full), opt); diff != "" {
		t.Errorf("unset (-) and defaulted (+) policies differ:\n%s", diff)
	}
}
