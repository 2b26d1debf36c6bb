package agent

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/snug-dev/snug/api/v1alpha1"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

// TestBindingsFollowEvents: a pod's policy is recomputed after a policy
// event in its namespace or an event of the pod, and only then; a pod's
// binding goes with its deletion; each policy's selector is parsed once
// for all pods, and a deleted policy's is forgotten.
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
	b.policiesChanged("other", "elsewhere", false)
	step("event in another namespace", "newer", 1)
	b.policiesChanged("ns", "older", false)
	step("after the policy event", "older", 2)
	step("next sample", "older", 2)
	// A second pod of the namespace binds with the selectors kept: the
	// same parsed selector, not one per pod.
	kept, _ := b.sel.Selector(newer)
	sibling := tb.Pod("web-2").Labels("app", "web").Get()
	if p := b.policyFor(sibling, list); p == nil || p.Name != "older" {
		t.Errorf("second pod: policy %v, want older", p)
	}
	lists-- // the sibling's
	if again, _ := b.sel.Selector(newer); reflect.ValueOf(again).Pointer() != reflect.ValueOf(kept).Pointer() {
		t.Error("the second pod's bind parsed the policy's selector again")
	}
	if n := b.sel.Len(); n != 2 {
		t.Errorf("%d selectors kept, want 2 (the namespace's policies)", n)
	}
	b.policiesChanged("ns", "newer", true)
	if n := b.sel.Len(); n != 1 {
		t.Errorf("after newer's deletion %d selectors kept, want 1", n)
	}
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

// TestPolicyStatusChurnBindsNothing: an update that rewrites only what
// the agent does not read of a policy (status.recommendation, condition
// messages and times, a resync) tells the informer handler's callback
// nothing; a new generation, a published selector, uncontrolled
// resources, a VPA conflict, a deletion and an add each do.
func TestPolicyStatusChurnBindsNothing(t *testing.T) {
	var told []string
	var deleted []bool
	h := policyHandler(func(ns, name string, del bool) {
		if name == "web" {
			told = append(told, ns)
			deleted = append(deleted, del)
		}
	})
	pol := tb.Policy("web").Target("Deployment", "web").Get()
	pol.Generation = 1
	update := func(what string, mod func(p *v1alpha1.SnugPolicy), want bool) {
		t.Helper()
		next := pol.DeepCopy()
		mod(next)
		next.ResourceVersion += "1"
		told = nil
		h.OnUpdate(pol, next)
		if got := len(told) == 1 && told[0] == pol.Namespace; got != want || len(told) > 1 {
			t.Errorf("%s: told %v, want a namespace: %v", what, told, want)
		}
		pol = next
	}
	update("resync", func(*v1alpha1.SnugPolicy) {}, false)
	update("recommendation", func(p *v1alpha1.SnugPolicy) {
		p.Status.Recommendation = &v1alpha1.RecommendedPodResources{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{ContainerName: "app"}}}
	}, false)
	update("condition message", func(p *v1alpha1.SnugPolicy) {
		p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionNoPodsMatched, Status: metav1.ConditionFalse, Message: "3 pods match"}}
	}, false)
	update("selector published", func(p *v1alpha1.SnugPolicy) { p.Status.Selector = "app=web" }, true)
	update("new generation", func(p *v1alpha1.SnugPolicy) { p.Generation = 2 }, true)
	update("uncontrolled", func(p *v1alpha1.SnugPolicy) {
		p.Status.UncontrolledResources = []corev1.ResourceName{corev1.ResourceCPU}
	}, true)
	update("vpa conflict", func(p *v1alpha1.SnugPolicy) {
		p.Status.Conditions = append(p.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionVPAConflict, Status: metav1.ConditionTrue})
	}, true)
	update("deleting", func(p *v1alpha1.SnugPolicy) { p.DeletionTimestamp = &metav1.Time{Time: tb.T0} }, true)
	told, deleted = nil, nil
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: pol})
	h.OnAdd(pol, false)
	if len(told) != 2 || !reflect.DeepEqual(deleted, []bool{true, false}) {
		t.Errorf("delete and add: told %v deleted %v, want the namespace twice, deleted then not", told, deleted)
	}
}
