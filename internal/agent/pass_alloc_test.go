package agent

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/agent/agenttest"
	"github.com/snug-dev/snug/internal/recommend"
)

// TestPassAllocationsWithDecider: a whole sampling pass over a node whose
// pods are all bound to a policy allocates no more with the decision step
// installed than without it (steady samples, dry run).
func TestPassAllocationsWithDecider(t *testing.T) {
	const n = 20
	measure := func(t *testing.T, decider bool) float64 {
		root := t.TempDir()
		pods, err := agenttest.WriteSyntheticNode(root, "v2", n)
		if err != nil {
			t.Fatal(err)
		}
		cfg := NewConfig()
		cfg.Node = "synthetic"
		cfg.CgroupRoot = root
		fc := clocktesting.NewFakeClock(t0)
		a, err := New(cfg, fc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.closeAll)
		store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		rr := corev1.ResourceRequirements{Requests: rl("500m", "2Gi"), Limits: rl("1", "4Gi")}
		for _, p := range pods {
			p.Labels = map[string]string{"app": "load"}
			p.Spec.Containers[0].Resources = *rr.DeepCopy()
			p.Status.ContainerStatuses[0].Resources = rr.DeepCopy()
			if err := store.Add(p); err != nil {
				t.Fatal(err)
			}
			a.UpsertPod(p)
		}
		if decider {
			pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
			pol.Namespace = pods[0].Namespace
			// With a restart window: a pod that asks for none costs
			// nothing more (handleRestart's fast path).
			pol.Spec.UpdatePolicy.RestartWindow = &v1alpha1.RestartWindow{}
			// The synthetic working set sits near its cgroup limit: cpu
			// only, so that every sample holds.
			pol.Spec.ResourcePolicy = &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
				ContainerName: "*", ControlledResources: []corev1.ResourceName{corev1.ResourceCPU},
			}}}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "synthetic"}, Status: corev1.NodeStatus{Allocatable: rl("8", "16Gi")}}
			if _, err := a.Decide(DeciderConfig{
				Pods: corelisters.NewPodLister(store), Node: func() (*corev1.Node, error) { return node, nil },
				Policies: policyList{pol}, DryRun: true, Recommend: recommend.DefaultConfig(),
			}); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		// Past the recommender's warm-up, within the shrink window.
		for range 70 {
			fc.Step(time.Second)
			a.Pass(ctx)
		}
		if decider {
			if v := a.decider.View(pods[0].UID, "app"); v == nil || v.LastDecision == nil || v.LastDecision.CPU.Action != "Hold" || v.LastDecision.Memory.Action != "Hold" {
				t.Fatalf("want every container bound and holding, got view %+v", v)
			}
		}
		return testing.AllocsPerRun(50, func() {
			fc.Step(time.Second)
			a.Pass(ctx)
		})
	}
	without := measure(t, false)
	with := measure(t, true)
	t.Logf("allocations per pass of %d containers: %.1f without the decider, %.1f with", n, without, with)
	if with > without {
		t.Errorf("the decider adds %.1f allocations per pass of %d bound containers, want 0", with-without, n)
	}
}
