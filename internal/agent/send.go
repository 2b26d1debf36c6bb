package agent

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/internal/resize"
)

// SendFunc sends a JSON patch to a pod's resize subresource and returns the
// pod as the API server stored it, or an error and the outcome it means
// (Rejected or Conflict). The Decider calls it off the loop goroutine.
type SendFunc func(ctx context.Context, pod *corev1.Pod, patch []byte) (*corev1.Pod, resize.Outcome, error)

// PatchResize is the plain SendFunc: one PATCH of pods/NAME/resize with
// application/json-patch+json. A failed test operation is a Conflict; any
// other refusal by the API server is Rejected.
func PatchResize(client kubernetes.Interface) SendFunc {
	return func(ctx context.Context, pod *corev1.Pod, patch []byte) (*corev1.Pod, resize.Outcome, error) {
		got, err := client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{}, "resize")
		if err == nil {
			return got, resize.Applied, nil
		}
		o := resize.Rejected
		if apierrors.IsConflict(err) || (apierrors.IsInvalid(err) && strings.Contains(err.Error(), "test")) {
			o = resize.Conflict
		}
		return nil, o, fmt.Errorf("patching resize of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
}
