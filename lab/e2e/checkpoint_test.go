//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/recommend"
)

// TestCheckpoint runs the real agent and controller together and holds the
// learnt-history loop to docs/controller.md: the agent publishes each
// covered pod's snapshot in its annotation, the controller folds it into
// the policy's checkpoint ConfigMap, and the pod that replaces a deleted
// one starts from that history: no warm-up, a target at the workload's
// learnt size while its own load is a quarter of it, and a grow to that
// size within its first seconds. An unseeded container would warm up for
// a minute and target its own 50m.
func TestCheckpoint(t *testing.T) {
	ctx := t.Context()
	pc := installPolicyCRD(t)
	// Without admission: this is the agent's seeding, which sizes a new pod
	// when the webhook did not (TestAdmission covers the webhook).
	ag := installSnug(t, snugInstall{agentArgs: []string{"--snapshot-interval=10s"}, set: []string{"admission.enabled=false"}})
	ns := testNamespace(t, "snug-ckpt-")
	createPolicy(t, pc, ns, "load", v1alpha1.SnugPolicySpec{
		TargetRef:    &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: "load"},
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
	})
	first := createAutoscaleDeployment(t, ns, "load", "")
	ag.waitAutoscale(t, ns, first, time.Minute, func(c agent.ContainerJSON) bool {
		return c.Autoscale != nil && c.Autoscale.LastDecision != nil
	})
	step := writeLoad(t, first, "cpu=200m")

	// The agent publishes; the controller checkpoints. Wait until the
	// checkpoint's workload aggregate has learnt the 200m.
	cfg := recommend.DefaultConfig()
	var learnt recommend.Recommendation
	var seconds float64
	waitFor(t, "a checkpoint that learnt the 200m load", 4*time.Minute, func() (bool, error) {
		cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, history.CheckpointName("load"), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		a, err := history.CheckpointAggregate(cm.Data, "app")
		if err != nil || a == nil {
			return false, err
		}
		if learnt, err = a.Recommendation(cfg, recommend.Bounds{}, time.Now()); err != nil {
			return false, err
		}
		seconds = a.CPUSeconds
		return learnt.CPU.Target >= 180, nil
	})
	t.Logf("checkpoint %s after %.0fs of load: %.0f cpu seconds, workload cpu target %dm, memory target %.1f MiB",
		history.CheckpointName("load"), time.Since(step).Seconds(), seconds, learnt.CPU.Target, float64(learnt.Memory.Target)/(1<<20))
	p := getPod(t, ns, first)
	s, ok, err := history.ParseSnapshot(p)
	if !ok || err != nil {
		t.Fatalf("pod %s carries no snapshot: ok %v, err %v", first, ok, err)
	}
	own, err := s.Aggregate("app")
	if err != nil || own == nil {
		t.Fatalf("the pod's snapshot of app: %v, %v", own, err)
	}
	t.Logf("pod %s's snapshot at %s: %.0f cpu seconds (%d bytes)", first, s.Time.Format(time.RFC3339), own.CPUSeconds, len(p.Annotations[history.SnapshotAnnotation]))

	// The pod goes; the Deployment's next one runs at 50m.
	deletePod(t, ns, first)
	var second string
	waitFor(t, "the replacement pod running", 2*time.Minute, func() (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=load"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Name != first && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil {
				second = p.Name
				return true, nil
			}
		}
		return false, nil
	})
	c := ag.waitAutoscale(t, ns, second, time.Minute, func(c agent.ContainerJSON) bool {
		return c.Autoscale != nil && c.Autoscale.LastDecision != nil && len(ratePointsAfter(c.History, time.Time{})) >= 1
	})
	v := c.Autoscale
	samples := len(ratePointsAfter(c.History, time.Time{}))
	firstPoint := c.History[0].Time
	t.Logf("new pod %s after %d samples: seed %+v; cpu target %dm (own usage %.0fm), decision cpu %s %s",
		second, samples, v.Seed, v.Recommendation.CPUMillicores.Target, *c.Latest.CPUUsageMillicores, v.LastDecision.CPU.Action, v.LastDecision.CPU.Reason)
	if v.Seed == nil || v.Seed.CPUSeconds <= 0 || v.Seed.Checkpoint != ns+"/"+history.CheckpointName("load") {
		t.Errorf("seed %+v, want the history of %s/%s", v.Seed, ns, history.CheckpointName("load"))
	}
	// What only a seed gives: no minute of warm-up, and a target at the
	// workload's size while the container itself uses 50m.
	if samples < 60 && v.LastDecision.CPU.Why == "WarmingUp" {
		t.Errorf("the new pod warms up after %d samples: it did not start from the history", samples)
	}
	if got := v.Recommendation.CPUMillicores.Target; got < 150 {
		t.Errorf("new pod's cpu target %dm, want the workload's learnt size (at least 150m), not its own 50m", got)
	}

	// It is grown to that size at once, in place.
	containerID := getPod(t, ns, second).Status.ContainerStatuses[0].ContainerID
	c = ag.waitAutoscale(t, ns, second, time.Minute, func(c agent.ContainerJSON) bool {
		for _, r := range appliedAfter(c.Autoscale, time.Time{}) {
			if r.Containers["app"].CPURequestMillicores >= 150 {
				return true
			}
		}
		return false
	})
	for _, r := range appliedAfter(c.Autoscale, time.Time{}) {
		t.Logf("new pod: %s, decided %.1fs after its first sample in the agent's history", r.Plan, r.DecidedAt.Sub(firstPoint).Seconds())
	}
	assertInPlace(t, ns, second, containerID, corev1.PodQOSBurstable)
	waitFor(t, "the new pod's own snapshot", time.Minute, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(context.Background(), second, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, ok, err := history.ParseSnapshot(p)
		return ok, err
	})
	ag.logCost(t)
}
