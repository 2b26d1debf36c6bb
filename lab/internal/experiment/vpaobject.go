package experiment

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/snug-dev/snug/lab/internal/lab/vpa"
)

// VPAObject is a VerticalPodAutoscaler for a Deployment, with upstream's
// defaults for everything not named here.
type VPAObject struct {
	// Name is the object's name; Deployment the target's.
	Name, Deployment string
	// UpdateMode is spec.updatePolicy.updateMode: Off, Initial, Recreate,
	// InPlaceOrRecreate, Auto.
	UpdateMode string
	// ControlledValues, when set, is the one container policy's
	// controlledValues (RequestsAndLimits or RequestsOnly) for every
	// container ("*").
	ControlledValues string
	// ControlledResources, when set with ControlledValues, is that container
	// policy's controlledResources.
	ControlledResources []string
}

// Build returns the object.
func (v VPAObject) Build() *unstructured.Unstructured {
	spec := map[string]any{
		"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": v.Deployment},
		"updatePolicy": map[string]any{"updateMode": v.UpdateMode},
	}
	if v.ControlledValues != "" {
		cp := map[string]any{"containerName": "*", "controlledValues": v.ControlledValues}
		if len(v.ControlledResources) > 0 {
			rs := make([]any, len(v.ControlledResources))
			for i, r := range v.ControlledResources {
				rs[i] = r
			}
			cp["controlledResources"] = rs
		}
		spec["resourcePolicy"] = map[string]any{"containerPolicies": []any{cp}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.k8s.io/v1",
		"kind":       "VerticalPodAutoscaler",
		"metadata":   map[string]any{"name": v.Name},
		"spec":       spec,
	}}
}

// Create creates the object in ns.
func (v VPAObject) Create(ctx context.Context, dyn dynamic.Interface, ns string) error {
	if _, err := dyn.Resource(vpa.VPAResource).Namespace(ns).Create(ctx, v.Build(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating VerticalPodAutoscaler %s/%s (%s): %w", ns, v.Name, v.UpdateMode, err)
	}
	return nil
}

// VPATarget reads status.recommendation's target for container from a
// VerticalPodAutoscaler: cpu in millicores and memory in bytes. ok is false
// while there is no recommendation for it.
func VPATarget(u *unstructured.Unstructured, container string) (cpuMillis, memBytes int64, ok bool) {
	recs, _, _ := unstructured.NestedSlice(u.Object, "status", "recommendation", "containerRecommendations")
	for _, r := range recs {
		m, _ := r.(map[string]any)
		if m == nil || m["containerName"] != container {
			continue
		}
		cpu, _, _ := unstructured.NestedString(m, "target", "cpu")
		mem, _, _ := unstructured.NestedString(m, "target", "memory")
		if cpu == "" {
			return 0, 0, false
		}
		c, err := resource.ParseQuantity(cpu)
		if err != nil {
			return 0, 0, false
		}
		if q, err := resource.ParseQuantity(mem); err == nil {
			memBytes = q.Value()
		}
		return c.MilliValue(), memBytes, true
	}
	return 0, 0, false
}
