package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

func TestFindOverlap(t *testing.T) {
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	canary := labels.SelectorFromSet(labels.Set{"track": "canary"})
	pods := []*corev1.Pod{
		tb.Pod("web-1").LabelSet(map[string]string{"app": "web"}).Get(),
		tb.Pod("web-2").LabelSet(map[string]string{"app": "web", "track": "canary"}).Get(),
		tb.Pod("api-1").LabelSet(map[string]string{"app": "api", "track": "canary"}).Get(),
	}
	older := peer{name: "old", created: t0, sel: canary}
	self := peer{name: "self", created: t0.Add(time.Hour), sel: web}
	younger := peer{name: "young", created: t0.Add(2 * time.Hour), sel: canary}
	sameTimeLater := peer{name: "zzz", created: t0.Add(time.Hour), sel: canary}
	tests := []struct {
		name         string
		peers        []peer
		wantGoverned []string
		want         overlap
		wantReason   string
	}{
		{"alone", []peer{self}, []string{"web-1", "web-2"}, overlap{}, "NoOverlap"},
		{"older peer takes the shared pod", []peer{self, older}, []string{"web-1"}, overlap{older: []string{"old"}}, v1alpha1.ReasonYieldsToOlderPolicy},
		{"younger peer: self keeps it", []peer{self, younger}, []string{"web-1", "web-2"}, overlap{younger: []string{"young"}}, v1alpha1.ReasonOlderPolicyWins},
		{"same creation time: name decides", []peer{self, sameTimeLater}, []string{"web-1", "web-2"}, overlap{younger: []string{"zzz"}}, v1alpha1.ReasonOlderPolicyWins},
		{"both sides", []peer{older, self, younger}, []string{"web-1"}, overlap{older: []string{"old"}, younger: []string{"young"}}, v1alpha1.ReasonYieldsToOlderPolicy},
		{"unresolved peer ignored", []peer{self, {name: "new", created: t0}}, []string{"web-1", "web-2"}, overlap{}, "NoOverlap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gov, o := findOverlap(self, tt.peers, pods)
			var names []string
			for _, p := range gov {
				names = append(names, p.Name)
			}
			if diff := cmp.Diff(tt.wantGoverned, names); diff != "" {
				t.Errorf("governed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, o, cmp.AllowUnexported(overlap{})); diff != "" {
				t.Errorf("overlap (-want +got):\n%s", diff)
			}
			c := o.condition()
			if c.Reason != tt.wantReason {
				t.Errorf("condition reason %q, want %q (%s)", c.Reason, tt.wantReason, c.Message)
			}
			if (c.Status == metav1.ConditionTrue) != (tt.wantReason != "NoOverlap") {
				t.Errorf("condition status %s for reason %s", c.Status, c.Reason)
			}
		})
	}
}

// TestOverlapBothSidesSayIt: two policies on the same pods each say who
// wins, naming the other.
func TestOverlapBothSidesSayIt(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	a := peer{name: "a", created: t0, sel: sel}
	b := peer{name: "b", created: t0.Add(time.Second), sel: sel}
	pods := []*corev1.Pod{tb.Pod("p").LabelSet(map[string]string{"app": "web"}).Get()}
	govA, oa := findOverlap(a, []peer{a, b}, pods)
	govB, ob := findOverlap(b, []peer{a, b}, pods)
	if len(govA) != 1 || len(govB) != 0 {
		t.Errorf("governed: a %d, b %d; want 1 and 0", len(govA), len(govB))
	}
	ca, cb := oa.condition(), ob.condition()
	if ca.Reason != v1alpha1.ReasonOlderPolicyWins || cb.Reason != v1alpha1.ReasonYieldsToOlderPolicy {
		t.Errorf("reasons a=%s b=%s", ca.Reason, cb.Reason)
	}
	want := map[string]string{"a": "policy b", "b": "policy a"}
	for name, c := range map[string]metav1.Condition{"a": ca, "b": cb} {
		if !contains(c.Message, want[name]) {
			t.Errorf("%s's message %q does not name %s", name, c.Message, want[name])
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestOverlapAgreesWithMatch: the pods findOverlap gives a policy are
// exactly those policy.Match (the agents' matcher) binds to it.
func TestOverlapAgreesWithMatch(t *testing.T) {
	policies := []*v1alpha1.SnugPolicy{
		tb.Policy("web").Selector("app", "web").Created(t0.Add(time.Hour)).Get(),
		tb.Policy("canary").Selector("track", "canary").Get(),
		tb.Policy("target").Target("Deployment", "web").StatusSelector("app=web,track=canary").Created(t0.Add(-time.Hour)).Get(),
		tb.Policy("same-time").Selector("app", "web").Created(t0.Add(time.Hour)).Get(),
		tb.Policy("unresolved").Target("Deployment", "api").Created(t0.Add(-2 * time.Hour)).Get(),
	}
	pods := []*corev1.Pod{
		tb.Pod("web-1").Labels("app", "web").Get(),
		tb.Pod("web-2").Labels("app", "web", "track", "canary").Get(),
		tb.Pod("api-1").Labels("app", "api", "track", "canary").Get(),
		tb.Pod("bare").Get(),
	}
	var peers []peer
	for _, p := range policies {
		q := peer{name: p.Name, created: p.CreationTimestamp.Time}
		if sel, ok := policy.Selector(p); ok {
			q.sel = sel
		}
		peers = append(peers, q)
	}
	for i, p := range policies {
		governed, _ := findOverlap(peers[i], peers, pods)
		var got, want []string
		for _, pod := range governed {
			got = append(got, pod.Name)
		}
		for _, pod := range pods {
			if policy.Match(policies, pod) == p {
				want = append(want, pod.Name)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("policy %s: pods by Match (-) and by findOverlap (+):\n%s", p.Name, diff)
		}
	}
}
