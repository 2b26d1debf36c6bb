package agent

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/kube"
	"github.com/snug-dev/snug/internal/policy"
)

// PolicyLister lists the SnugPolicies the agent knows of and tells of
// their changes.
type PolicyLister interface {
	// List returns the policies of namespace ns. The caller must not
	// modify them.
	List(ns string) []*v1alpha1.SnugPolicy
	// OnChange registers f, called with the namespace and name of each
	// policy added, changed or deleted (deleted true), on the informer's
	// goroutine: f must only record it.
	OnChange(f func(namespace, name string, deleted bool)) error
}

// informerLister lists an informer's store of policies by namespace.
type informerLister struct{ inf cache.SharedIndexInformer }

func (l informerLister) List(ns string) []*v1alpha1.SnugPolicy {
	objs, _ := l.inf.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	out := make([]*v1alpha1.SnugPolicy, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*v1alpha1.SnugPolicy); ok {
			out = append(out, p)
		}
	}
	return out
}

func (l informerLister) OnChange(f func(namespace, name string, deleted bool)) error {
	if _, err := l.inf.AddEventHandler(policyHandler(f)); err != nil {
		return fmt.Errorf("watching snugpolicies: %w", err)
	}
	return nil
}

// policyHandler tells f of each policy added, deleted or changed in what
// the agent reads of it (policyMeaningChanged).
func policyHandler(f func(namespace, name string, deleted bool)) cache.ResourceEventHandlerFuncs {
	tell := func(o any, deleted bool) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if p, ok := o.(*v1alpha1.SnugPolicy); ok {
			f(p.Namespace, p.Name, deleted)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { tell(o, false) },
		UpdateFunc: func(old, o any) {
			if policyMeaningChanged(old, o) {
				tell(o, false)
			}
		},
		DeleteFunc: func(o any) { tell(o, true) },
	}
}

// policyMeaningChanged reports whether an update of a policy changed what
// the agent reads of it: its spec (generation), status.selector,
// status.uncontrolledResources or whether it yields to a VPA. The
// controller rewrites the rest of the status (recommendation, conditions'
// messages) without changing which pods it governs or how, and such an
// update must not make every pod of the namespace bind again on every
// node (issue 29). A resync (same object) changes nothing.
func policyMeaningChanged(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*v1alpha1.SnugPolicy)
	n, ok2 := newObj.(*v1alpha1.SnugPolicy)
	if !ok1 || !ok2 {
		return true
	}
	return o.UID != n.UID || o.Generation != n.Generation ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		o.Status.Selector != n.Status.Selector ||
		!slices.Equal(o.Status.UncontrolledResources, n.Status.UncontrolledResources) ||
		policy.YieldsToVPA(o) != policy.YieldsToVPA(n)
}

// WatchPolicies runs an informer over every SnugPolicy in the cluster and
// returns a lister of its cache. It waits up to syncTimeout for the first
// list; when the CRD is not installed (or the list fails for another
// reason) it returns the lister anyway, with an error to log: the informer
// keeps retrying, and policies show up once the CRD exists.
func WatchPolicies(ctx context.Context, pc *policyclient.Client, syncTimeout time.Duration) (PolicyLister, error) {
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			return pc.SnugPolicies("").List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			return pc.SnugPolicies("").Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &v1alpha1.SnugPolicy{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := inf.SetTransform(kube.StripManagedFields); err != nil {
		return informerLister{inf}, err
	}
	go inf.Run(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	l := informerLister{inf}
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		return l, fmt.Errorf("listing snugpolicies: not done after %v (is the CRD installed?)", syncTimeout)
	}
	return l, nil
}

// containerRules is what a container policy means to the recommender and
// the planner.
type containerRules = policy.Rules
