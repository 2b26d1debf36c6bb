//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/agent"
)

// TestAgentConflict: a person resizes a container by hand while the
// agent's own resize of it is accepted but not yet acted on by the kubelet.
// The agent's wait (fed by its pod informer) must call that a Conflict, not
// a rejection, and plan again at once from the person's values: the next
// resize is sent within the recommender's initial backoff (5 s), is
// Applied, and keeps the person's 1:3 cpu request:limit ratio; the
// container never restarts.
//
// To keep the agent's resize undecided the test stops the lab's kubelet
// (SIGSTOP) just before it steps the load, and continues it (SIGCONT) as
// soon as the agent has recorded the Conflict, and in a cleanup whatever
// happens: a few seconds, well inside the node's 40 s lease.
func TestAgentConflict(t *testing.T) {
	pc := installPolicyCRD(t)
	// The agent covers a targetRef policy's pods through the status.selector
	// the controller publishes.
	ag := installSnug(t, snugInstall{})
	ns := testNamespace(t, "snug-conflict-")
	createPolicy(t, pc, ns, "load", v1alpha1.SnugPolicySpec{
		TargetRef:    &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: "load"},
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
	})
	pod := createAutoscaleDeployment(t, ns, "load", "") // cpu 50m/100m
	containerID := getPod(t, ns, pod).Status.ContainerStatuses[0].ContainerID
	// 50m of load under a 100m limit can be throttled in bursts, and the
	// agent may grow the pod before the step: wait until no resize of it is
	// in flight and the kubelet has applied the spec, so that the resize the
	// paused kubelet holds is the first one decided after since.
	since, base := waitSettled(t, ag, ns, pod)
	baseCPU := base.Spec.Containers[0].Resources.Limits.Cpu().MilliValue()

	pause, resume := kubeletPauser(t)
	pausedAt := pause()
	step := writeLoad(t, pod, "cpu=400m")

	// The agent's grow is accepted: the spec moves, the status cannot.
	var planned *corev1.Pod
	waitFor(t, "the agent's resize in the pod's spec", 30*time.Second, func() (bool, error) {
		planned = getPod(t, ns, pod)
		return planned.Spec.Containers[0].Resources.Limits.Cpu().MilliValue() != baseCPU, nil
	})
	agentCPU := planned.Spec.Containers[0].Resources
	t.Logf("agent's resize accepted %.2fs after the step: cpu %s/%s", time.Since(step).Seconds(), agentCPU.Requests.Cpu(), agentCPU.Limits.Cpu())

	// A person's resize of the same container, as `kubectl patch
	// --subresource resize --type=json` sends it: cpu 60m/180m, lower than
	// the agent's and unlike both the old and the agent's values.
	human := `[{"op":"replace","path":"/spec/containers/0/resources/requests/cpu","value":"60m"},` +
		`{"op":"replace","path":"/spec/containers/0/resources/limits/cpu","value":"180m"}]`
	humanAt := time.Now()
	if _, err := client.CoreV1().Pods(ns).Patch(context.Background(), pod, types.JSONPatchType, []byte(human), metav1.PatchOptions{}, "resize"); err != nil {
		t.Fatalf("the person's resize: %v", err)
	}

	// Every decision from here on is recorded (the agent decides once a
	// second, the waits poll every 100 ms), for the no-backoff check below.
	decided := map[time.Time]agent.DecisionJSON{}
	record := func(c agent.ContainerJSON) {
		if d := c.Autoscale.LastDecision; d != nil {
			decided[d.Time] = *d
		}
	}
	c := ag.waitAutoscale(t, ns, pod, 30*time.Second, func(c agent.ContainerJSON) bool {
		record(c)
		return len(c.Autoscale.ResizesAfter(since)) > 0
	})
	first := c.Autoscale.ResizesAfter(since)[0]
	resumedAt := resume()
	t.Logf("kubelet stopped for %.2fs; the agent's first resize: %s: %s", resumedAt.Sub(pausedAt).Seconds(), first.Outcome, first.Message)
	if first.Outcome != "Conflict" {
		t.Fatalf("the agent's resize ended %s (%s), want Conflict", first.Outcome, first.Message)
	}

	// The re-plan: applied, from the person's values, and with no backoff
	// on the way: none of the decisions recorded between the first resize
	// (the one that ended in the Conflict) and the re-plan may be a
	// Backoff. (How soon the re-plan
	// comes is the kubelet's and the load's: the person's resize must be
	// applied and the new limit seen throttled, 3-5 s on the lab, close
	// to the 5 s initial backoff; a time bound could not tell the two
	// apart.)
	c = ag.waitAutoscale(t, ns, pod, time.Minute, func(c agent.ContainerJSON) bool {
		record(c)
		rs := c.Autoscale.ResizesAfter(since)
		return len(rs) >= 2 && rs[1].Outcome != "" && rs[1].Outcome != "InProgress"
	})
	rs := c.Autoscale.ResizesAfter(since)
	second := rs[1]
	t.Logf("re-plan: %s, sent %.2fs after the person's resize, %s (%s)", second.Plan, second.SentAt.Sub(humanAt).Seconds(), second.Outcome, second.Message)
	if second.Outcome != "Applied" {
		t.Errorf("the re-plan ended %s (%s), want Applied", second.Outcome, second.Message)
	}
	between := 0
	for at, d := range decided {
		if !at.After(first.DecidedAt) || !at.Before(second.DecidedAt) {
			continue
		}
		between++
		if d.CPU.Why == "Backoff" || d.Memory.Why == "Backoff" {
			t.Errorf("decision at %s, %.2fs after the first resize was decided, backs off: cpu %s (%s), memory %s (%s); a Conflict must not back off",
				at.Format(time.RFC3339Nano), at.Sub(first.DecidedAt).Seconds(), d.CPU.Why, d.CPU.Reason, d.Memory.Why, d.Memory.Reason)
		}
	}
	t.Logf("%d decisions seen between the first resize and the re-plan, none a Backoff unless reported above", between)
	target := second.Containers["app"]
	if req, lim := target.CPURequestMillicores, target.CPULimitMillicores; req <= 60 || lim < 3*req-1 || lim > 3*req+1 {
		t.Errorf("the re-plan's cpu %dm/%dm: want a grow from the person's 60m/180m keeping its 1:3 ratio", req, lim)
	}
	p := assertInPlace(t, ns, pod, containerID, corev1.PodQOSBurstable)
	if st := p.Status.ContainerStatuses[0].Resources; st == nil || st.Limits.Cpu().MilliValue() < target.CPULimitMillicores {
		t.Errorf("actual resources %v, want at least the re-plan's cpu limit %dm", st, target.CPULimitMillicores)
	}
}

// kubeletPauser returns functions that stop and continue the lab's kubelet
// and report when they did; a cleanup continues it in any case.
func kubeletPauser(t *testing.T) (pause, resume func() time.Time) {
	t.Helper()
	pid, ok := labOpts.PID("kubelet")
	if !ok {
		t.Fatal("the lab's kubelet is not running")
	}
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err != nil || strings.TrimSpace(string(comm)) != "kubelet" {
		t.Fatalf("pid %d is %q (%v), not the kubelet", pid, comm, err)
	}
	signal := func(sig syscall.Signal, state string) time.Time {
		if err := syscall.Kill(pid, sig); err != nil {
			t.Fatalf("sending %v to the kubelet: %v", sig, err)
		}
		at := time.Now()
		waitFor(t, "kubelet state "+state, 10*time.Second, func() (bool, error) {
			return procStateIs(pid, state), nil
		})
		return at
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	return func() time.Time { return signal(syscall.SIGSTOP, "T") },
		func() time.Time { return signal(syscall.SIGCONT, "not T") }
}

// procStateIs reports whether /proc/PID/stat's state is state ("T"
// stopped), or, for "not T", anything else.
func procStateIs(pid int, state string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	got := s[i+2 : i+3]
	if state == "not T" {
		return got != "T"
	}
	return got == state
}

// podSettled reports whether the kubelet runs the first container at its
// spec's cpu and memory and no resize is pending or in progress.
// waitSettled waits until the agent has sampled the pod, has no resize of
// it in flight, and the kubelet has applied its spec (podSettled); it
// returns when it last looked and the pod it found.
func waitSettled(t *testing.T, ag *agentProc, ns, pod string) (time.Time, *corev1.Pod) {
	t.Helper()
	var since time.Time
	var base *corev1.Pod
	ag.waitAutoscale(t, ns, pod, time.Minute, func(c agent.ContainerJSON) bool {
		since = time.Now()
		if c.Autoscale == nil || c.Autoscale.LastDecision == nil || len(ratePointsAfter(c.History, time.Time{})) < 3 ||
			c.Autoscale.LastDecision.CPU.Why == "InFlight" {
			return false
		}
		base = getPod(t, ns, pod)
		return podSettled(base)
	})
	return since, base
}

func podSettled(p *corev1.Pod) bool {
	if len(p.Spec.Containers) == 0 || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	spec, st := p.Spec.Containers[0].Resources, p.Status.ContainerStatuses[0].Resources
	if st == nil {
		return false
	}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if !spec.Requests[n].Equal(st.Requests[n]) || !spec.Limits[n].Equal(st.Limits[n]) {
			return false
		}
	}
	for _, c := range p.Status.Conditions {
		if (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress) && c.Status == corev1.ConditionTrue {
			return false
		}
	}
	return true
}
