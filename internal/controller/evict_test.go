package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

func TestMayEvict(t *testing.T) {
	evict := evictRules{mode: v1alpha1.UpdateModeInPlaceOrRecreate, action: v1alpha1.DeferredActionEvict, afterSeconds: 30, minReplicas: 2}
	now := t0.Add(time.Minute)
	old := t0                            // deferred 60s ago
	recent := now.Add(-10 * time.Second) // deferred 10s ago
	l := map[string]string{"app": "web"}
	deferredOld := tb.Pod("a").LabelSet(l).Ready().DeferredSince(old).Get()
	sibling := tb.Pod("b").LabelSet(l).Ready().Get()
	tests := []struct {
		name      string
		rules     evictRules
		pod       *corev1.Pod
		pods      []*corev1.Pod
		want      bool
		recheckIn time.Duration
	}{
		{"deferred long enough, two ready", evict, deferredOld, []*corev1.Pod{deferredOld, sibling}, true, 0},
		{"deferred too shortly: recheck when due", evict,
			tb.Pod("a").LabelSet(l).Ready().DeferredSince(recent).Get(), []*corev1.Pod{sibling}, false, 20 * time.Second},
		{"exactly afterSeconds", evict, tb.Pod("a").LabelSet(l).Ready().DeferredSince(now.Add(-30 * time.Second)).Get(), []*corev1.Pod{sibling, sibling}, true, 0},
		{"mode InPlace never evicts", evictRules{mode: v1alpha1.UpdateModeInPlace, action: v1alpha1.DeferredActionEvict, afterSeconds: 30, minReplicas: 1},
			deferredOld, []*corev1.Pod{deferredOld, sibling}, false, 0},
		{"action FitToNode never evicts", evictRules{mode: v1alpha1.UpdateModeInPlaceOrRecreate, action: v1alpha1.DeferredActionFitToNode, afterSeconds: 30, minReplicas: 1},
			deferredOld, []*corev1.Pod{deferredOld, sibling}, false, 0},
		{"not deferred", evict, sibling, []*corev1.Pod{deferredOld, sibling}, false, 0},
		{"infeasible is not deferred", evict, tb.Pod("a").LabelSet(l).Ready().Infeasible().Get(), []*corev1.Pod{sibling, sibling}, false, 0},
		{"below minReplicas ready", evict, deferredOld, []*corev1.Pod{deferredOld, tb.Pod("b").LabelSet(l).Get()}, false, 0},
		{"single replica with minReplicas 2", evict, deferredOld, []*corev1.Pod{deferredOld}, false, 0},
		{"single replica with minReplicas 1", evictRules{mode: v1alpha1.UpdateModeInPlaceOrRecreate, action: v1alpha1.DeferredActionEvict, afterSeconds: 30, minReplicas: 1},
			deferredOld, []*corev1.Pod{deferredOld}, true, 0},
		{"another pod is being deleted: one at a time", evict, deferredOld,
			[]*corev1.Pod{deferredOld, sibling, tb.Pod("c").LabelSet(l).Ready().Deleting().Get()}, false, 0},
		{"pod-level resources: an eviction would not resize them", evict, func() *corev1.Pod {
			p := tb.Pod("a").LabelSet(l).Ready().DeferredSince(old).Get()
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
			return p
		}(), []*corev1.Pod{sibling, sibling}, false, 0},
		{"the pod itself is being deleted", evict, tb.Pod("a").LabelSet(l).Ready().DeferredSince(old).Deleting().Get(), []*corev1.Pod{sibling, sibling}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mayEvict(tt.rules, tt.pod, tt.pods, now)
			if v.evict != tt.want {
				t.Errorf("evict = %v, want %v (%s)", v.evict, tt.want, v.why)
			}
			if v.recheckAfter != tt.recheckIn {
				t.Errorf("recheckAfter = %s, want %s", v.recheckAfter, tt.recheckIn)
			}
			if v.why == "" {
				t.Error("no reason given")
			}
		})
	}
}

func TestRulesOf(t *testing.T) {
	if got, want := rulesOf(&v1alpha1.SnugPolicy{}), (evictRules{mode: v1alpha1.UpdateModeInPlace, action: v1alpha1.DeferredActionFitToNode, afterSeconds: 30, minReplicas: 2}); got != want {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	spec := &v1alpha1.SnugPolicySpec{
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate, MinReplicas: ptr.To[int32](1)},
		Behavior:     &v1alpha1.Behavior{Deferred: &v1alpha1.DeferredBehavior{Action: v1alpha1.DeferredActionEvict, AfterSeconds: ptr.To[int32](0)}},
	}
	if got, want := rulesOf(&v1alpha1.SnugPolicy{Spec: *spec}), (evictRules{mode: v1alpha1.UpdateModeInPlaceOrRecreate, action: v1alpha1.DeferredActionEvict, afterSeconds: 0, minReplicas: 1}); got != want {
		t.Errorf("set: %+v, want %+v", got, want)
	}
}

// TestEvictionPending: an eviction holds its policy's next one back until
// the cache shows the pod terminating or gone, or the mark expires; other
// policies are not held back.
func TestEvictionPending(t *testing.T) {
	now := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "uid-a"}}
	terminating := running.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{Time: now}
	for _, tt := range []struct {
		name   string
		policy string
		pods   []*corev1.Pod
		at     time.Time
		want   bool
		kept   bool
	}{
		{"still running in the cache", "ns/p", []*corev1.Pod{running}, now, true, true},
		{"terminating in the cache", "ns/p", []*corev1.Pod{terminating}, now, false, false},
		{"gone from the cache", "ns/p", nil, now, false, false},
		{"mark expired", "ns/p", []*corev1.Pod{running}, now.Add(-evictionExpectationTTL - time.Second), false, false},
		{"another policy", "ns/q", []*corev1.Pod{running}, now, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Controller{evicting: map[types.UID]evictionMark{"uid-a": {policy: "ns/p", at: tt.at}}}
			if got := c.evictionPending(tt.policy, tt.pods, now); got != tt.want {
				t.Errorf("evictionPending = %v, want %v", got, tt.want)
			}
			if _, kept := c.evicting["uid-a"]; kept != tt.kept {
				t.Errorf("mark kept = %v, want %v", kept, tt.kept)
			}
		})
	}
}
