//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/config/crd"
	"github.com/snug-dev/snug/internal/controller"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/install"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/lab/internal/experiment"
)

const (
	// statusTimeout bounds a wait for the controller to write a status.
	statusTimeout = time.Minute
)

// TestController installs the controller in-cluster with the chart and
// holds it to docs/controller.md: target
// resolution, conditions, HPA detection, overlap, the learnt-history
// checkpoint and the eviction fallback within PodDisruptionBudgets.
func TestController(t *testing.T) {
	ctx := t.Context()
	cfg, err := clientcmd.BuildConfigFromFlags("", labOpts.Kubeconfig())
	if err != nil {
		t.Fatalf("loading lab kubeconfig: %v", err)
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := crd.All()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := install.Uninstall(context.Background(), ext, crds, crdTimeout); err != nil {
			t.Errorf("uninstalling CRDs: %v", err)
		}
	})
	pc, err := policyclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The chart installs the CRD with the controller (crds.keep off, so
	// that uninstall takes it away; the cleanup above makes sure).
	installSnug(t, snugInstall{set: []string{"crds.enabled=true", "crds.keep=false"}})
	if _, err := ext.CustomResourceDefinitions().Get(ctx, "snugpolicies.autoscaling.snug.dev", metav1.GetOptions{}); err != nil {
		t.Fatalf("CRD not installed by the chart: %v", err)
	}
	lease, err := client.CoordinationV1().Leases("snug-system").Get(ctx, "snug-controller", metav1.GetOptions{})
	if err != nil || ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
		t.Fatalf("lease snug-system/snug-controller not held: %v", err)
	}
	t.Logf("lease held by %s", *lease.Spec.HolderIdentity)

	t.Run("deployment", func(t *testing.T) { testControllerDeployment(t, pc) })
	t.Run("no-pods", func(t *testing.T) { testControllerNoPods(t, pc) })
	t.Run("initial", func(t *testing.T) { testControllerInitial(t, pc) })
	t.Run("hpa", func(t *testing.T) { testControllerHPA(t, pc) })
	t.Run("overlap", func(t *testing.T) { testControllerOverlap(t, pc) })
	t.Run("evict", func(t *testing.T) { testControllerEvict(t, pc) })
	t.Run("metrics", func(t *testing.T) { testControllerMetrics(t, pc) })
}

// waitPolicy polls the policy until ok accepts it and returns it.
func waitPolicy(t *testing.T, pc *policyclient.Client, ns, name, what string, ok func(*v1alpha1.SnugPolicy) bool) *v1alpha1.SnugPolicy {
	t.Helper()
	var last *v1alpha1.SnugPolicy
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, statusTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := pc.SnugPolicies(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return ok(p), nil
	})
	if err != nil {
		skipIfV2Hung(t, "waiting for policy %s: %s: %v", name, what, err)
		b, _ := json.MarshalIndent(last, "", "  ")
		t.Fatalf("waiting for policy %s: %s: %v; last seen:\n%s", name, what, err, b)
	}
	return last
}

// hasCondition returns an ok function for waitPolicy: the condition typ
// has status and reason, for the current generation.
func hasCondition(typ string, status metav1.ConditionStatus, reason string) func(*v1alpha1.SnugPolicy) bool {
	return func(p *v1alpha1.SnugPolicy) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, typ)
		return p.Status.ObservedGeneration == p.Generation && c != nil && c.Status == status && c.Reason == reason
	}
}

func condOf(p *v1alpha1.SnugPolicy, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(p.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func createPolicy(t *testing.T, pc *policyclient.Client, ns, name string, spec v1alpha1.SnugPolicySpec) *v1alpha1.SnugPolicy {
	t.Helper()
	p, err := pc.SnugPolicies(ns).Create(t.Context(), &v1alpha1.SnugPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating policy %s: %v", name, err)
	}
	return p
}

func deploymentRef(name string) *v1alpha1.CrossVersionObjectReference {
	return &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: name}
}

// createSleepDeployment runs busybox sleeping in replicas pods requesting
// cpuRequest, with a 1-CPU limit, resizable in place, labelled app=name.
func createSleepDeployment(t *testing.T, ns, name string, replicas int32, cpuRequest string, edit ...func(*corev1.PodSpec)) {
	t.Helper()
	l := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To(int64(1)),
					Containers: []corev1.Container{{
						Name: "app", Image: experiment.BusyboxImage, ImagePullPolicy: corev1.PullNever,
						Command: []string{"sleep", "3600"},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuRequest), corev1.ResourceMemory: resource.MustParse("16Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("64Mi")},
						},
						ResizePolicy: []corev1.ContainerResizePolicy{
							{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
							{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
						},
					}},
				},
			},
		},
	}
	for _, f := range edit {
		f(&d.Spec.Template.Spec)
	}
	if _, err := client.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating deployment %s: %v", name, err)
	}
}

// readyPods waits until n pods labelled app=name are Ready and returns them.
func readyPods(t *testing.T, ns, name string, n int) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, nil
		}
		ready = ready[:0]
		for _, p := range list.Items {
			for _, c := range p.Status.Conditions {
				if p.DeletionTimestamp == nil && c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready = append(ready, p)
				}
			}
		}
		return len(ready) == n, nil
	})
	if err != nil {
		skipIfV2Hung(t, "waiting for %d ready pods of %s: %v", n, name, err)
		t.Fatalf("waiting for %d ready pods of %s: %v", n, name, err)
	}
	return ready
}

// drainNamespace deletes the namespace at the end of the test and waits
// until its pods are gone, so the node is empty for the next test.
func drainNamespace(t *testing.T, ns string) {
	t.Cleanup(func() {
		ctx := context.Background()
		_ = client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(list.Items) == 0, nil
		})
		if err != nil {
			skipIfV2Hung(t, "waiting for the pods of %s to go: %v", ns, err)
			t.Errorf("waiting for the pods of %s to go: %v", ns, err)
		}
	})
}

func testControllerDeployment(t *testing.T, pc *policyclient.Client) {
	ctx := t.Context()
	ns := createNamespace(t, "snug-ctl-deploy-")
	drainNamespace(t, ns)

	// A policy whose target does not exist yet.
	createPolicy(t, pc, ns, "web", v1alpha1.SnugPolicySpec{TargetRef: deploymentRef("web")})
	p := waitPolicy(t, pc, ns, "web", "Ready False TargetNotFound", hasCondition(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonTargetNotFound))
	check(t, "selector while unresolved", p.Status.Selector, "")

	createSleepDeployment(t, ns, "web", 1, "50m")
	p = waitPolicy(t, pc, ns, "web", "Ready and pods matched", func(p *v1alpha1.SnugPolicy) bool {
		return hasCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonResolved)(p) &&
			condOf(p, v1alpha1.ConditionNoPodsMatched).Status == metav1.ConditionFalse
	})
	check(t, "status.selector", p.Status.Selector, "app=web")
	check(t, "observedGeneration", p.Status.ObservedGeneration, p.Generation)
	check(t, "HPAConflict", condOf(p, v1alpha1.ConditionHPAConflict).Status, metav1.ConditionFalse)
	check(t, "Overlapping", condOf(p, v1alpha1.ConditionOverlapping).Status, metav1.ConditionFalse)
	check(t, "uncontrolledResources", len(p.Status.UncontrolledResources), 0)
	out, err := kubectl(ctx, "get", "sp", "web", "-n", ns, "-o", "wide")
	if err != nil {
		t.Fatalf("kubectl get: %v: %s", err, out)
	}
	t.Logf("kubectl get -o wide:\n%s", out)
	checkMatch(t, "kubectl get -o wide", out, `web\s+Deployment\s+web\s+InPlace\s+True\s+Resolved\s+app=web`)

	// Act as the agent: publish a snapshot on the pod. The controller folds
	// it into the checkpoint and writes a recommendation.
	pod := readyPods(t, ns, "web", 1)[0]
	cfgR := recommend.DefaultConfig()
	agg := recommend.NewAggregate(cfgR)
	now := time.Now()
	for i := range 600 {
		at := now.Add(time.Duration(i-600) * time.Second)
		agg.CPU.Add(120, 1, at)
		agg.Memory.Add(40<<20, 1, at)
	}
	agg.CPUSeconds, agg.MemorySeconds = 600, 600
	text, err := agg.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := json.Marshal(history.Snapshot{Time: now, Containers: map[string]string{"app": string(text)}})
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{history.SnapshotAnnotation: string(snap)}}})
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotating pod: %v", err)
	}
	p = waitPolicy(t, pc, ns, "web", "a recommendation", hasCondition(v1alpha1.ConditionRecommendationProvided, metav1.ConditionTrue, "HistoryAvailable"))
	rec := p.Status.Recommendation.ContainerRecommendations
	if len(rec) != 1 || rec[0].ContainerName != "app" {
		t.Fatalf("recommendation %+v, want one for container app", p.Status.Recommendation)
	}
	cpu := rec[0].Target.Cpu().MilliValue()
	t.Logf("recommendation for app: target cpu %dm memory %s, lower %s upper %s", cpu, rec[0].Target.Memory(), rec[0].LowerBound.Cpu(), rec[0].UpperBound.Cpu())
	if cpu < 120 || cpu > 160 {
		t.Errorf("target cpu %dm, want 120m*1.15 within a bucket", cpu)
	}
	cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, history.CheckpointName("web"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading checkpoint: %v", err)
	}
	if _, ok := cm.Data["aggregate.app"]; !ok {
		t.Errorf("checkpoint has no aggregate.app: keys %v", slices.Collect(mapsKeys(cm.Data)))
	}
	check(t, "checkpoint owner", cm.OwnerReferences[0].Name, "web")

	// The pod goes (scale to zero): its snapshot is retired into the
	// checkpoint once, and the recommendation stays.
	scale, err := client.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 0
	if _, err := client.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p = waitPolicy(t, pc, ns, "web", "NoPodsMatched after scaling to zero", hasCondition(v1alpha1.ConditionNoPodsMatched, metav1.ConditionTrue, "NoPodsMatched"))
	if p.Status.Recommendation == nil {
		t.Error("recommendation lost when the last pod went")
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, statusTimeout, true, func(ctx context.Context) (bool, error) {
		cm, err = client.CoreV1().ConfigMaps(ns).Get(ctx, history.CheckpointName("web"), metav1.GetOptions{})
		return err == nil && cm.Data["retired.app"] != "" && cm.Data["pods.json"] == "{}", nil
	})
	if err != nil {
		t.Fatalf("waiting for the pod's snapshot to be retired: %v (data keys %v)", err, slices.Collect(mapsKeys(cm.Data)))
	}
	var retired recommend.Aggregate
	retired = *recommend.NewAggregate(cfgR)
	if err := retired.UnmarshalText([]byte(cm.Data["retired.app"])); err != nil {
		t.Fatal(err)
	}
	// Merged once: 600, not 1200. The agent on the node carried the
	// hand-published snapshot as the pod's prior and, as the pod
	// terminated, published its last one (docs/agent.md, "final"): the
	// seconds it sampled itself may add to the 600.
	if retired.CPUSeconds < 600 || retired.CPUSeconds >= 660 {
		t.Errorf("retired seconds %.3f, want 600 merged once (plus under a minute the agent sampled)", retired.CPUSeconds)
	}
	t.Logf("retired seconds %.3f", retired.CPUSeconds)
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func testControllerNoPods(t *testing.T, pc *policyclient.Client) {
	ns := createNamespace(t, "snug-ctl-nopods-")
	createPolicy(t, pc, ns, "nothing", v1alpha1.SnugPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nothing"}}})
	p := waitPolicy(t, pc, ns, "nothing", "NoPodsMatched", hasCondition(v1alpha1.ConditionNoPodsMatched, metav1.ConditionTrue, "NoPodsMatched"))
	check(t, "Ready", condOf(p, v1alpha1.ConditionReady).Status, metav1.ConditionTrue)
	check(t, "selector", p.Status.Selector, "app=nothing")
	checkContains(t, "NoPodsMatched message", condOf(p, v1alpha1.ConditionNoPodsMatched).Message, "app=nothing")
}

func testControllerInitial(t *testing.T, pc *policyclient.Client) {
	ns := createNamespace(t, "snug-ctl-initial-")
	createPolicy(t, pc, ns, "initial", v1alpha1.SnugPolicySpec{
		Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInitial},
	})
	// Initial is supported (the admission webhook sizes new pods): Ready,
	// and no ConfigUnsupported.
	p := waitPolicy(t, pc, ns, "initial", "Ready", hasCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonResolved))
	check(t, "ConfigUnsupported", condOf(p, v1alpha1.ConditionConfigUnsupported).Status, metav1.ConditionFalse)
}

// waitEvent waits for an event with reason about the named object.
func waitEvent(t *testing.T, ns, object, reason string) corev1.Event {
	t.Helper()
	var found corev1.Event
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, statusTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == object && e.Reason == reason {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		skipIfV2Hung(t, "waiting for event %s on %s: %v", reason, object, err)
		t.Fatalf("waiting for event %s on %s: %v", reason, object, err)
	}
	t.Logf("event %s %s: %s", found.Type, found.Reason, found.Message)
	return found
}

func testControllerHPA(t *testing.T, pc *policyclient.Client) {
	ctx := t.Context()
	ns := createNamespace(t, "snug-ctl-hpa-")
	drainNamespace(t, ns)
	createSleepDeployment(t, ns, "api", 1, "50m")
	createPolicy(t, pc, ns, "api", v1alpha1.SnugPolicySpec{TargetRef: deploymentRef("api")})
	waitPolicy(t, pc, ns, "api", "Ready", hasCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonResolved))
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "api"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 3,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](70)},
			}}},
		},
	}
	if _, err := client.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating HPA: %v", err)
	}
	p := waitPolicy(t, pc, ns, "api", "HPAConflict", hasCondition(v1alpha1.ConditionHPAConflict, metav1.ConditionTrue, v1alpha1.ReasonHPAScalesResource))
	if diff := slices.Compare(p.Status.UncontrolledResources, []corev1.ResourceName{corev1.ResourceCPU}); diff != 0 {
		t.Errorf("uncontrolledResources %v, want [cpu]", p.Status.UncontrolledResources)
	}
	checkContains(t, "HPAConflict message", condOf(p, v1alpha1.ConditionHPAConflict).Message, "cpu (HorizontalPodAutoscaler api)")
	check(t, "Ready with an HPA", condOf(p, v1alpha1.ConditionReady).Status, metav1.ConditionTrue)
	waitEvent(t, ns, "api", controller.EventHPAConflict)

	// The HPA goes: cpu is snug's again.
	if err := client.AutoscalingV2().HorizontalPodAutoscalers(ns).Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p = waitPolicy(t, pc, ns, "api", "HPAConflict False", hasCondition(v1alpha1.ConditionHPAConflict, metav1.ConditionFalse, "NoHPAOnControlledResources"))
	check(t, "uncontrolledResources after the HPA went", len(p.Status.UncontrolledResources), 0)
}

func testControllerOverlap(t *testing.T, pc *policyclient.Client) {
	ns := createNamespace(t, "snug-ctl-overlap-")
	drainNamespace(t, ns)
	createSleepDeployment(t, ns, "shared", 1, "50m")
	createPolicy(t, pc, ns, "first", v1alpha1.SnugPolicySpec{TargetRef: deploymentRef("shared")})
	waitPolicy(t, pc, ns, "first", "Ready", hasCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonResolved))
	// Creation times have a resolution of one second; within one, the
	// name decides, and "first" sorts before "second" either way.
	createPolicy(t, pc, ns, "second", v1alpha1.SnugPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shared"}}})
	second := waitPolicy(t, pc, ns, "second", "yields", hasCondition(v1alpha1.ConditionOverlapping, metav1.ConditionTrue, v1alpha1.ReasonYieldsToOlderPolicy))
	first := waitPolicy(t, pc, ns, "first", "wins", hasCondition(v1alpha1.ConditionOverlapping, metav1.ConditionTrue, v1alpha1.ReasonOlderPolicyWins))
	checkContains(t, "first's message", condOf(first, v1alpha1.ConditionOverlapping).Message, "policy second")
	checkContains(t, "second's message", condOf(second, v1alpha1.ConditionOverlapping).Message, "policy first")
	// The younger policy governs no pod.
	waitPolicy(t, pc, ns, "second", "NoPodsMatched (all yielded)", hasCondition(v1alpha1.ConditionNoPodsMatched, metav1.ConditionTrue, "NoPodsMatched"))
	check(t, "first NoPodsMatched", condOf(first, v1alpha1.ConditionNoPodsMatched).Status, metav1.ConditionFalse)
	waitEvent(t, ns, "second", controller.EventOverlapping)

	// The older one goes: the younger governs alone.
	if err := pc.SnugPolicies(ns).Delete(t.Context(), "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPolicy(t, pc, ns, "second", "no overlap", hasCondition(v1alpha1.ConditionOverlapping, metav1.ConditionFalse, "NoOverlap"))
}

// testControllerEvict makes a resize Deferred (a filler pod takes the
// node's room) under InPlaceOrRecreate with deferred action Evict: a
// PodDisruptionBudget that allows no disruption keeps the pod; once it
// allows one, the pod is evicted and replaced.
func testControllerEvict(t *testing.T, pc *policyclient.Client) {
	ctx := t.Context()
	ns := createNamespace(t, "snug-ctl-evict-")
	drainNamespace(t, ns)

	createSleepDeployment(t, ns, "ev", 2, "100m")
	pods := readyPods(t, ns, "ev", 2)
	createPDB(t, ns, "ev", 2)
	waitPDB(t, ns, "ev", 0)

	// The filler takes what the two pods leave but 300m.
	node, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(node.Items) != 1 {
		t.Fatalf("listing nodes: %v", err)
	}
	alloc := node.Items[0].Status.Allocatable.Cpu().MilliValue()
	fillerMillis := alloc - 200 - 300
	filler := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "filler"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{
				Name: "sleep", Image: experiment.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(fillerMillis, resource.DecimalSI)}},
			}},
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, filler, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating filler: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "filler", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("waiting for the filler (%dm) to run: %v", fillerMillis, err)
	}

	// Resize one pod beyond the room: Deferred.
	victim := pods[0]
	resizePatch := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"700m"}}}]}}`
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, victim.Name, types.StrategicMergePatchType, []byte(resizePatch), metav1.PatchOptions{}, "resize"); err != nil {
		t.Fatalf("resizing %s: %v", victim.Name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodResizePending && c.Reason == corev1.PodReasonDeferred {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for the resize of %s to be Deferred: %v", victim.Name, err)
	}

	// The policy evicts after 0s deferred; minReplicas 2 and 2 are ready.
	createPolicy(t, pc, ns, "ev", v1alpha1.SnugPolicySpec{
		TargetRef:    deploymentRef("ev"),
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate},
		Behavior:     &v1alpha1.Behavior{Deferred: &v1alpha1.DeferredBehavior{Action: v1alpha1.DeferredActionEvict, AfterSeconds: ptr.To[int32](0)}},
	})
	waitEvent(t, ns, "ev", controller.EventEvictionBlocked)
	p, err := client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
	if err != nil || p.UID != victim.UID || p.DeletionTimestamp != nil {
		t.Fatalf("pod %s gone although its PDB allows no disruption: %v", victim.Name, err)
	}

	// The budget now allows one disruption: the pod is evicted.
	pdb, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "ev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(1))
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating PDB: %v", err)
	}
	start := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && (p.UID != victim.UID || p.DeletionTimestamp != nil)), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s to be evicted: %v", victim.Name, err)
	}
	t.Logf("evicted %.1fs after the PDB allowed it", time.Since(start).Seconds())
	waitEvent(t, ns, "ev", controller.EventEvicted)
	// The replacement is admitted at the size the Deferred resize asked
	// for; on this one full node it cannot be scheduled until room is made.
	repl := replacementOf(t, ns, "ev", pods)
	checkEvictedSize(t, repl, victim.Name, "700m")
	waitPod(t, ns, repl.Name, "unschedulable at 700m", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				t.Logf("replacement %s: %s", p.Name, c.Message)
				return true
			}
		}
		return false
	})
	deletePod(t, ns, "filler")
	readyPods(t, ns, "ev", 2)
	m := scrapeMetrics(t)
	for _, want := range []string{
		fmt.Sprintf(`snug_controller_evictions_total{namespace=%q,policy="ev",result="evicted"} 1`, ns),
		fmt.Sprintf(`snug_controller_evictions_total{namespace=%q,policy="ev",result="blocked"}`, ns),
	} {
		checkContains(t, "/metrics", m, want)
	}
	// The sibling was never touched: one eviction, for the deferred pod.
	if _, err := client.CoreV1().Pods(ns).Get(ctx, pods[1].Name, metav1.GetOptions{}); err != nil {
		t.Errorf("sibling %s: %v", pods[1].Name, err)
	}
}

// replacementOf waits for a pod labelled app=name that is none of old and
// is not being deleted, and returns it.
func replacementOf(t *testing.T, ns, name string, old []corev1.Pod) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, nil
		}
		for i, p := range list.Items {
			if p.DeletionTimestamp == nil && !slices.ContainsFunc(old, func(o corev1.Pod) bool { return o.UID == p.UID }) {
				got = &list.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		skipIfV2Hung(t, "waiting for a replacement pod of %s: %v", name, err)
		t.Fatalf("waiting for a replacement pod of %s: %v", name, err)
	}
	return got
}

// checkEvictedSize checks that the admission webhook started a replacement
// at the cpu request its evicted predecessor's Deferred resize asked for,
// and said so in its annotation.
func checkEvictedSize(t *testing.T, pod *corev1.Pod, evicted, cpu string) {
	t.Helper()
	check(t, "replacement cpu request", pod.Spec.Containers[0].Resources.Requests.Cpu().String(), cpu)
	a, ok, err := history.ParseAdmission(pod)
	if !ok || err != nil {
		t.Fatalf("replacement %s has no admission annotation (%v): %v", pod.Name, ok, err)
	}
	check(t, "admission annotation's evicted pod", a.Evicted, evicted)
	t.Logf("replacement %s admitted: %s (evicted %s)", pod.Name, a, a.Evicted)
}

// createPDB creates a PodDisruptionBudget for the pods labelled app=name
// that keeps minAvailable of them.
func createPDB(t *testing.T, ns, name string, minAvailable int32) {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PDB %s: %v", name, err)
	}
}

// waitPDB waits until the budget's status allows the given disruptions.
func waitPDB(t *testing.T, ns, name string, allowed int32) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.DisruptionsAllowed == allowed, nil
	})
	if err != nil {
		skipIfV2Hung(t, "waiting for PDB %s to allow %d disruptions: %v", name, allowed, err)
		t.Fatalf("waiting for PDB %s to allow %d disruptions: %v", name, allowed, err)
	}
}

func scrapeMetrics(t *testing.T) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, controllerMetricsURL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+installedSnug.Token)
	resp, err := installedSnug.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", controllerMetricsURL(t), resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testControllerMetrics checks the controller's series against a policy of
// its own: the other subtests' policies are gone with their namespaces by
// now, and a deleted policy's series are removed (Metrics.forget).
func testControllerMetrics(t *testing.T, pc *policyclient.Client) {
	ns := createNamespace(t, "snug-ctl-metrics-")
	createPolicy(t, pc, ns, "m", v1alpha1.SnugPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "m"}}})
	series := fmt.Sprintf(`snug_controller_policy_condition{namespace=%q,policy="m",type="NoPodsMatched"} 1`, ns)
	var b string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		b = scrapeMetrics(t)
		return strings.Contains(b, series), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s on /metrics: %v", series, err)
	}
	for _, name := range []string{"snug_controller_reconciles_total", "snug_controller_reconcile_duration_seconds_bucket",
		fmt.Sprintf(`snug_controller_policy_pods{namespace=%q,policy="m"} 0`, ns), "snug_controller_leader 1"} {
		if !strings.Contains(b, name) {
			t.Errorf("/metrics has no %s", name)
		}
	}
	// A deleted policy's series go with it.
	if err := pc.SnugPolicies(ns).Delete(t.Context(), "m", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := `policy="m"`
	err = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		m := scrapeMetrics(t)
		return !strings.Contains(m, fmt.Sprintf(`namespace=%q,%s`, ns, gone)), nil
	})
	if err != nil {
		t.Errorf("the deleted policy's series are still on /metrics: %v", err)
	}
}
