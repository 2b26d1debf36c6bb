package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
)

func hpaOn(name, kind, target string, metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: kind, Name: target},
			Metrics:        metrics,
		},
	}
}

func resourceMetric(r corev1.ResourceName) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: r, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType},
	}}
}

func containerMetric(r corev1.ResourceName) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
		Name: r, Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType},
	}}
}

func TestHPAResources(t *testing.T) {
	web := &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{}}
	tests := []struct {
		name   string
		target *v1alpha1.CrossVersionObjectReference
		hpas   []*autoscalingv2.HorizontalPodAutoscaler
		want   map[corev1.ResourceName][]string
	}{
		{"none", web, nil, nil},
		{"cpu utilization", web, []*autoscalingv2.HorizontalPodAutoscaler{hpaOn("h", "Deployment", "web", resourceMetric(corev1.ResourceCPU))},
			map[corev1.ResourceName][]string{corev1.ResourceCPU: {"h"}}},
		{"container memory", web, []*autoscalingv2.HorizontalPodAutoscaler{hpaOn("h", "Deployment", "web", containerMetric(corev1.ResourceMemory))},
			map[corev1.ResourceName][]string{corev1.ResourceMemory: {"h"}}},
		{"both, two hpas, sorted", web, []*autoscalingv2.HorizontalPodAutoscaler{
			hpaOn("b", "Deployment", "web", resourceMetric(corev1.ResourceCPU)),
			hpaOn("a", "Deployment", "web", resourceMetric(corev1.ResourceCPU), resourceMetric(corev1.ResourceMemory)),
		}, map[corev1.ResourceName][]string{corev1.ResourceCPU: {"a", "b"}, corev1.ResourceMemory: {"a"}}},
		{"other workload", web, []*autoscalingv2.HorizontalPodAutoscaler{hpaOn("h", "Deployment", "api", resourceMetric(corev1.ResourceCPU))}, nil},
		{"other kind of same name", web, []*autoscalingv2.HorizontalPodAutoscaler{hpaOn("h", "StatefulSet", "web", resourceMetric(corev1.ResourceCPU))}, nil},
		{"pods metric only", web, []*autoscalingv2.HorizontalPodAutoscaler{hpaOn("h", "Deployment", "web", pods)}, nil},
		{"other resource", web, []*autoscalingv2.HorizontalPodAutoscaler{hpaOn("h", "Deployment", "web", resourceMetric("ephemeral-storage"))}, nil},
		{"selector policy has no workload", nil, []*autoscalingv2.HorizontalPodAutoscaler{hpaOn("h", "Deployment", "web", resourceMetric(corev1.ResourceCPU))}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hpaResources(tt.target, tt.hpas)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("hpaResources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHPAOtherGroup(t *testing.T) {
	h := hpaOn("h", "Deployment", "web", resourceMetric(corev1.ResourceCPU))
	h.Spec.ScaleTargetRef.APIVersion = "example.com/v1"
	if got := hpaResources(&v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}, []*autoscalingv2.HorizontalPodAutoscaler{h}); got != nil {
		t.Errorf("an HPA on example.com's Deployment counted: %v", got)
	}
}
