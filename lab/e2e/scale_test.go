//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/lab/internal/scale"
)

// The scale smoke's size: hollow nodes and calm pods on each.
const (
	smokeNodes       = 20
	smokePodsPerNode = 10
)

// TestScaleSmoke is issue 29's scale smoke: 20 hollow nodes (Node objects
// whose Leases the test renews; no kubelet) with 10 calm pods each, bound
// to them and shown Running by the test, under InPlace policies of 30 pods
// at most; 20 hollow agents in this process (agent.RunHollow, through
// lab/internal/scale's Fleet), sampled from a steady load under the pods'
// limits. After every pod's first snapshot, it counts the agents' writes
// to the API server over a minute (a measurement window) and fails if a
// node's agent wrote more than one request per pod per minute plus one,
// the budget of the snapshot publication rule (docs/agent.md): calm pods
// need no resize, event or condition.
func TestScaleSmoke(t *testing.T) {
	ctx := t.Context()
	pc := installPolicyCRD(t)
	ns := testNamespace(t, "snug-scale-")
	drainNamespace(t, ns)

	nodes := createHollowNodes(t, smokeNodes)
	// Policies of at most 30 pods: pods are labelled by group.
	groups := (smokeNodes*smokePodsPerNode + 29) / 30
	for g := range groups {
		createPolicy(t, pc, ns, fmt.Sprintf("group-%d", g), v1alpha1.SnugPolicySpec{
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"snug-scale-group": fmt.Sprint(g)}},
			UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
		})
	}
	// No kubelet confirms a hollow pod's deletion: they go at once, before
	// the namespace is drained (cleanups run last first).
	t.Cleanup(func() {
		_ = client.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	})
	i := 0
	for _, n := range nodes {
		for range smokePodsPerNode {
			createHollowPod(t, ns, fmt.Sprintf("calm-%03d", i), n, map[string]string{"snug-scale-group": fmt.Sprint(i / 30)})
			i++
		}
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", labOpts.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	o := agent.NewOptions()
	o.Autoscale = true
	fleet := &scale.Fleet{
		Base: cfg, Nodes: nodes, Options: *o, Seed: 1,
		Demand: func(agent.ContainerRef) scale.Demand { return scale.Steady{CPUMillis: 20, MemBytes: 16 << 20} },
	}
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fleet.Run(fctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("the fleet: %v", err)
		}
	})
	waitFor(t, "the hollow agents' watches", 2*time.Minute, func() (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("the fleet stopped: %v", err)
		default:
		}
		return fleet.Ready() == len(nodes), nil
	})
	pods := smokeNodes * smokePodsPerNode
	waitFor(t, "each pod's first snapshot", 3*time.Minute, func() (bool, error) {
		return scale.Writes(fleet.Requests())[scale.Request{Verb: "patch", Resource: "pods"}] >= float64(pods), nil
	})
	before := fleet.Requests()
	start := time.Now()
	// A measurement window, not a wait for a condition.
	time.Sleep(time.Minute)
	after := fleet.Requests()
	minutes := time.Since(start).Minutes()

	worst, worstNode := 0.0, ""
	for _, n := range nodes {
		w := 0.0
		for r, c := range after[n] {
			if r.Write() {
				w += c - before[n][r]
			}
		}
		if w/minutes > worst {
			worst, worstNode = w/minutes, n
		}
	}
	total := map[scale.Request]float64{}
	for _, n := range nodes {
		for r, c := range after[n] {
			total[r] += c - before[n][r]
		}
	}
	var parts []string
	for _, r := range slices.SortedFunc(maps.Keys(total), func(a, b scale.Request) int {
		return strings.Compare(a.Verb+a.Resource, b.Verb+b.Resource)
	}) {
		parts = append(parts, fmt.Sprintf("%s %s %.1f/min", r.Verb, r.Resource, total[r]/minutes))
	}
	t.Logf("SCALE %s: %d hollow nodes, %d pods: all agents' requests over %.1f min: %s; the busiest node's agent wrote %.1f/min (%s)",
		labOpts.KubernetesVersion, len(nodes), pods, minutes, strings.Join(parts, ", "), worst, worstNode)
	if budget := float64(smokePodsPerNode + 1); worst > budget {
		t.Errorf("node %s's agent wrote %.1f requests/min in steady state, want at most %.0f (one per pod plus one)", worstNode, worst, budget)
	}
}

// createHollowNodes creates n Node objects without a kubelet, Ready and
// tainted so that nothing else lands on them, and renews their Leases
// every 10 s until the test ends (the node lifecycle controller keeps them
// Ready); the nodes go at the end.
func createHollowNodes(t *testing.T, n int) []string {
	t.Helper()
	ctx := context.Background()
	var names []string
	for i := range n {
		name := fmt.Sprintf("snug-hollow-%02d", i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"snug-lab/hollow": "true"}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "snug-lab/hollow", Effect: corev1.TaintEffectNoSchedule}}},
		}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating node %s: %v", name, err)
		}
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")}
		// The node lifecycle controller writes the new node too: retried
		// on a conflict.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status = corev1.NodeStatus{
				Capacity: res, Allocatable: res,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
					LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
			}
			_, err = client.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("node %s's status: %v", name, err)
		}
		names = append(names, name)
	}
	leases := client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	renew := func() {
		for _, name := range names {
			now := metav1.NewMicroTime(time.Now())
			l, err := leases.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				_, _ = leases.Create(ctx, &coordinationv1.Lease{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
				}, metav1.CreateOptions{})
				continue
			}
			l.Spec.RenewTime = &now
			_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
		}
	}
	renew()
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				renew()
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		for _, name := range names {
			_ = leases.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	return names
}

// createHollowPod creates a pod bound to a hollow node and shows it
// Running and Ready, as a kubelet would: a container ID, its resources
// (50m/200m cpu, 32Mi/64Mi memory) applied, started a minute ago.
func createHollowPod(t *testing.T, ns, name, node string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	rr := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "app", Image: "hollow", Resources: rr}},
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	started := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status = corev1.PodStatus{
			Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, ObservedGeneration: p.Generation,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", Image: "hollow", ImageID: "hollow", ContainerID: "containerd://" + string(p.UID),
				Ready: true, Started: ptr.To(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
				Resources: rr.DeepCopy(), AllocatedResources: rr.Requests.DeepCopy(),
			}},
		}
		_, err = client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("pod %s's status: %v", name, err)
	}
}
