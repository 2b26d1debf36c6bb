package controller

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	tb "github.com/snug-dev/snug/internal/testbuild"
)

// TestPodsSelected: the indexed lookup finds exactly the pods a scan of
// the namespace finds, for every form of selector (one or two equality
// requirements, an In of one or two values, set-based only), never a pod
// of another namespace with the same labels, and follows a pod whose
// labels change.
func TestPodsSelected(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, podLabelIndex: podLabelKeys})
	add := func(p *corev1.Pod) {
		t.Helper()
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	add(tb.Pod("web-1").Labels("app", "web", "tier", "front").Get())
	add(tb.Pod("web-2").Labels("app", "web", "tier", "back").Get())
	add(tb.Pod("api-1").Labels("app", "api", "tier", "back").Get())
	add(tb.Pod("bare").Get())
	add(tb.Pod("web-1").Namespace("other").Labels("app", "web", "tier", "front").Get())

	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		slices.Sort(out)
		return out
	}
	scan := func(sel labels.Selector) []string {
		objs, _ := idx.ByIndex(cache.NamespaceIndex, tb.Namespace)
		var out []*corev1.Pod
		for _, o := range objs {
			if p := o.(*corev1.Pod); sel.Matches(labels.Set(p.Labels)) {
				out = append(out, p)
			}
		}
		return names(out)
	}
	check := func(selector string, want ...string) {
		t.Helper()
		sel, err := labels.Parse(selector)
		if err != nil {
			t.Fatal(err)
		}
		got, err := podsSelected(idx, tb.Namespace, sel)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			want[i] = tb.Namespace + "/" + want[i]
		}
		if d := cmp.Diff(want, names(got)); d != "" {
			t.Errorf("%s: (-want +got)\n%s", selector, d)
		}
		if d := cmp.Diff(scan(sel), names(got)); d != "" {
			t.Errorf("%s: against a scan of the namespace (-scan +indexed)\n%s", selector, d)
		}
	}
	check("app=web", "web-1", "web-2")
	check("app==web,tier=back", "web-2")
	check("tier=back,app in (api)", "api-1")
	check("app in (web, api)", "api-1", "web-1", "web-2")
	check("tier notin (front)", "api-1", "bare", "web-2")
	check("app", "api-1", "web-1", "web-2")
	check("app=none")

	moved := tb.Pod("web-2").Labels("app", "api", "tier", "back").Get()
	if err := idx.Update(moved); err != nil {
		t.Fatal(err)
	}
	check("app=web", "web-1")
	check("app=api", "api-1", "web-2")
}
