package testbuild

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Deployment returns a Deployment named name in Namespace whose selector
// and pod template carry the labels kv (alternating keys and values).
func Deployment(name string, kv ...string) *appsv1.Deployment {
	l := pairs(kv)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, UID: types.UID("uid-" + name)},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: podTemplate(l),
		},
	}
}

// HPA returns a HorizontalPodAutoscaler named name in Namespace that scales
// the Deployment target on the utilization of resources.
func HPA(name, target string, resources ...string) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: target},
			MaxReplicas:    4,
		},
	}
	for _, r := range resources {
		h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{
			Type:     autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceName(r), Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType}},
		})
	}
	return h
}

func podTemplate(l map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: l},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
}
