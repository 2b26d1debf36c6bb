//go:build e2e

package e2e

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/agent"
)

// TestStartupBoost is issue 31's startup boost on the real kubelet, with
// snug installed by its chart: a container whose start-up burns 3 s of
// CPU on four threads before its readiness probe passes, at 100m/200m.
// Three pods start it: under no policy (what a plain cluster gives), under
// an InPlace policy without a boost (snug grows a throttled container at
// once and keeps it grown), and under one with startupBoost Factor 5. The
// boosted pod is resized to 500m/1 as it starts and set back to exactly
// 100m/200m once Ready, in place, in two resizes with a StartupBoost event
// each; the figures (time to Ready of each, the delay from Ready to the
// boost's end) are logged, not asserted.
func TestStartupBoost(t *testing.T) {
	pc := installPolicyCRD(t)
	ag := installSnug(t, snugInstall{})
	ns := testNamespace(t, "snug-boost-")
	boosted := map[string]string{"snug-e2e": "boost"}
	plain := map[string]string{"snug-e2e": "noboost"}
	createPolicy(t, pc, ns, "boost", v1alpha1.SnugPolicySpec{
		Selector:     &metav1.LabelSelector{MatchLabels: boosted},
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
		ResourcePolicy: &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
			ContainerName: "*",
			StartupBoost:  &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: v1alpha1.CPUBoostFactor, Factor: ptr.To[int32](5)}},
		}}},
	})
	createPolicy(t, pc, ns, "noboost", v1alpha1.SnugPolicySpec{
		Selector:     &metav1.LabelSelector{MatchLabels: plain},
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
	})
	start := func(name string, labels map[string]string) (string, time.Duration) {
		pod := createLoadPod(t, ns, loadPod{name: name, labels: labels, readyz: true,
			args:       []string{"--startup-work=3s", "--startup-threads=4"},
			cpuRequest: "100m", cpuLimit: "200m", memRequest: "32Mi", memLimit: "64Mi"})
		var took time.Duration
		waitFor(t, "pod "+name+" Ready", 3*time.Minute, func() (bool, error) {
			if !podReady(getPod(t, ns, pod)) {
				return false, nil
			}
			took = startupTook(t, ns, pod)
			return true, nil
		})
		return pod, took
	}
	// One after the other, each pod deleted before the next starts: the
	// start-ups do not share the node's cores, and the pod snug grew
	// (up to most of the node) leaves room for the next.
	bp, bare := start("bare", map[string]string{"snug-e2e": "none"})
	deletePod(t, ns, bp)
	gp, grown := start("grown", plain)
	// What snug's throttle grow leaves the pod with once it is Ready: the
	// boost gives it back, the grow keeps it until the stabilization
	// window shrinks it.
	grownCPU := getPod(t, ns, gp).Spec.Containers[0].Resources.Requests.Cpu().String()
	deletePod(t, ns, gp)
	pod, took := start("boosted", boosted)
	id := getPod(t, ns, pod).Status.ContainerStatuses[0].ContainerID

	c := ag.waitAutoscale(t, ns, pod, 2*time.Minute, func(c agent.ContainerJSON) bool {
		b := c.Autoscale.StartupBoost
		return b != nil && b.Phase == "Over" && len(c.Autoscale.Resizes) >= 2
	})
	for _, r := range c.Autoscale.Resizes {
		t.Logf("resize %s %s: %s", r.StartupBoost, r.Outcome, r.Plan)
	}
	var boost, unboost *agent.ResizeJSON
	for i, r := range c.Autoscale.Resizes {
		switch {
		case r.StartupBoost == "Boost" && r.Outcome == "Applied" && boost == nil:
			boost = &c.Autoscale.Resizes[i]
		case r.StartupBoost == "Unboost" && r.Outcome == "Applied" && unboost == nil:
			unboost = &c.Autoscale.Resizes[i]
		case r.StartupBoost == "":
			t.Errorf("resize %s %s while starting, want only the boost and its end", r.Outcome, r.Plan)
		}
	}
	if boost == nil || unboost == nil {
		t.Fatalf("resizes %+v, want an applied Boost and Unboost", c.Autoscale.Resizes)
	}
	if got := boost.Containers["app"]; got.CPURequestMillicores != 500 || got.CPULimitMillicores != 1000 {
		t.Errorf("boosted to cpu %dm/%dm, want 500m/1000m", got.CPURequestMillicores, got.CPULimitMillicores)
	}
	p := getPod(t, ns, pod)
	r := p.Spec.Containers[0].Resources
	if r.Requests.Cpu().MilliValue() != 100 || r.Limits.Cpu().MilliValue() != 200 {
		t.Errorf("spec cpu after the boost %v/%v, want 100m/200m again", r.Requests.Cpu(), r.Limits.Cpu())
	}
	var readyAt time.Time
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.ContainersReady && cond.Status == corev1.ConditionTrue {
			readyAt = cond.LastTransitionTime.Time
		}
	}
	seen := c.Autoscale.StartupBoost.ReadyAt
	if seen == nil || readyAt.IsZero() {
		t.Fatalf("ready seen %v, ContainersReady since %v: want both", seen, readyAt)
	}
	// ContainersReady's time has whole seconds: the delay from it is up to
	// a second long; the agent's is from when it saw the pod Ready.
	t.Logf("BOOST %s: time to Ready (start-up, the container's clock) %.2fs without snug, %.2fs under snug without a boost (cpu request %s at Ready, from 100m), %.2fs with the boost; boost decided %.2fs and applied %.2fs after the container started (whole seconds); Ready -> unboost applied %.2fs (ContainersReady, whole seconds), %.2fs from the agent seeing Ready (decided %.2fs after it, applied by the kubelet %.2fs after the decision)",
		labOpts.KubernetesVersion, bare.Seconds(), grown.Seconds(), grownCPU, took.Seconds(),
		boost.DecidedAt.Sub(getPod(t, ns, pod).Status.ContainerStatuses[0].State.Running.StartedAt.Time).Seconds(),
		boost.AppliedAt.Sub(getPod(t, ns, pod).Status.ContainerStatuses[0].State.Running.StartedAt.Time).Seconds(),
		unboost.AppliedAt.Sub(readyAt).Seconds(), unboost.AppliedAt.Sub(*seen).Seconds(),
		unboost.DecidedAt.Sub(*seen).Seconds(), unboost.AppliedAt.Sub(unboost.DecidedAt).Seconds())
	waitEvent(t, ns, pod, agent.ReasonStartupBoost)
	assertInPlace(t, ns, pod, id, corev1.PodQOSBurstable)
}

var startedUp = regexp.MustCompile(`started up: .* in ([0-9.]+)s`)

// startupTook reads how long the pod's start-up took from snug-load's log.
func startupTook(t *testing.T, ns, pod string) time.Duration {
	t.Helper()
	raw, err := client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: "app"}).DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m := startedUp.FindSubmatch(raw)
	if m == nil {
		t.Fatalf("pod %s's log has no start-up line:\n%s", pod, raw)
	}
	s, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(s * float64(time.Second))
}
