package agent

import (
	"testing"
	"time"

	"github.com/snug-dev/snug/api/v1alpha1"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

// TestBindingsFollowEvents: a pod's policy is recomputed after a policy
// event in its namespace or an event of the pod, and only then; a pod's
// binding goes with its deletion.
func TestBindingsFollowEvents(t *testing.T) {
	pod := tb.Pod("web-1").Labels("app", "web").Get()
	newer := tb.Policy("newer").Selector("app", "web").Get()
	older := tb.Policy("older").Target("Deployment", "web").Created(tb.T0.Add(-time.Hour)).Get()
	elsewhere := tb.Policy("elsewhere").Namespace("other").Selector("app", "web").Created(tb.T0.Add(-2 * time.Hour)).Get()
	policies := []*v1alpha1.SnugPolicy{newer, older, elsewhere}
	lists := 0
	list := func(ns string) []*v1alpha1.SnugPolicy {
		lists++
		return policyList(policies).List(ns)
	}
	b := newBindings()
	name := func() string {
		if p := b.policyFor(pod, list); p != nil {
			return p.Name
		}
		return ""
	}
	step := func(what, want string, wantLists int) {
		t.Helper()
		if got := name(); got != want || lists != wantLists {
			t.Errorf("%s: policy %q after %d lists, want %q after %d", what, got, lists, want, wantLists)
		}
	}
	step("first sample", "newer", 1)
	step("next sample", "newer", 1)
	// The controller publishes the older targetRef policy's selector: the
	// cache changes, then its event arrives.
	older.Status.Selector = "app=web"
	step("before the event", "newer", 1)
	b.policiesChanged("other")
	step("event in another namespace", "newer", 1)
	b.policiesChanged("ns")
	step("after the policy event", "older", 2)
	step("next sample", "older", 2)
	pod = tb.Pod("web-1").Labels("app", "api").Get()
	b.podChanged(pod)
	step("after the pod's labels changed", "", 3)
	step("next sample", "", 3)
	b.podDeleted(pod.UID)
	b.sweep()
	if _, ok := b.bound[pod.UID]; ok {
		t.Error("a deleted pod's binding is kept")
	}
}
