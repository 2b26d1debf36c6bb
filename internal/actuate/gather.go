package actuate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/snug-dev/snug/internal/resize"
)

// Target is what the planner needs to know about one pod, as read from the
// API server.
type Target struct {
	// Pod is the pod, spec and status.
	Pod *corev1.Pod
	// NodeAllocatable is status.allocatable of the pod's node; nil when the
	// pod is not bound to a node.
	NodeAllocatable corev1.ResourceList
	// OthersClaimed is what the other pods on that node claim (resize.Claimed).
	OthersClaimed corev1.ResourceList
	// Reserve is the room a grow leaves free there for the replacement of
	// a higher-priority pod (resize.PreemptionReserve).
	Reserve corev1.ResourceList
}

// Input returns the planner's input for a wish on this target.
func (t *Target) Input(wish resize.Wish, usage map[string]resize.Usage, opts resize.Options) resize.Input {
	return resize.Input{
		Pod:             t.Pod,
		NodeAllocatable: t.NodeAllocatable,
		OthersClaimed:   t.OthersClaimed,
		Reserve:         t.Reserve,
		Usage:           usage,
		Wish:            wish,
		Options:         opts,
	}
}

// Gather reads the pod namespace/name, its node's allocatable, the claims
// of the other pods on that node (listed with the field selector
// spec.nodeName) and the room to leave there for a higher-priority pod. A
// missing pod is an error wrapping ErrPodNotFound that says whether the
// namespace exists at all.
func (a *Actuator) Gather(ctx context.Context, namespace, name string) (*Target, error) {
	pod, err := a.Client.GetPod(ctx, namespace, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, nerr := a.Client.GetNamespace(ctx, namespace, metav1.GetOptions{}); apierrors.IsNotFound(nerr) {
			return nil, fmt.Errorf("reading pod %s/%s: %w: namespace %q does not exist", namespace, name, ErrPodNotFound, namespace)
		}
		return nil, fmt.Errorf("reading pod %s/%s: %w", namespace, name, ErrPodNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading pod %s/%s: %w", namespace, name, err)
	}
	t := &Target{Pod: pod}
	if pod.Spec.NodeName == "" {
		return t, nil
	}
	node, err := a.Client.GetNode(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading node %s of pod %s/%s: %w", pod.Spec.NodeName, namespace, name, err)
	}
	t.NodeAllocatable = node.Status.Allocatable
	pods, err := a.Client.ListPods(ctx, "", metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", pod.Spec.NodeName).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("listing pods on node %s: %w", pod.Spec.NodeName, err)
	}
	t.OthersClaimed = resize.Claimed(pods.Items, pod.UID)
	t.Reserve = resize.PreemptionReserve(pods.Items, pod)
	return t, nil
}
