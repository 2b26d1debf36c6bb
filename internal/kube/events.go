package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EventSink writes events for k8s.io/client-go/tools/record's broadcaster
// (it implements record.EventSink), as the typed client's EventSinkImpl
// does: each event in its own namespace.
type EventSink struct {
	Client *Client
}

// Create implements record.EventSink.
func (s EventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.Client.Events(e.Namespace).Create(context.TODO(), e, metav1.CreateOptions{})
}

// Update implements record.EventSink.
func (s EventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.Client.Events(e.Namespace).Update(context.TODO(), e, metav1.UpdateOptions{})
}

// Patch implements record.EventSink: a strategic merge patch, as the
// recorder makes to count a repeated event.
func (s EventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.Client.Events(e.Namespace).Patch(context.TODO(), e.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
