package controller

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/convert"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

func TestVPAConflicts(t *testing.T) {
	web := &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}
	pods := []*corev1.Pod{tb.Pod("web-1").Labels("app", "web").Get()}
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	other := labels.SelectorFromSet(labels.Set{"app": "api"})
	for _, tc := range []struct {
		name   string
		target *v1alpha1.CrossVersionObjectReference
		vpas   []vpaView
		want   []string
	}{
		{"same target", web, []vpaView{{name: "v", mode: "InPlaceOrRecreate", kind: "Deployment", target: "web"}}, []string{"v"}},
		{"same target, Off", web, []vpaView{{name: "v", mode: "Off", kind: "Deployment", target: "web"}}, nil},
		{"Initial acts", web, []vpaView{{name: "v", mode: "Initial", kind: "Deployment", target: "web"}}, []string{"v"}},
		{"another workload selecting the pods", web, []vpaView{{name: "v", mode: "Recreate", kind: "ReplicaSet", target: "web-abc", sel: sel}}, []string{"v"}},
		{"a selector policy", nil, []vpaView{{name: "v", mode: "Auto", kind: "Deployment", target: "web", sel: sel}}, []string{"v"}},
		{"a selector policy, VPA unresolved", nil, []vpaView{{name: "v", mode: "Auto", kind: "Deployment", target: "web"}}, nil},
		{"other pods", web, []vpaView{{name: "v", mode: "Recreate", kind: "Deployment", target: "api", sel: other}}, nil},
		{"same name, other kind", web, []vpaView{{name: "v", mode: "Recreate", kind: "StatefulSet", target: "web"}}, nil},
		{"sorted", web, []vpaView{{name: "b", mode: "Auto", kind: "Deployment", target: "web"}, {name: "a", mode: "InPlace", sel: sel}}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range vpaConflicts(tc.target, pods, tc.vpas) {
				got = append(got, v.name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
		})
	}
}

// vpaObject is a VerticalPodAutoscaler as the dynamic informer stores it.
func vpaObject(name, kind, target, mode string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
		"metadata": map[string]any{"name": name, "namespace": tb.Namespace},
		"spec": map[string]any{
			"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": kind, "name": target},
			"updatePolicy": map[string]any{"updateMode": mode},
		},
	}}
}

// TestReconcileVPAConflict: a VPA that is not Off on the policy's target
// sets VPAConflict and keeps the controller from evicting; set to Off, the
// condition goes and the policy acts again.
func TestReconcileVPAConflict(t *testing.T) {
	e := newReconcileEnv(t)
	vpas := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	e.c.vpaStore = vpas
	e.add(
		tb.Deployment("web", "app", "web"),
		tb.Pod("web-1").Labels("app", "web").Ready().DeferredSince(t0).Get(),
		tb.Pod("web-2").Labels("app", "web").Ready().Get(),
		tb.Policy("web").Target("Deployment", "web").Mode(v1alpha1.UpdateModeInPlaceOrRecreate).
			Deferred(v1alpha1.DeferredActionEvict, 60).Get(),
	)
	if err := vpas.Add(vpaObject("web-vpa", "Deployment", "web", "InPlaceOrRecreate")); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(2 * time.Minute)
	got, _ := e.reconcile("web")
	if diff := cmp.Diff(map[string]cond{v1alpha1.ConditionVPAConflict: {"True", v1alpha1.ReasonYieldsToVPA}},
		conds(got, v1alpha1.ConditionVPAConflict)); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if !e.podExists("web-1") {
		t.Error("a policy that yields to a VPA evicted a pod")
	}

	if err := vpas.Update(vpaObject("web-vpa", "Deployment", "web", "Off")); err != nil {
		t.Fatal(err)
	}
	got, _ = e.reconcile("web")
	if diff := cmp.Diff(map[string]cond{v1alpha1.ConditionVPAConflict: {"False", reasonNoVPA}},
		conds(got, v1alpha1.ConditionVPAConflict)); diff != "" {
		t.Errorf("conditions after Off (-want +got):\n%s", diff)
	}
	if e.podExists("web-1") {
		t.Error("web-1 not evicted once the VPA was Off")
	}
}

// TestWatchVPAsLate: with no VPA API at start the controller does not
// wait for VPAs; once discovery shows them, watchVPAs starts the informer
// and the reconciles see the cluster's VPAs.
func TestWatchVPAsLate(t *testing.T) {
	cs := fake.NewClientset()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{convert.VPAResource: "VerticalPodAutoscalerList"},
		vpaObject("web-vpa", "Deployment", "web", "Auto"))
	c := New(cs, nil, record.NewFakeRecorder(10), NewMetrics(prometheus.NewRegistry()),
		Config{Dynamic: dyn, VPADiscoveryInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if c.startVPAs(ctx) != nil {
		t.Fatal("the VPA informer started though the cluster serves no VPAs")
	}
	if got := c.vpasIn(tb.Namespace); got != nil {
		t.Fatalf("VPAs %v before they are watched", got)
	}
	// VPA's CRD is installed: discovery shows it.
	cs.Fake.Resources = []*metav1.APIResourceList{{GroupVersion: "autoscaling.k8s.io/v1",
		APIResources: []metav1.APIResource{{Name: "verticalpodautoscalers", Namespaced: true, Kind: "VerticalPodAutoscaler"}}}}
	done := make(chan struct{})
	go func() { c.watchVPAs(ctx); close(done) }()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(c.vpasIn(tb.Namespace)) == 1, nil
	})
	if err != nil {
		t.Fatalf("the VPA never showed: %v", err)
	}
	if v := c.vpasIn(tb.Namespace)[0]; v.name != "web-vpa" || v.mode != "Auto" {
		t.Errorf("VPA %+v", v)
	}
	cancel()
	<-done
}
