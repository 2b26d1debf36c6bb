package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
)

// peer is a policy as overlap detection sees it.
type peer struct {
	name    string
	created time.Time
	// sel is the policy's resolved selector; nil if it has none yet.
	sel labels.Selector
}

// olderThan orders policies as policy.Older, the agents' order.
func (p peer) olderThan(q peer) bool {
	return policy.OlderThan(metav1.NewTime(p.created), p.name, metav1.NewTime(q.created), q.name)
}

// overlap names the other policies that select some of a policy's pods.
type overlap struct {
	// older are the older policies; they govern the shared pods.
	older []string
	// younger are the younger policies; they yield the shared pods.
	younger []string
}

// condition is the Overlapping condition for o.
func (o overlap) condition() metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionOverlapping}
	switch {
	case len(o.older) > 0:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonYieldsToOlderPolicy
		c.Message = fmt.Sprintf("some pods are also selected by the older %s, which governs them; this policy leaves them alone", policyList(o.older))
		if len(o.younger) > 0 {
			c.Message += fmt.Sprintf("; it governs the pods it shares with the younger %s", policyList(o.younger))
		}
	case len(o.younger) > 0:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonOlderPolicyWins
		c.Message = fmt.Sprintf("some pods are also selected by the younger %s; this policy is older and governs them", policyList(o.younger))
	default:
		c.Status, c.Reason = metav1.ConditionFalse, reasonNoOverlap
	}
	return c
}

func policyList(names []string) string {
	if len(names) == 1 {
		return "policy " + names[0]
	}
	return "policies " + strings.Join(names, ", ")
}

// findOverlap returns the pods that self governs out of pods (those its
// selector matches and no older peer also matches) and the overlap with
// its peers. Peers without a selector and self itself (by name) are
// skipped. The older policy wins a shared pod, as VPA's admission picks
// one VPA per pod: which policy governs a pod must not flip as policies
// come and go, and the older one was there first.
func findOverlap(self peer, peers []peer, pods []*corev1.Pod) ([]*corev1.Pod, overlap) {
	var governed []*corev1.Pod
	var o overlap
	for _, pod := range pods {
		set := labels.Set(pod.Labels)
		if self.sel == nil || !self.sel.Matches(set) {
			continue
		}
		yielded := false
		for _, q := range peers {
			if q.name == self.name || q.sel == nil || !q.sel.Matches(set) {
				continue
			}
			if q.olderThan(self) {
				yielded = true
				o.older = appendOnce(o.older, q.name)
			} else {
				o.younger = appendOnce(o.younger, q.name)
			}
		}
		if !yielded {
			governed = append(governed, pod)
		}
	}
	return governed, o
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	s = append(s, v)
	slices.Sort(s)
	return s
}
