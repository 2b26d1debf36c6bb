//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab"
)

// chaosNS is the namespace installSnug installs snug's chart into.
const chaosNS = "snug-system"

// TestChaos puts the in-cluster install through what an on-call engineer
// asks about before letting snug touch production pods, one workload under
// an InPlace policy throughout, and prints a CHAOS line with each figure:
//
//  1. the agent pod deleted between its resize patch and the kubelet's
//     answer (the kubelet is paused meanwhile): the DaemonSet's new agent
//     picks up the pod's state, neither repeats nor loses the grow, and the
//     workload converges;
//  2. the controller's leader pod deleted: the standby leads within the
//     lease duration and keeps writing policy status and checkpoints;
//  3. helm upgrade to a new image tag while the load steps above the limit:
//     the workload is not restarted, the step is still answered, the new agent does not
//     repeat what the old one did;
//  4. the API server stopped for 20 s and started again: snug's pods
//     recover without crash-looping (restarts counted and explained), the
//     agent samples again and the workload settles;
//  5. helm uninstall: nothing of snug is left, the workload runs on at its
//     last size, never restarted.
func TestChaos(t *testing.T) {
	pc := installPolicyCRD(t)
	// The default half-lives: the controller folds only those into
	// checkpoints, which the leader case watches being written.
	ag := installSnug(t, snugInstall{restartsCounted: true})
	ns := testNamespace(t, "snug-chaos-")
	createPolicy(t, pc, ns, "load", v1alpha1.SnugPolicySpec{
		TargetRef:    deploymentRef("load"),
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
	})
	pod := createAutoscaleDeployment(t, ns, "load", "") // cpu 50m/100m
	containerID := getPod(t, ns, pod).Status.ContainerStatuses[0].ContainerID
	tl := watchPod(t, ns, pod)

	t.Run("agent pod deleted mid-resize", func(t *testing.T) { chaosAgentDeleted(t, ag, ns, pod, tl) })
	t.Run("controller leader deleted", func(t *testing.T) { chaosLeaderDeleted(t, pc, ns) })
	t.Run("helm upgrade under a load step", func(t *testing.T) { chaosUpgrade(t, ag, ns, pod) })
	t.Run("API server down 20s", func(t *testing.T) { chaosAPIServerDown(t, ag, ns, pod) })
	assertInPlace(t, ns, pod, containerID, corev1.PodQOSBurstable)
	t.Run("helm uninstall", func(t *testing.T) { chaosUninstall(t, ag, ns, pod, containerID) })
}

func chaosAgentDeleted(t *testing.T, ag *agentProc, ns, pod string, tl *podTimeline) {
	// Settled first: no resize of the pod in flight, the kubelet has
	// applied the spec, so the resize the paused kubelet holds is the
	// agent's answer to the step.
	_, base := waitSettled(t, ag, ns, pod)
	baseLimit := base.Spec.Containers[0].Resources.Limits.Cpu().MilliValue()

	pause, resume := kubeletPauser(t)
	pause()
	step := writeLoad(t, pod, "cpu=400m")
	var patched *corev1.Pod
	waitFor(t, "the agent's grow in the pod's spec", 30*time.Second, func() (bool, error) {
		patched = getPod(t, ns, pod)
		return patched.Spec.Containers[0].Resources.Limits.Cpu().MilliValue() > baseLimit, nil
	})
	grownLimit := patched.Spec.Containers[0].Resources.Limits.Cpu().MilliValue()
	old := ag.snug.AgentPod
	if err := client.CoreV1().Pods(chaosNS).Delete(t.Context(), old, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the agent pod %s: %v", old, err)
	}
	deleted := time.Now()
	resume()
	if err := ag.snug.WaitAgent(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	ag.base, ag.pod = ag.snug.AgentURL, ag.snug.AgentPod
	back := time.Now()
	t.Logf("agent pod %s deleted with the grow %dm -> %dm patched but not applied; %s ready %.1fs later",
		old, baseLimit, grownLimit, ag.pod, back.Sub(deleted).Seconds())

	// Converged: the kubelet applied the spec, nothing pending, and the
	// new agent's last three samples are not throttled.
	c := ag.waitAutoscale(t, ns, pod, 3*time.Minute, func(c agent.ContainerJSON) bool {
		if !podSettled(getPod(t, ns, pod)) {
			return false
		}
		return unthrottled(c, back)
	})
	converged := time.Now()
	final := getPod(t, ns, pod).Status.ContainerStatuses[0].Resources.Limits.Cpu().MilliValue()
	var again []string
	for _, r := range c.Autoscale.Resizes {
		t.Logf("the new agent's resize: %s, %s, decided %.1fs after the step", r.Outcome, r.Plan, r.DecidedAt.Sub(step).Seconds())
		if r.Containers["app"].CPULimitMillicores == grownLimit {
			again = append(again, r.Plan)
		}
	}
	if len(again) > 0 {
		t.Errorf("the new agent sent the grow to %dm again: %v", grownLimit, again)
	}
	if final < grownLimit {
		t.Errorf("the grow to %dm was lost: the pod runs at a %dm limit", grownLimit, final)
	}
	if at := tl.firstStatusCPULimit(step, grownLimit); at.IsZero() {
		t.Logf("the status never showed %dm by itself: the new agent's resize superseded it before the kubelet answered", grownLimit)
	}
	t.Logf("CHAOS %s agent-deleted: converged %.1fs after the load step, %.1fs after the agent pod's deletion; grow %dm -> %dm kept, %d resizes by the new agent, final limit %dm",
		labOpts.KubernetesVersion, converged.Sub(step).Seconds(), converged.Sub(deleted).Seconds(), baseLimit, grownLimit, len(c.Autoscale.Resizes), final)
}

func chaosLeaderDeleted(t *testing.T, pc *policyclient.Client, ns string) {
	leader := leaseHolder(t)
	standby := ""
	for _, p := range controllerPods(t) {
		if p.Name != leader && p.DeletionTimestamp == nil && podReady(&p) {
			standby = p.Name
		}
	}
	if standby == "" {
		t.Fatalf("no Ready standby controller beside the leader %s", leader)
	}
	// A checkpoint exists before the leader goes, so that a new write of it
	// can be told apart.
	cm := waitCheckpoint(t, ns, "load", "")
	if err := client.CoreV1().Pods(chaosNS).Delete(t.Context(), leader, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the leader %s: %v", leader, err)
	}
	deleted := time.Now()
	// The standby, or the Deployment's replacement if it is quicker to
	// the released Lease.
	var next string
	waitFor(t, "another controller leading", time.Minute, func() (bool, error) {
		next = leaseHolder(t)
		if next == "" || next == leader {
			return false, nil
		}
		p, err := client.CoreV1().Pods(chaosNS).Get(t.Context(), next, metav1.GetOptions{})
		return err == nil && p.DeletionTimestamp == nil, nil
	})
	takeover := time.Since(deleted)
	// A steady pod's agent publishes a snapshot only when it changed
	// materially (docs/agent.md), so stand in for a publication once the
	// new leader leads: the pod's snapshot again, newer. The new leader
	// must fold it in.
	republishSnapshot(t, ns, "app=load")
	if installedSnug != nil {
		installedSnug.ControllerPod = next
	}
	who := "the standby"
	if next != standby {
		who = "the replacement pod"
	}
	// The lease is 15 s, retried every 2 s with client-go's jitter of up
	// to 1.2 times that (internal/controller/run.go).
	if takeover > 20*time.Second {
		t.Errorf("%s %s led %.1fs after the leader's deletion, beyond the 15 s lease and a jittered 2 s retry", who, next, takeover.Seconds())
	}

	// Status: a spec change is observed by the new leader.
	p, err := pc.SnugPolicies(ns).Get(t.Context(), "load", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Behavior = &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownBehavior{StabilizationWindowSeconds: ptr.To[int32](120)}}
	if p, err = pc.SnugPolicies(ns).Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	waitPolicy(t, pc, ns, "load", "the new generation observed", func(q *v1alpha1.SnugPolicy) bool {
		return q.Status.ObservedGeneration >= p.Generation
	})
	statusAfter := time.Since(changed)
	// Checkpoints: written again by the new leader.
	waitCheckpoint(t, ns, "load", cm.ResourceVersion)
	checkpointAfter := time.Since(deleted)
	scaleController(t, 2) // the Deployment's replacement is Ready too
	t.Logf("controllers before the deletion: leader %s, standby %s", leader, standby)
	t.Logf("CHAOS %s leader-deleted: %s %s led %.1fs after %s was deleted; status of generation %d written %.1fs after the change; checkpoint written %.1fs after the deletion",
		labOpts.KubernetesVersion, who, next, takeover.Seconds(), leader, p.Generation, statusAfter.Seconds(), checkpointAfter.Seconds())
}

func chaosUpgrade(t *testing.T, ag *agentProc, ns, pod string) {
	_, tags := pushSnugImages(t, 2)
	oldAgent := ag.snug.AgentPod
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- ag.snug.Upgrade(context.WithoutCancel(t.Context()), tags[1]) }()
	// The step lands while the agent DaemonSet rolls: the old agent may
	// answer it, or the new one must.
	waitFor(t, "the upgrade under way", 2*time.Minute, func() (bool, error) {
		select {
		case err := <-done:
			done <- err
			return true, nil
		default:
		}
		p, err := client.CoreV1().Pods(chaosNS).Get(t.Context(), oldAgent, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil), nil
	})
	// Above the limit the pod has then, so that the step needs a grow.
	atStep := getPod(t, ns, pod).Spec.Containers[0].Resources.Limits.Cpu().MilliValue()
	load := atStep + 200
	step := writeLoad(t, pod, fmt.Sprintf("cpu=%dm", load))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	upgraded := time.Since(start)
	ag.base, ag.pod = ag.snug.AgentURL, ag.snug.AgentPod
	if installedSnug != nil {
		installedSnug.ControllerPod, installedSnug.ControllerMetricsURL = ag.snug.ControllerPod, ag.snug.ControllerMetricsURL
	}
	found := getPod(t, ns, pod).Spec.Containers[0].Resources.Limits.Cpu().MilliValue()
	back := time.Now()
	// Converged at the new load: the spec applied and three unthrottled
	// samples from the new agent, at a limit that carries the load.
	c := ag.waitAutoscale(t, ns, pod, 3*time.Minute, func(c agent.ContainerJSON) bool {
		p := getPod(t, ns, pod)
		if !podSettled(p) || p.Spec.Containers[0].Resources.Limits.Cpu().MilliValue() < load {
			return false
		}
		return unthrottled(c, back)
	})
	converged := time.Since(step)
	// No double resize: none of the new agent's resizes after the step
	// asks for the cpu limit the pod already had from the one before
	// (or, for the first, the limit at the step).
	var plans []string
	prev := atStep
	for _, r := range appliedAfter(c.Autoscale, step) {
		lim := r.Containers["app"].CPULimitMillicores
		if lim == prev {
			t.Errorf("the new agent resized to the cpu limit %dm the pod already had: %s", lim, r.Plan)
		}
		prev = lim
		plans = append(plans, r.Plan)
	}
	t.Logf("CHAOS %s upgrade: helm upgrade to %s took %.1fs; the step to %dm at a %dm limit, during the rollout, converged %.1fs after it; the new agent found a %dm limit and applied %d resize(s) %v",
		labOpts.KubernetesVersion, tags[1], upgraded.Seconds(), load, atStep, converged.Seconds(), found, len(plans), plans)
}

func chaosAPIServerDown(t *testing.T, ag *agentProc, ns, pod string) {
	before := snugRestarts(t)
	var log strings.Builder
	stopped, ready, err := lab.APIServerOutage(t.Context(), labOpts, 20*time.Second, &log)
	t.Log(strings.TrimSpace(log.String()))
	if err != nil {
		t.Fatal(err)
	}
	// Recovered: the node's agent Ready and answering (its token reviews
	// reach the API server again), both controllers Ready, one of them
	// leading with a renewal after the outage, no container waiting in a
	// back-off. Right after the outage the pods' status is the one from
	// before; the Lease renewal and the agent's answer are what is new.
	waitFor(t, "snug's pods Ready and leading", 3*time.Minute, func() (bool, error) {
		pods, err := client.CoreV1().Pods(chaosNS).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		agents, controllers := 0, 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || !podReady(&p) {
				continue
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Waiting != nil {
					return false, nil
				}
			}
			switch p.Labels["app.kubernetes.io/component"] {
			case "agent":
				agents++
			case "controller":
				controllers++
			}
		}
		l, err := client.CoordinationV1().Leases(chaosNS).Get(t.Context(), "snug-controller", metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(ready) || agents != 1 || controllers != 2 {
			return false, nil
		}
		if err := ag.snug.WaitAgent(t.Context(), ""); err != nil {
			return false, nil
		}
		ag.base, ag.pod = ag.snug.AgentURL, ag.snug.AgentPod
		_, err = ag.api().Container(t.Context(), ns, pod, "app", agent.Query{Limit: 1})
		return err == nil, nil
	})
	recovered := time.Now()
	if installedSnug != nil {
		installedSnug.ControllerPod = leaseHolder(t)
	}

	// The workload's pod settles: a resize the agent sent during or just
	// after the outage is applied, and the kubelet has reported its pods'
	// state since (what the restart count below reads).
	waitFor(t, "the workload settled after the outage", 3*time.Minute, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
		return err == nil && podSettled(p), nil
	})
	settled := time.Now()
	c := ag.waitAutoscale(t, ns, pod, time.Minute, func(c agent.ContainerJSON) bool {
		return len(ratePointsAfter(c.History, settled)) >= 3
	})
	var during []string
	if c.Autoscale != nil {
		for _, r := range c.Autoscale.Resizes {
			if r.DecidedAt.After(stopped.Add(-time.Second)) {
				during = append(during, fmt.Sprintf("%s at +%.0fs: %s", r.Outcome, r.DecidedAt.Sub(stopped).Seconds(), r.Plan))
			}
		}
	}
	for _, d := range during {
		t.Logf("resize since the outage began: %s", d)
	}
	// Counted now: the kubelet has reported what it did during the outage.
	after := snugRestarts(t)
	var restarts []string
	for key, n := range after {
		d := n.count - before[key].count
		if d <= 0 {
			continue
		}
		restarts = append(restarts, fmt.Sprintf("%s %d", key, d))
		t.Logf("%s restarted %d time(s); last end: %s; its log's end:\n%s", key, d, n.last, previousLog(t, key))
		if d > 1 {
			t.Errorf("%s restarted %d times after a 20 s outage: a crash loop", key, d)
		}
	}
	if len(restarts) == 0 {
		restarts = []string{"none"}
	}
	t.Logf("CHAOS %s apiserver-down: down %.1fs; snug Ready and leading %.1fs after the API server was back, the workload settled %.1fs after; restarts: %s; %d resize(s) decided since the outage began",
		labOpts.KubernetesVersion, ready.Sub(stopped).Seconds(), recovered.Sub(ready).Seconds(), settled.Sub(ready).Seconds(), strings.Join(restarts, ", "), len(during))
}

func chaosUninstall(t *testing.T, ag *agentProc, ns, pod, containerID string) {
	before := getPod(t, ns, pod)
	start := time.Now()
	if err := ag.snug.Stop(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if left := leftovers(t, chaosNS); len(left) > 0 {
		t.Errorf("after helm uninstall: %s", strings.Join(left, ", "))
	}
	waitControllerObjectsGone(t, chaosNS)
	after := assertInPlace(t, ns, pod, containerID, corev1.PodQOSBurstable)
	if after.UID != before.UID {
		t.Fatalf("pod %s was replaced during the uninstall", pod)
	}
	spec, was := after.Spec.Containers[0].Resources, before.Spec.Containers[0].Resources
	if !equalCPUMem(spec.Limits, was.Limits) || !equalCPUMem(spec.Requests, was.Requests) {
		t.Errorf("the uninstall changed the pod's resources: %v -> %v", was, spec)
	}
	if st := after.Status.ContainerStatuses[0].Resources; st == nil || !equalCPUMem(st.Limits, spec.Limits) || !equalCPUMem(st.Requests, spec.Requests) {
		t.Errorf("after the uninstall the pod's status %v differs from its spec %v", st, spec)
	}
	t.Logf("CHAOS %s uninstall: helm uninstall and its pods gone in %.1fs; no snug object left (Lease and admission Secret collected); pod %s runs on at %s, restarts 0",
		labOpts.KubernetesVersion, took.Seconds(), pod, podResources(after))
}

// leaseHolder is the pod name in the controllers' Lease, "" when none.
func leaseHolder(t *testing.T) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases(chaosNS).Get(t.Context(), "snug-controller", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	name, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	return name
}

func controllerPods(t *testing.T) []corev1.Pod {
	t.Helper()
	pods, err := client.CoreV1().Pods(chaosNS).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=controller"})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// republishSnapshot writes each selected pod's snapshot annotation again
// with the time of now, as the agent would publish a new one; it waits
// for each pod's first snapshot.
func republishSnapshot(t *testing.T, ns, selector string) {
	t.Helper()
	pods, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		var s history.Snapshot
		waitFor(t, "pod "+p.Name+"'s snapshot", 2*time.Minute, func() (bool, error) {
			q, err := client.CoreV1().Pods(ns).Get(t.Context(), p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			var ok bool
			s, ok, err = history.ParseSnapshot(q)
			return ok, err
		})
		s.Time = time.Now()
		patch, err := s.MergePatch(p.UID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Pods(ns).Patch(t.Context(), p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("publishing pod %s's snapshot again: %v", p.Name, err)
		}
	}
}

// waitCheckpoint waits for the policy's checkpoint ConfigMap with a
// resourceVersion other than notVersion.
func waitCheckpoint(t *testing.T, ns, policy, notVersion string) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	waitFor(t, "checkpoint of "+policy+" written", 4*time.Minute, func() (bool, error) {
		c, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "snug-checkpoint-"+policy, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		cm = c
		return c.ResourceVersion != notVersion, nil
	})
	return cm
}

type restartCount struct {
	count int32
	last  string
}

// snugRestarts counts the restarts of each container of snug's pods,
// keyed pod/container, with how it last ended.
func snugRestarts(t *testing.T) map[string]restartCount {
	t.Helper()
	pods, err := client.CoreV1().Pods(chaosNS).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]restartCount{}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			last := "-"
			if e := cs.LastTerminationState.Terminated; e != nil {
				last = fmt.Sprintf("%s, exit code %d at %s", e.Reason, e.ExitCode, e.FinishedAt.Format(time.TimeOnly))
			}
			out[p.Name+"/"+cs.Name] = restartCount{cs.RestartCount, last}
		}
	}
	return out
}

// previousLog is the end of the log of the container's previous run.
func previousLog(t *testing.T, key string) string {
	t.Helper()
	pod, container, _ := strings.Cut(key, "/")
	b, err := client.CoreV1().Pods(chaosNS).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: true, TailLines: ptr.To[int64](6)}).DoRaw(t.Context())
	if err != nil {
		return fmt.Sprintf("(no previous log: %v)", err)
	}
	return strings.TrimSpace(string(b))
}

// unthrottled reports whether the container's last three samples after
// since had under 5% of their periods throttled.
func unthrottled(c agent.ContainerJSON, since time.Time) bool {
	pts := ratePointsAfter(c.History, since)
	if len(pts) < 3 {
		return false
	}
	for _, p := range pts[len(pts)-3:] {
		if p.CPUThrottledFraction == nil || *p.CPUThrottledFraction >= 0.05 {
			return false
		}
	}
	return true
}

// waitControllerObjectsGone waits until the Lease and the admission Secret
// that the controllers made in ns are gone: owned by their Deployment
// (--owner-deployment), the garbage collector deletes them with it.
func waitControllerObjectsGone(t *testing.T, ns string) {
	t.Helper()
	for what, get := range map[string]func(ctx context.Context) error{
		"Lease snug-controller": func(ctx context.Context) error {
			_, err := client.CoordinationV1().Leases(ns).Get(ctx, "snug-controller", metav1.GetOptions{})
			return err
		},
		"Secret snug-admission-tls": func(ctx context.Context) error {
			_, err := client.CoreV1().Secrets(ns).Get(ctx, "snug-admission-tls", metav1.GetOptions{})
			return err
		},
	} {
		waitNotFound(t, t.Context(), what+" after helm uninstall", get)
	}
}

// TestChaosMemorySpike is issue 17's case 6, the kubelet's check-then-write
// race on a memory limit decrease (kubernetes#135670): a Guaranteed pod
// (request = limit, so the limit follows a shrink) holds 100Mi under a
// 256Mi limit until the agent shrinks it towards usage plus headroom; within
// a second of seeing the shrink in the pod's spec the test makes it hold
// 160Mi. It counts OOM kills and prints what happened. If one happens,
// snug must grow memory again within 2 s of the container's restart and
// must not shrink it again within the policy's stabilization window.
func TestChaosMemorySpike(t *testing.T) {
	const window = 30 // seconds
	pc := installPolicyCRD(t)
	// A Guaranteed container's memory is not shrunk before the regrow
	// window has passed (docs/recommend.md, TiedLimit): one minute here.
	ag := installSnug(t, snugInstall{agentArgs: []string{"--regrow-window=1m"}})
	ns := testNamespace(t, "snug-spike-")
	createPolicy(t, pc, ns, "spike", v1alpha1.SnugPolicySpec{
		TargetRef:    deploymentRef("spike"),
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
		Behavior: &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownBehavior{
			StabilizationWindowSeconds: ptr.To[int32](window),
		}},
	})
	pods, err := experiment.LoadDeployment{
		Name: "spike", Replicas: 1, LoadDir: labOpts.LoadDir(), Args: []string{"--cpu=10m"},
		CPURequest: "100m", CPULimit: "100m", MemoryRequest: "256Mi", MemoryLimit: "256Mi",
	}.Create(t.Context(), client, ns, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pod := pods[0].Name
	t.Cleanup(func() { os.Remove(filepath.Join(labOpts.LoadDir(), pod)) })
	writeLoad(t, pod, "memory=100Mi")

	// The shrink, as soon as it is in the spec.
	var shrunk *corev1.Pod
	waitFor(t, "the agent's memory shrink in the pod's spec", 4*time.Minute, func() (bool, error) {
		shrunk = getPod(t, ns, pod)
		return shrunk.Spec.Containers[0].Resources.Limits.Memory().Value() < 256<<20, nil
	})
	seen := time.Now()
	spike := writeLoad(t, pod, "memory=160Mi")
	shrunkTo := shrunk.Spec.Containers[0].Resources.Limits.Memory().Value()
	t.Logf("shrink seen in the spec: memory limit 256Mi -> %.0fMi; 160Mi held %.2fs later", float64(shrunkTo)/(1<<20), spike.Sub(seen).Seconds())

	// Whatever happens, the pod ends up holding 160Mi at a limit above it
	// with its container running.
	var now *corev1.Pod
	waitFor(t, "the pod running at a memory limit above 160Mi", 3*time.Minute, func() (bool, error) {
		now = getPod(t, ns, pod)
		st := now.Status.ContainerStatuses
		return podSettled(now) && len(st) == 1 && st[0].State.Running != nil &&
			st[0].Resources.Limits.Memory().Value() > 160<<20, nil
	})
	cs := now.Status.ContainerStatuses[0]
	c := ag.waitAutoscale(t, ns, pod, time.Minute, func(c agent.ContainerJSON) bool {
		return c.Latest.MemoryWorkingSetBytes >= 150<<20
	})
	var plans []string
	for _, r := range c.Autoscale.Resizes {
		if r.DecidedAt.After(seen.Add(-5 * time.Second)) {
			plans = append(plans, fmt.Sprintf("%s +%.2fs %s", r.Outcome, r.DecidedAt.Sub(spike).Seconds(), r.Plan))
		}
	}
	for _, p := range plans {
		t.Logf("resize around the spike: %s", p)
	}
	if cs.RestartCount == 0 {
		t.Logf("CHAOS %s memory-spike: no OOM kill; the limit went 256Mi -> %.0fMi, the spike to 160Mi came %.2fs after the shrink was seen, and the pod runs at %s",
			labOpts.KubernetesVersion, float64(shrunkTo)/(1<<20), spike.Sub(seen).Seconds(), podResources(now))
		return
	}
	// An OOM kill: when the container restarted, and the agent's first
	// memory grow after it.
	last := cs.LastTerminationState.Terminated
	if last == nil {
		t.Fatalf("container restarted %d times without a last termination state", cs.RestartCount)
	}
	restarted := last.FinishedAt.Time
	var grow *agent.ResizeJSON
	for i, r := range c.Autoscale.Resizes {
		if r.DecidedAt.After(restarted.Add(-time.Second)) && r.Containers["app"].MemoryLimitBytes > shrunkTo {
			grow = &c.Autoscale.Resizes[i]
			break
		}
	}
	if grow == nil {
		t.Fatalf("OOM kill (%s, exit %d) at %s, and no memory grow after it: %v", last.Reason, last.ExitCode, restarted.Format(time.TimeOnly), plans)
	}
	after := grow.DecidedAt.Sub(restarted)
	if after > 2*time.Second {
		t.Errorf("memory grown %.2fs after the OOM kill's restart, want within 2 s", after.Seconds())
	}
	for _, r := range c.Autoscale.Resizes {
		if r.DecidedAt.After(grow.DecidedAt) && r.DecidedAt.Before(grow.DecidedAt.Add(window*time.Second)) &&
			r.Containers["app"].MemoryLimitBytes < grow.Containers["app"].MemoryLimitBytes && r.Containers["app"].MemoryLimitBytes != 0 {
			t.Errorf("memory shrunk again %.1fs after the grow, inside the %d s window: %s", r.DecidedAt.Sub(grow.DecidedAt).Seconds(), window, r.Plan)
		}
	}
	t.Logf("CHAOS %s memory-spike: %d OOM kill(s) (%s, exit %d); the limit went 256Mi -> %.0fMi, the spike came %.2fs after the shrink was seen; memory grown %.2fs after the restart (%s); the pod runs at %s",
		labOpts.KubernetesVersion, cs.RestartCount, last.Reason, last.ExitCode, float64(shrunkTo)/(1<<20), spike.Sub(seen).Seconds(),
		after.Seconds(), grow.Plan, podResources(now))
}
