package experiment

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// DeleteNamespace deletes the namespace ns of an experiment, a demo or a
// test, and waits up to timeout until it is gone. Its pods are deleted
// first with a grace period of 0, so that the namespace does not wait out
// their termination. A namespace already gone is no error.
func DeleteNamespace(ctx context.Context, client kubernetes.Interface, ns string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Best effort: the namespace's deletion deletes what this misses.
	_ = client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	nsc := client.CoreV1().Namespaces()
	err := nsc.Delete(ctx, ns, metav1.DeleteOptions{})
	if err == nil || apierrors.IsNotFound(err) {
		err = poll(ctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
			_, gerr := nsc.Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(gerr), nil
		})
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("still there after %s", timeout)
	}
	if err != nil {
		return fmt.Errorf("deleting namespace %s: %w", ns, err)
	}
	return nil
}
