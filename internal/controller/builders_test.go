package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// t0 is the tests' reference time.
var t0 = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

// podBuilder builds test pods.
type podBuilder struct{ pod *corev1.Pod }

func newPod(name string, lbls map[string]string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: lbls,
	}}}
}

func (b *podBuilder) ready() *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	return b
}

func (b *podBuilder) deferredSince(t time.Time) *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred,
		LastTransitionTime: metav1.NewTime(t),
	})
	return b
}

func (b *podBuilder) infeasible() *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible,
		LastTransitionTime: metav1.NewTime(t0),
	})
	return b
}

func (b *podBuilder) deleting() *podBuilder {
	b.pod.DeletionTimestamp = &metav1.Time{Time: t0}
	return b
}

func (b *podBuilder) get() *corev1.Pod { return b.pod }
