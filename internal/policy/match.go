package policy

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// Selector returns the selector of the pods p covers, and false when it
// covers none yet. A policy with a targetRef selects through the
// status.selector the controller publishes once it has resolved the target
// (nothing before that); a policy with a selector selects through
// spec.selector, which needs no resolving. An empty or unparsable selector
// selects nothing: it would otherwise cover the whole namespace.
func Selector(p *v1alpha1.SnugPolicy) (labels.Selector, bool) {
	if p.Spec.TargetRef != nil {
		if p.Status.Selector == "" {
			return nil, false
		}
		sel, err := labels.Parse(p.Status.Selector)
		if err != nil || sel.Empty() {
			return nil, false
		}
		return sel, true
	}
	ls := p.Spec.Selector
	if ls == nil || (len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0) {
		return nil, false
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || sel.Empty() {
		return nil, false
	}
	return sel, true
}

// Older reports whether a is older than b: the earlier creation time, then
// the smaller name, so that of two distinct policies of a namespace exactly
// one is older. The older policy governs the pods two policies share (as
// VPA's admission picks one VPA per pod): which policy governs a pod must
// not flip as policies come and go, and the older one was there first.
func Older(a, b *v1alpha1.SnugPolicy) bool {
	return OlderThan(a.CreationTimestamp, a.Name, b.CreationTimestamp, b.Name)
}

// OlderThan is Older on a policy's creation time and name.
func OlderThan(aCreated metav1.Time, aName string, bCreated metav1.Time, bName string) bool {
	if !aCreated.Equal(&bCreated) {
		return aCreated.Before(&bCreated)
	}
	return aName < bName
}

// Covers reports whether p's selector (Selector) matches pod, in p's
// namespace.
func Covers(p *v1alpha1.SnugPolicy, pod *corev1.Pod) bool {
	return (*Selectors)(nil).Covers(p, pod)
}

// Match returns the policy that governs pod out of policies, or nil: of
// those that cover it (Covers), the oldest (Older). Policies of other
// namespaces are skipped, so policies may be all of the cluster's.
func Match(policies []*v1alpha1.SnugPolicy, pod *corev1.Pod) *v1alpha1.SnugPolicy {
	return (*Selectors)(nil).Match(policies, pod)
}
