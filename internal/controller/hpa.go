package controller

import (
	"slices"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// hpaResources returns, for a policy's target, each of cpu and memory that
// a HorizontalPodAutoscaler in hpas scales the same workload on, with the
// names of those HPAs, sorted. Any Resource or ContainerResource metric on
// cpu or memory counts, whatever its target type: a Utilization target is
// usage over request, which a resize moves at once, and even an AverageValue
// target makes the HPA add replicas while snug grows each one, so the two
// loops answer the same signal and fight. Other metrics do not count. A
// policy with a selector instead of a target has no workload an HPA could
// name: nil.
func hpaResources(target *v1alpha1.CrossVersionObjectReference, hpas []*autoscalingv2.HorizontalPodAutoscaler) map[corev1.ResourceName][]string {
	if target == nil {
		return nil
	}
	var out map[corev1.ResourceName][]string
	for _, h := range hpas {
		ref := h.Spec.ScaleTargetRef
		if ref.Kind != target.Kind || ref.Name != target.Name || !sameGroup(ref.APIVersion, target) {
			continue
		}
		for _, m := range h.Spec.Metrics {
			var name corev1.ResourceName
			switch {
			case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil:
				name = m.Resource.Name
			case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
				name = m.ContainerResource.Name
			default:
				continue
			}
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				continue
			}
			if out == nil {
				out = map[corev1.ResourceName][]string{}
			}
			if !slices.Contains(out[name], h.Name) {
				out[name] = append(out[name], h.Name)
				slices.Sort(out[name])
			}
		}
	}
	return out
}

// sameGroup reports whether an HPA's scaleTargetRef.apiVersion names the
// group the policy's target is in; an empty or unparsable one counts as the
// same (the kind and name already match).
func sameGroup(apiVersion string, target *v1alpha1.CrossVersionObjectReference) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if apiVersion == "" || err != nil {
		return true
	}
	return gv.Group == targetGroup(target.Kind)
}

// targetGroup is the API group of a target kind.
func targetGroup(kind string) string {
	if kind == "Job" || kind == "CronJob" {
		return "batch"
	}
	return "apps"
}

// uncontrolled returns the resources of hpaResources as a sorted list, for
// status.uncontrolledResources.
func uncontrolled(hpa map[corev1.ResourceName][]string) []corev1.ResourceName {
	if len(hpa) == 0 {
		return nil
	}
	return sortedResources(hpa)
}
