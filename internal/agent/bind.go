package agent

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
)

// bindings remembers which policy governs each pod (policy.Match), so that
// a sample costs a map lookup instead of a match over every policy, and
// keeps each policy's parsed selector (policy.Selectors), so that a policy
// event, which makes every pod of its namespace bind again, parses each
// selector of the namespace once, not once per pod. A
// pod's binding is recomputed only after an informer event: the pod
// changed (its labels may have), or a policy of its namespace was added,
// changed (its status.selector published, say) or deleted. The event
// handlers only mark; the loop goroutine recomputes on its next sample of
// the pod.
type bindings struct {
	mu sync.Mutex
	// nsGen counts the policy events of each namespace.
	nsGen map[string]uint64
	// dirty are the pods changed since their binding was computed; gone
	// those deleted since the last sweep.
	dirty, gone map[types.UID]struct{}
	// latest is each pod as its last event delivered it (the informer's
	// cached object), so a sample finds its pod without a lister lookup.
	latest map[types.UID]*corev1.Pod

	// sel keeps the parsed selectors; a deleted policy's is forgotten.
	sel policy.Selectors

	// Loop goroutine only.
	bound map[types.UID]binding
}

// binding is a pod's governing policy (nil: none) as of its namespace's
// policy generation gen.
type binding struct {
	policy *v1alpha1.SnugPolicy
	gen    uint64
}

func newBindings() *bindings {
	return &bindings{nsGen: map[string]uint64{}, dirty: map[types.UID]struct{}{}, gone: map[types.UID]struct{}{}, latest: map[types.UID]*corev1.Pod{}, bound: map[types.UID]binding{}}
}

// podChanged marks a pod's binding stale and records the pod as
// delivered (informer handlers; the pod is the cache's, never modified).
func (b *bindings) podChanged(pod *corev1.Pod) {
	b.mu.Lock()
	b.dirty[pod.UID] = struct{}{}
	b.latest[pod.UID] = pod
	b.mu.Unlock()
}

// pod returns the pod with uid as its last event delivered it, if any.
func (b *bindings) pod(uid types.UID) (*corev1.Pod, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.latest[uid]
	return p, ok
}

// policiesChanged marks the bindings of a namespace's pods stale after
// policy name was added, changed or deleted (informer handlers).
func (b *bindings) policiesChanged(ns, name string, deleted bool) {
	b.mu.Lock()
	b.nsGen[ns]++
	b.mu.Unlock()
	if deleted {
		b.sel.Forget(ns, name)
	}
}

// policyFor returns the policy that governs pod, recomputing it from list
// when an event made the binding stale. Loop goroutine only.
func (b *bindings) policyFor(pod *corev1.Pod, list func(ns string) []*v1alpha1.SnugPolicy) *v1alpha1.SnugPolicy {
	b.mu.Lock()
	gen := b.nsGen[pod.Namespace]
	_, dirty := b.dirty[pod.UID]
	if dirty {
		delete(b.dirty, pod.UID)
	}
	b.mu.Unlock()
	if cur, ok := b.bound[pod.UID]; ok && !dirty && cur.gen == gen {
		return cur.policy
	}
	p := b.sel.Match(list(pod.Namespace), pod)
	b.bound[pod.UID] = binding{policy: p, gen: gen}
	return p
}

// podDeleted marks a pod gone (informer handlers).
func (b *bindings) podDeleted(uid types.UID) {
	b.mu.Lock()
	b.gone[uid] = struct{}{}
	delete(b.latest, uid)
	b.mu.Unlock()
}

// sweep drops the bindings of deleted pods. Loop goroutine only.
func (b *bindings) sweep() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for uid := range b.gone {
		delete(b.bound, uid)
		delete(b.dirty, uid)
		delete(b.gone, uid)
	}
}
