package policy

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// Selectors keeps each policy's parsed pod selector (Selector) for as long
// as what it is parsed from stays: the policy's spec (its generation) and
// its resolved status.selector. Parsed afresh at each use, a namespace of
// P policies costs P parses whenever one pod is matched against them (the
// controller's overlap check in every reconcile, every pod event, every
// admission), so the controller's CPU grew with P² (docs/scale.md). A
// parsed Selector is only read, so its users share it. Safe for
// concurrent use; the zero value is ready, and a nil *Selectors parses
// each time.
type Selectors struct {
	mu sync.Mutex
	m  map[types.NamespacedName]parsedSelector
}

type parsedSelector struct {
	uid        types.UID
	generation int64
	status     string
	sel        labels.Selector
	ok         bool
}

// Selector is Selector(p), parsed once per spec and status selector.
func (s *Selectors) Selector(p *v1alpha1.SnugPolicy) (labels.Selector, bool) {
	if s == nil {
		return Selector(p)
	}
	k := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	s.mu.Lock()
	e, found := s.m[k]
	s.mu.Unlock()
	if found && e.uid == p.UID && e.generation == p.Generation && e.status == p.Status.Selector {
		return e.sel, e.ok
	}
	sel, ok := Selector(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[types.NamespacedName]parsedSelector{}
	}
	s.m[k] = parsedSelector{uid: p.UID, generation: p.Generation, status: p.Status.Selector, sel: sel, ok: ok}
	return sel, ok
}

// Forget drops a deleted policy's selector.
func (s *Selectors) Forget(namespace, name string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, types.NamespacedName{Namespace: namespace, Name: name})
}

// Len is how many selectors s keeps.
func (s *Selectors) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Covers is Covers with s's selectors.
func (s *Selectors) Covers(p *v1alpha1.SnugPolicy, pod *corev1.Pod) bool {
	if p.Namespace != pod.Namespace {
		return false
	}
	sel, ok := s.Selector(p)
	return ok && sel.Matches(labels.Set(pod.Labels))
}

// Match is Match with s's selectors.
func (s *Selectors) Match(policies []*v1alpha1.SnugPolicy, pod *corev1.Pod) *v1alpha1.SnugPolicy {
	var best *v1alpha1.SnugPolicy
	for _, p := range policies {
		if !s.Covers(p, pod) {
			continue
		}
		if best == nil || Older(p, best) {
			best = p
		}
	}
	return best
}
