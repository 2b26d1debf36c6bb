package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/recommend"
)

// Reasons of conditions that the API package leaves to the controller.
const (
	reasonSupported        = "Supported"
	reasonPodsMatched      = "PodsMatched"
	reasonNoPodsMatched    = "NoPodsMatched"
	reasonTargetUnresolved = "TargetNotResolved"
	reasonNoOverlap        = "NoOverlap"
	reasonNoHPA            = "NoHPAOnControlledResources"
	reasonHistory          = "HistoryAvailable"
	reasonNoHistory        = "NoHistory"
)

// resolution is what became of a policy's target.
type resolution struct {
	// reason is v1alpha1.ReasonResolved, ReasonTargetNotFound or
	// ReasonTargetUnsupported; message says why in words.
	reason, message string
	// selector is the selector's string form when resolved.
	selector string
}

func (r resolution) resolved() bool { return r.reason == v1alpha1.ReasonResolved }

// observation is everything the conditions of one policy depend on.
type observation struct {
	mode    v1alpha1.UpdateMode
	target  resolution
	pods    int // pods the policy governs (shared pods of a younger policy excluded)
	overlap overlap
	// hpa maps each resource an HPA scales the target on to the HPAs' names.
	hpa map[corev1.ResourceName][]string
	// vpas are the VPAs that are not Off and act on the policy's pods.
	vpas           []vpaView
	recommendation bool
}

// conditionsFor returns the policy's conditions for o, one per type, with
// no times set.
func conditionsFor(o observation) []metav1.Condition {
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	var out []metav1.Condition

	switch {
	case !o.target.resolved():
		out = append(out, cond(v1alpha1.ConditionReady, metav1.ConditionFalse, o.target.reason, o.target.message))
	default:
		out = append(out, cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonResolved, o.target.message))
	}

	out = append(out, cond(v1alpha1.ConditionConfigUnsupported, metav1.ConditionFalse, reasonSupported, ""))

	switch {
	case !o.target.resolved():
		out = append(out, cond(v1alpha1.ConditionNoPodsMatched, metav1.ConditionUnknown, reasonTargetUnresolved, "the target is not resolved"))
	case o.pods == 0:
		out = append(out, cond(v1alpha1.ConditionNoPodsMatched, metav1.ConditionTrue, reasonNoPodsMatched,
			fmt.Sprintf("no pod matches selector %q", o.target.selector)))
	default:
		out = append(out, cond(v1alpha1.ConditionNoPodsMatched, metav1.ConditionFalse, reasonPodsMatched,
			fmt.Sprintf("%d pods match", o.pods)))
	}

	out = append(out, o.overlap.condition())

	if len(o.hpa) == 0 {
		out = append(out, cond(v1alpha1.ConditionHPAConflict, metav1.ConditionFalse, reasonNoHPA, ""))
	} else {
		var parts []string
		for _, r := range sortedResources(o.hpa) {
			parts = append(parts, fmt.Sprintf("%s (HorizontalPodAutoscaler %s)", r, strings.Join(o.hpa[r], ", ")))
		}
		out = append(out, cond(v1alpha1.ConditionHPAConflict, metav1.ConditionTrue, v1alpha1.ReasonHPAScalesResource,
			"the target is scaled horizontally on "+strings.Join(parts, " and ")+"; snug leaves these resources alone"))
	}

	out = append(out, vpaCondition(o.vpas))

	if o.recommendation {
		out = append(out, cond(v1alpha1.ConditionRecommendationProvided, metav1.ConditionTrue, reasonHistory, ""))
	} else {
		out = append(out, cond(v1alpha1.ConditionRecommendationProvided, metav1.ConditionFalse, reasonNoHistory,
			"no pod has published usage yet"))
	}
	return out
}

// mergeConditions sets each of want in conds, keeping the transition time
// of a condition whose status did not change, and stamping now on those
// that did.
func mergeConditions(conds []metav1.Condition, want []metav1.Condition, generation int64, now time.Time) []metav1.Condition {
	out := slices.Clone(conds)
	for _, c := range want {
		c.ObservedGeneration = generation
		c.LastTransitionTime = metav1.NewTime(now)
		meta.SetStatusCondition(&out, c)
	}
	return out
}

// sortedResources returns m's keys in order.
func sortedResources[V any](m map[corev1.ResourceName]V) []corev1.ResourceName {
	keys := make([]corev1.ResourceName, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// recommendationMoved reports whether the recommendation next differs
// materially from was, the one status holds: a container came or went, or
// one of its quantities (target, bounds, uncapped target; cpu or memory)
// left the hysteresis band around was's (recommend.Config's GrowBand above,
// ShrinkBand below: a move inside it resizes no pod and seeds no pod
// differently). Status keeps was otherwise, so that a policy's status is
// not rewritten, and delivered to every watcher, after nearly every fold
// as its bounds narrow with confidence (issue 29).
func recommendationMoved(was, next *v1alpha1.RecommendedPodResources, cfg recommend.Config) bool {
	if was == nil || next == nil {
		return was != next
	}
	if len(was.ContainerRecommendations) != len(next.ContainerRecommendations) {
		return true
	}
	outside := func(a, b corev1.ResourceList) bool {
		if len(a) != len(b) {
			return true
		}
		for name, q := range b {
			o, ok := a[name]
			if !ok {
				return true
			}
			was, is := o.AsApproximateFloat64(), q.AsApproximateFloat64()
			if is > was*(1+cfg.GrowBand) || is < was*(1-cfg.ShrinkBand) {
				return true
			}
		}
		return false
	}
	for i, n := range next.ContainerRecommendations {
		w := was.ContainerRecommendations[i]
		// A target the spec capped (minAllowed, maxAllowed) is shown
		// exactly: status must never show a target beyond the policy's
		// bounds, whatever generation it was computed for.
		if !equality.Semantic.DeepEqual(w.Target, n.Target) && !equality.Semantic.DeepEqual(n.Target, n.UncappedTarget) {
			return true
		}
		if w.ContainerName != n.ContainerName || outside(w.Target, n.Target) || outside(w.LowerBound, n.LowerBound) ||
			outside(w.UpperBound, n.UpperBound) || outside(w.UncappedTarget, n.UncappedTarget) {
			return true
		}
	}
	return false
}
