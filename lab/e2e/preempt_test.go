//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/resize"
	"github.com/snug-dev/snug/lab/internal/experiment"
)

// TestGrowLeavesRoomForHigherPriority: a workload snug grows towards more
// than the node has is cut to leave room for the replacement of a
// higher-priority pod on the node (resize.PreemptionReserve), so that a
// rolling update of that pod (maxSurge 1: the new pod comes before the old
// one goes) schedules beside it instead of preempting it. Without the
// reserve the grow fills the node and the scheduler restarts the workload
// to make room: the eleventh full run's TestChaos lost its workload so,
// to the surge replica of snug's own controller during a helm upgrade.
func TestGrowLeavesRoomForHigherPriority(t *testing.T) {
	pc := installPolicyCRD(t)
	ag := installSnug(t, snugInstall{})
	ns := testNamespace(t, "snug-preempt-")
	ctx := t.Context()

	// A priority class of this test's own, above the workload's 0.
	class := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns}, Value: 1000000, Description: "snug e2e: a pod above the default priority"}
	if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating priority class: %v", err)
	}
	t.Cleanup(func() {
		_ = client.SchedulingV1().PriorityClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
	})
	critical := experiment.LoadDeployment{
		Name: "critical", Replicas: 1, LoadDir: labOpts.LoadDir(), Args: []string{"--cpu=0"},
		CPURequest: "300m", MemoryRequest: "16Mi", MemoryLimit: "64Mi",
	}.Build()
	critical.Spec.Template.Spec.PriorityClassName = class.Name
	critical.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
	}}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, critical, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating deployment critical: %v", err)
	}
	before, err := experiment.RunningPods(ctx, client, ns, "app=critical", 1, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}

	createPolicy(t, pc, ns, "load", v1alpha1.SnugPolicySpec{
		TargetRef:    deploymentRef("load"),
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
	})
	// 100m/200m: a fully throttled second grows the request 5x (censored),
	// 100m -> 500m -> 2500m, and the second grow passes the node's room, so
	// the cut to it (less the reserve) comes within seconds, not after the
	// agent's one-minute warm-up.
	pods, err := experiment.LoadDeployment{
		Name: "load", Replicas: 1, LoadDir: labOpts.LoadDir(), Args: []string{"--cpu=50m"},
		CPURequest: "100m", CPULimit: "200m", MemoryRequest: "64Mi", MemoryLimit: "128Mi",
	}.Create(ctx, client, ns, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pod := pods[0].Name
	t.Cleanup(func() { os.Remove(filepath.Join(labOpts.LoadDir(), pod)) })
	id := pods[0].Status.ContainerStatuses[0].ContainerID
	// More than the node has: the agent grows until the node's room stops
	// it, less the reserve.
	step := writeLoad(t, pod, "cpu=4000m")
	var capAt int64
	c := ag.waitAutoscale(t, ns, pod, 3*time.Minute, func(c agent.ContainerJSON) bool {
		p := getPod(t, ns, pod)
		if !podSettled(p) {
			return false
		}
		alloc, others, reserve := nodeRoom(t, p)
		capAt = alloc - others - reserve
		// Within 20m of the cap: each increase is cut by a common
		// fraction, rounded down.
		return p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() >= capAt-20 && len(appliedAfter(c.Autoscale, step)) > 0
	})
	grown := getPod(t, ns, pod).Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
	if grown > capAt {
		t.Fatalf("the workload's cpu request grew to %dm, past the %dm that leaves the reserve", grown, capAt)
	}
	var plans []string
	for _, r := range appliedAfter(c.Autoscale, step) {
		plans = append(plans, r.Plan)
	}
	t.Logf("grown to %dm (cap %dm) in %v: %v", grown, capAt, time.Since(step).Round(100*time.Millisecond), plans)

	// The higher-priority Deployment rolls: its new pod comes first.
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"snug-e2e/rolled":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
	rolled := time.Now()
	if _, err := client.AppsV1().Deployments(ns).Patch(ctx, "critical", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("rolling deployment critical: %v", err)
	}
	waitFor(t, "deployment critical rolled out", 2*time.Minute, func() (bool, error) {
		after, err := experiment.RunningPods(ctx, client, ns, "app=critical", 1, time.Second)
		return err == nil && after[0].Name != before[0].Name, nil
	})
	t.Logf("deployment critical rolled out in %v beside the grown workload", time.Since(rolled).Round(100*time.Millisecond))
	assertInPlace(t, ns, pod, id, corev1.PodQOSBurstable)
}

// nodeRoom is the pod's node's cpu allocatable, what its other pods claim
// and the reserve a grow of pod leaves (millicores), as the agent counts
// them.
func nodeRoom(t *testing.T, pod *corev1.Pod) (alloc, others, reserve int64) {
	t.Helper()
	node, err := client.CoreV1().Nodes().Get(t.Context(), pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading node %s: %v", pod.Spec.NodeName, err)
	}
	pods, err := client.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", pod.Spec.NodeName).String()})
	if err != nil {
		t.Fatalf("listing the pods of node %s: %v", pod.Spec.NodeName, err)
	}
	claimed, reserved := resize.Claimed(pods.Items, pod.UID), resize.PreemptionReserve(pods.Items, pod)
	return node.Status.Allocatable.Cpu().MilliValue(), claimed.Cpu().MilliValue(), reserved.Cpu().MilliValue()
}
