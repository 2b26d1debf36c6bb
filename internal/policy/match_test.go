package policy_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

func TestMatch(t *testing.T) {
	web := tb.Pod("web-1").Labels("app", "web").Get()
	older := tb.Policy("older").Selector("app", "web").Created(tb.T0.Add(-time.Hour)).Get()
	newer := tb.Policy("newer").Selector("app", "web").Get()
	sameTimeA := tb.Policy("a").Selector("app", "web").Get()
	sameTimeB := tb.Policy("b").Selector("app", "web").Get()
	otherNS := tb.Policy("other").Namespace("elsewhere").Selector("app", "web").Created(tb.T0.Add(-2 * time.Hour)).Get()
	target := tb.Policy("target").Target("Deployment", "web").StatusSelector("app=web").Created(tb.T0.Add(-3 * time.Hour)).Get()
	unresolved := tb.Policy("unresolved").Target("Deployment", "web").Created(tb.T0.Add(-4 * time.Hour)).Get()
	// A targetRef policy's spec.selector is not set; a stray one would not
	// count: status.selector is what the controller resolved.
	otherTarget := tb.Policy("api").Target("Deployment", "api").StatusSelector("app=api").Created(tb.T0.Add(-5 * time.Hour)).Get()
	empty := tb.Policy("empty").Created(tb.T0.Add(-6 * time.Hour)).Get()
	empty.Spec.Selector = &metav1.LabelSelector{}
	expr := tb.Policy("expr").Created(tb.T0.Add(-time.Minute)).Get()
	expr.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}}}}
	bad := tb.Policy("bad").Target("Deployment", "web").StatusSelector("app in (").Created(tb.T0.Add(-7 * time.Hour)).Get()

	for _, tc := range []struct {
		name     string
		policies []*v1alpha1.SnugPolicy
		pod      *corev1.Pod
		want     string // "" for none
	}{
		{"none", nil, web, ""},
		{"one selector", []*v1alpha1.SnugPolicy{newer}, web, "newer"},
		{"older wins", []*v1alpha1.SnugPolicy{newer, older}, web, "older"},
		{"older wins in any order", []*v1alpha1.SnugPolicy{older, newer}, web, "older"},
		{"same time: smaller name", []*v1alpha1.SnugPolicy{sameTimeB, sameTimeA}, web, "a"},
		{"other namespace skipped", []*v1alpha1.SnugPolicy{otherNS, newer}, web, "newer"},
		{"targetRef through status.selector", []*v1alpha1.SnugPolicy{newer, target}, web, "target"},
		{"unresolved targetRef covers nothing", []*v1alpha1.SnugPolicy{unresolved, newer}, web, "newer"},
		{"other target", []*v1alpha1.SnugPolicy{otherTarget}, web, ""},
		{"empty selector covers nothing", []*v1alpha1.SnugPolicy{empty}, web, ""},
		{"match expressions", []*v1alpha1.SnugPolicy{newer, expr}, web, "expr"},
		{"unparsable status.selector covers nothing", []*v1alpha1.SnugPolicy{bad}, web, ""},
		{"unlabelled pod", []*v1alpha1.SnugPolicy{newer, target}, tb.Pod("bare").Get(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if p := policy.Match(tc.policies, tc.pod); p != nil {
				got = p.Name
			}
			if got != tc.want {
				t.Errorf("Match = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOlder(t *testing.T) {
	a := tb.Policy("a").Get()
	b := tb.Policy("b").Get()
	early := tb.Policy("z").Created(tb.T0.Add(-time.Second)).Get()
	for _, tc := range []struct {
		x, y *v1alpha1.SnugPolicy
		want bool
	}{
		{a, b, true}, {b, a, false}, {a, a, false}, {early, a, true}, {a, early, false},
	} {
		if got := policy.Older(tc.x, tc.y); got != tc.want {
			t.Errorf("Older(%s, %s) = %v, want %v", tc.x.Name, tc.y.Name, got, tc.want)
		}
	}
}

func TestDeferredSince(t *testing.T) {
	at := tb.T0.Add(-time.Minute)
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		since  time.Time
		wantOK bool
	}{
		{"not pending", tb.Pod("p").Ready().Get(), time.Time{}, false},
		{"deferred", tb.Pod("p").Ready().DeferredSince(at).Get(), at, true},
		{"infeasible", tb.Pod("p").Infeasible().Get(), time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			since, ok := policy.DeferredSince(tc.pod)
			if ok != tc.wantOK || !since.Equal(tc.since) {
				t.Errorf("DeferredSince = %v, %v; want %v, %v", since, ok, tc.since, tc.wantOK)
			}
		})
	}
}

func TestDeferredOfAndEvicts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      *v1alpha1.SnugPolicy
		want   policy.Deferred
		evicts bool
	}{
		{"defaults", tb.Policy("p").Get(), policy.Deferred{Action: v1alpha1.DeferredActionFitToNode, After: 30 * time.Second}, false},
		{"wait 0", tb.Policy("p").Deferred(v1alpha1.DeferredActionWait, 0).Get(), policy.Deferred{Action: v1alpha1.DeferredActionWait}, false},
		{"evict in place", tb.Policy("p").Deferred(v1alpha1.DeferredActionEvict, 60).Get(), policy.Deferred{Action: v1alpha1.DeferredActionEvict, After: time.Minute}, false},
		{"evict or recreate", tb.Policy("p").Mode(v1alpha1.UpdateModeInPlaceOrRecreate).Deferred(v1alpha1.DeferredActionEvict, 60).Get(),
			policy.Deferred{Action: v1alpha1.DeferredActionEvict, After: time.Minute}, true},
		{"fit or recreate", tb.Policy("p").Mode(v1alpha1.UpdateModeInPlaceOrRecreate).Get(),
			policy.Deferred{Action: v1alpha1.DeferredActionFitToNode, After: 30 * time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, policy.DeferredOf(tc.p)); diff != "" {
				t.Errorf("DeferredOf (-want +got):\n%s", diff)
			}
			if got := policy.Evicts(tc.p); got != tc.evicts {
				t.Errorf("Evicts = %v, want %v", got, tc.evicts)
			}
		})
	}
}

func TestContainerPolicy(t *testing.T) {
	p := tb.Policy("p").
		Container(v1alpha1.ContainerResourcePolicy{ContainerName: "*", Mode: v1alpha1.ContainerScalingModeOff}).
		Container(v1alpha1.ContainerResourcePolicy{ContainerName: "app", ControlledValues: v1alpha1.ContainerControlledValuesRequestsOnly}).Get()
	for _, tc := range []struct {
		p    *v1alpha1.SnugPolicy
		name string
		want v1alpha1.ContainerResourcePolicy
	}{
		{p, "app", v1alpha1.ContainerResourcePolicy{ContainerName: "app", ControlledValues: v1alpha1.ContainerControlledValuesRequestsOnly}},
		{p, "side", v1alpha1.ContainerResourcePolicy{ContainerName: "*", Mode: v1alpha1.ContainerScalingModeOff}},
		{tb.Policy("bare").Get(), "app", v1alpha1.ContainerResourcePolicy{ContainerName: "app"}},
	} {
		if diff := cmp.Diff(tc.want, policy.ContainerPolicy(tc.p, tc.name)); diff != "" {
			t.Errorf("ContainerPolicy(%s, %s) (-want +got):\n%s", tc.p.Name, tc.name, diff)
		}
	}
}
