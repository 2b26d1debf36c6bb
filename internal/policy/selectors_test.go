package policy

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	tb "github.com/snug-dev/snug/internal/testbuild"
)

// TestSelectorsFollowThePolicy: a kept selector is the policy's as long as
// its spec (generation), its resolved status.selector and its UID stay;
// any of them moving parses it again, and Forget drops it. A kept
// selector that outlived its spec would match pods the policy no longer
// selects.
func TestSelectorsFollowThePolicy(t *testing.T) {
	web := tb.Pod("web-1").Labels("app", "web").Get()
	api := tb.Pod("api-1").Labels("app", "api").Get()
	var s Selectors
	p := tb.Policy("p").Selector("app", "web").Get()
	if !s.Covers(p, web) || s.Covers(p, api) {
		t.Fatalf("policy app=web: covers web %v, api %v; want true, false", s.Covers(p, web), s.Covers(p, api))
	}
	// A parsed selector is a slice of requirements: the kept one is the
	// same slice.
	first, _ := s.Selector(p)
	if again, _ := s.Selector(p.DeepCopy()); reflect.ValueOf(again).Pointer() != reflect.ValueOf(first).Pointer() {
		t.Errorf("the same policy parsed again; want the kept selector")
	}

	moved := p.DeepCopy() // a new spec: a new generation
	moved.Spec.Selector.MatchLabels["app"] = "api"
	moved.Generation++
	if !s.Covers(moved, api) || s.Covers(moved, web) {
		t.Errorf("after the spec moved to app=api: covers api %v, web %v; want true, false", s.Covers(moved, api), s.Covers(moved, web))
	}

	target := tb.Policy("t").Target("Deployment", "web").Get()
	if s.Covers(target, web) {
		t.Errorf("a target not resolved yet covers a pod")
	}
	resolved := target.DeepCopy()
	resolved.Status.Selector = "app=web"
	if !s.Covers(resolved, web) {
		t.Errorf("after status.selector app=web: the pod is not covered")
	}

	again := resolved.DeepCopy() // deleted and made again: a new UID
	again.UID = types.UID("uid-t-2")
	again.Status.Selector = ""
	if s.Covers(again, web) {
		t.Errorf("a policy made again under the name, not resolved yet, covers a pod (the old one's selector)")
	}

	s.Forget(p.Namespace, p.Name)
	s.Forget(p.Namespace, "t")
	if len(s.m) != 0 {
		t.Errorf("after Forget: %d kept; want 0", len(s.m))
	}
	var none *Selectors
	if !none.Covers(p, web) {
		t.Errorf("a nil Selectors does not parse")
	}
}
