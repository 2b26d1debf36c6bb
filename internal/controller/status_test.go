package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
)

func TestConditionsFor(t *testing.T) {
	resolved := resolution{reason: v1alpha1.ReasonResolved, message: "pods selected through Deployment web", selector: "app=web"}
	notFound := resolution{reason: v1alpha1.ReasonTargetNotFound, message: "Deployment web not found"}
	type want map[string]string // type -> "Status/Reason"
	tests := []struct {
		name string
		o    observation
		want want
	}{
		{"resolved with pods", observation{mode: v1alpha1.UpdateModeInPlace, target: resolved, pods: 2}, want{
			v1alpha1.ConditionReady: "True/Resolved", v1alpha1.ConditionNoPodsMatched: "False/PodsMatched",
			v1alpha1.ConditionConfigUnsupported: "False/Supported", v1alpha1.ConditionOverlapping: "False/NoOverlap",
			v1alpha1.ConditionHPAConflict: "False/NoHPAOnControlledResources", v1alpha1.ConditionRecommendationProvided: "False/NoHistory",
		}},
		{"no pods", observation{mode: v1alpha1.UpdateModeInPlace, target: resolved}, want{
			v1alpha1.ConditionReady: "True/Resolved", v1alpha1.ConditionNoPodsMatched: "True/NoPodsMatched",
		}},
		{"target not found", observation{mode: v1alpha1.UpdateModeInPlace, target: notFound}, want{
			v1alpha1.ConditionReady: "False/TargetNotFound", v1alpha1.ConditionNoPodsMatched: "Unknown/TargetNotResolved",
		}},
		{"initial", observation{mode: v1alpha1.UpdateModeInitial, target: resolved, pods: 1}, want{
			v1alpha1.ConditionReady: "True/Resolved", v1alpha1.ConditionConfigUnsupported: "False/Supported",
		}},
		{"hpa on cpu", observation{mode: v1alpha1.UpdateModeInPlace, target: resolved, pods: 1,
			hpa: map[corev1.ResourceName][]string{corev1.ResourceCPU: {"web"}}}, want{
			v1alpha1.ConditionReady: "True/Resolved", v1alpha1.ConditionHPAConflict: "True/HPAScalesResource",
		}},
		{"recommendation", observation{mode: v1alpha1.UpdateModeOff, target: resolved, pods: 1, recommendation: true}, want{
			v1alpha1.ConditionRecommendationProvided: "True/HistoryAvailable",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := conditionsFor(tt.o)
			if len(got) != 7 {
				t.Errorf("%d conditions, want one of each of 7 types", len(got))
			}
			for typ, sr := range tt.want {
				c := meta.FindStatusCondition(got, typ)
				if c == nil {
					t.Errorf("no %s condition", typ)
					continue
				}
				if g := string(c.Status) + "/" + c.Reason; g != sr {
					t.Errorf("%s = %s, want %s (%s)", typ, g, sr, c.Message)
				}
			}
		})
	}
}

func TestHPAConditionMessage(t *testing.T) {
	got := conditionsFor(observation{target: resolution{reason: v1alpha1.ReasonResolved}, pods: 1,
		hpa: map[corev1.ResourceName][]string{corev1.ResourceMemory: {"m"}, corev1.ResourceCPU: {"a", "b"}}})
	c := meta.FindStatusCondition(got, v1alpha1.ConditionHPAConflict)
	want := "the target is scaled horizontally on cpu (HorizontalPodAutoscaler a, b) and memory (HorizontalPodAutoscaler m); snug leaves these resources alone"
	if c.Message != want {
		t.Errorf("message\n got %q\nwant %q", c.Message, want)
	}
}

func TestMergeConditionsKeepsTransitionTime(t *testing.T) {
	c := func(s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionReady, Status: s, Reason: reason}
	}
	first := mergeConditions(nil, []metav1.Condition{c(metav1.ConditionTrue, "Resolved")}, 1, t0)
	same := mergeConditions(first, []metav1.Condition{c(metav1.ConditionTrue, "Resolved")}, 2, t0.Add(time.Minute))
	flipped := mergeConditions(same, []metav1.Condition{c(metav1.ConditionFalse, "TargetNotFound")}, 2, t0.Add(2*time.Minute))
	times := []time.Time{first[0].LastTransitionTime.Time, same[0].LastTransitionTime.Time, flipped[0].LastTransitionTime.Time}
	if diff := cmp.Diff([]time.Time{t0, t0, t0.Add(2 * time.Minute)}, times); diff != "" {
		t.Errorf("transition times (-want +got):\n%s", diff)
	}
	if same[0].ObservedGeneration != 2 {
		t.Errorf("observedGeneration %d, want 2", same[0].ObservedGeneration)
	}
	if first[0].ObservedGeneration != 1 {
		t.Error("mergeConditions changed its input")
	}
}

func TestConditionEvents(t *testing.T) {
	c := func(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: typ + " " + reason}
	}
	ready := c(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonResolved)
	notFound := c(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonTargetNotFound)
	hpa := c(v1alpha1.ConditionHPAConflict, metav1.ConditionTrue, v1alpha1.ReasonHPAScalesResource)
	noHPA := c(v1alpha1.ConditionHPAConflict, metav1.ConditionFalse, "NoHPAOnControlledResources")
	tests := []struct {
		name          string
		before, after []metav1.Condition
		want          []string
	}{
		{"first time, all fine", nil, []metav1.Condition{ready, noHPA}, nil},
		{"target lost", []metav1.Condition{ready}, []metav1.Condition{notFound}, []string{EventTargetNotFound}},
		{"unchanged: no repeat", []metav1.Condition{notFound, hpa}, []metav1.Condition{notFound, hpa}, nil},
		{"hpa appears", []metav1.Condition{noHPA}, []metav1.Condition{hpa}, []string{EventHPAConflict}},
		{"config unsupported", nil, []metav1.Condition{c(v1alpha1.ConditionConfigUnsupported, metav1.ConditionTrue, "Unsupported")}, []string{EventConfigUnsupported}},
		{"overlap", nil, []metav1.Condition{c(v1alpha1.ConditionOverlapping, metav1.ConditionTrue, v1alpha1.ReasonOlderPolicyWins)}, []string{EventOverlapping}},
		{"vpa", []metav1.Condition{c(v1alpha1.ConditionVPAConflict, metav1.ConditionFalse, reasonNoVPA)},
			[]metav1.Condition{c(v1alpha1.ConditionVPAConflict, metav1.ConditionTrue, v1alpha1.ReasonYieldsToVPA)}, []string{EventVPAConflict}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range conditionEvents(tt.before, tt.after) {
				got = append(got, e.reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
