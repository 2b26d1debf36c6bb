package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/snug-dev/snug/internal/kube"
)

// The objects the controller makes at run time - the leader election
// Lease and the admission webhook's serving Secret - are not the chart's,
// so helm uninstall does not delete them. With --owner-deployment they
// carry an owner reference to the controller's own Deployment, and the
// garbage collector removes them with it: an uninstall leaves nothing, and
// a reinstall does not wait out a Lease that a controller of the old
// install still held.

// ownerReference is the reference to Deployment name in namespace ns, read
// with a list (the role's verb for Deployments) by name.
func ownerReference(ctx context.Context, cs kubernetes.Interface, ns, name string) (*metav1.OwnerReference, error) {
	l, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return nil, fmt.Errorf("--owner-deployment: reading Deployment %s/%s: %w", ns, name, err)
	}
	if len(l.Items) != 1 {
		return nil, fmt.Errorf("--owner-deployment: %w: %s/%s", errNoOwner, ns, name)
	}
	d := l.Items[0]
	return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID}, nil
}

// waitOwner reads the owner reference, retrying with a backoff while the
// API server does not answer, until ctx ends (nil). A Deployment that is
// not there is logged and gives nil: the objects then stay after an
// uninstall, and nothing else is wrong.
func waitOwner(ctx context.Context, cs kubernetes.Interface, ns, name string, log logr.Logger) *metav1.OwnerReference {
	var owner *metav1.OwnerReference
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 30 * time.Second}
	_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		o, err := ownerReference(ctx, cs, ns, name)
		switch {
		case err == nil:
			owner = o
			return true, nil
		case errors.Is(err, errNoOwner):
			log.Error(err, "the Lease and the admission Secret get no owner and stay after an uninstall")
			return true, nil
		default:
			log.Error(err, "reading the owner Deployment; retrying")
			return false, nil
		}
	})
	return owner
}

var errNoOwner = errors.New("no such Deployment")

// ownLease makes sure the Lease ns/name, which the leader holds, carries
// owner. A conflict with the leader election's own renewals is retried.
func ownLease(ctx context.Context, cs kubernetes.Interface, ns, name string, owner metav1.OwnerReference) error {
	leases := cs.CoordinationV1().Leases(ns)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		refs, changed := kube.WithOwner(l.OwnerReferences, owner)
		if !changed {
			return nil
		}
		l.OwnerReferences = refs
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
}
