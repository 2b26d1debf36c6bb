package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// event is an event to record for a condition change.
type event struct{ reason, message string }

// conditionEvents returns an event for each condition that turned into
// something a user can act on between before and after: Ready False for a
// missing or unsupported target, ConfigUnsupported, Overlapping,
// HPAConflict and VPAConflict True. A condition that stays as it was gives none, so a
// resync does not repeat it.
func conditionEvents(before, after []metav1.Condition) []event {
	var out []event
	for _, c := range after {
		old := meta.FindStatusCondition(before, c.Type)
		if old != nil && old.Status == c.Status && old.Reason == c.Reason {
			continue
		}
		switch {
		case c.Type == v1alpha1.ConditionReady && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonTargetNotFound:
			out = append(out, event{EventTargetNotFound, c.Message})
		case c.Type == v1alpha1.ConditionReady && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonTargetUnsupported:
			out = append(out, event{EventTargetUnsupported, c.Message})
		case c.Type == v1alpha1.ConditionConfigUnsupported && c.Status == metav1.ConditionTrue:
			out = append(out, event{EventConfigUnsupported, c.Message})
		case c.Type == v1alpha1.ConditionOverlapping && c.Status == metav1.ConditionTrue:
			out = append(out, event{EventOverlapping, c.Message})
		case c.Type == v1alpha1.ConditionHPAConflict && c.Status == metav1.ConditionTrue:
			out = append(out, event{EventHPAConflict, c.Message})
		case c.Type == v1alpha1.ConditionVPAConflict && c.Status == metav1.ConditionTrue:
			out = append(out, event{EventVPAConflict, c.Message})
		}
	}
	return out
}

// NewRecorder returns an event recorder that sends events through cs as
// component "snug-controller", and a function that stops it.
func NewRecorder(cs kubernetes.Interface) (record.EventRecorder, func()) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err) // the built-in types always register
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	return b.NewRecorder(scheme, corev1.EventSource{Component: "snug-controller"}), b.Shutdown
}
