package agent

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/resize"
)

// boostPolicy is an InPlace policy whose "*" entry boosts cpu by factor 3
// for durationSeconds after.
func boostPolicy(after int32) *v1alpha1.SnugPolicy {
	pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
	pol.Spec.ResourcePolicy = &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
		ContainerName: "*",
		StartupBoost: &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{
			Type: v1alpha1.CPUBoostFactor, Factor: ptr[int32](3), DurationSeconds: ptr(after),
		}},
	}}}
	return pol
}

// startingPod is a pod whose container started at startedAt, with a
// readiness probe when probe is set, not Ready yet.
func startingPod(startedAt time.Time, probe bool) *corev1.Pod {
	pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
	if probe {
		pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	}
	pod.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(startedAt)
	return pod
}

// setReady stores the pod with its container Ready (and ContainersReady
// since at), as the kubelet reports a passed readiness probe.
func setReady(fk *fakeKubelet, at time.Time) {
	p := fk.get("p")
	p.Status.ContainerStatuses[0].Ready = true
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)})
	fk.update(p)
}

// restart stores the pod with its container restarted as id at at, not
// Ready.
func restart(fk *fakeKubelet, id string, at time.Time) *corev1.Pod {
	p := fk.get("p")
	cs := &p.Status.ContainerStatuses[0]
	cs.ContainerID, cs.RestartCount, cs.Ready = id, cs.RestartCount+1, false
	cs.State.Running.StartedAt = metav1.NewTime(at)
	p.Status.Conditions = nil
	fk.update(p)
	return p
}

func specCPU(fk *fakeKubelet) string {
	c := fk.get("p").Spec.Containers[0].Resources
	return c.Requests.Cpu().String() + "/" + c.Limits.Cpu().String()
}

// pass observes one sample of the pod's container at the bubble's now
// and ends the pass, then lets every effect end and takes them in.
func pass(t *testing.T, d *Decider, fk *fakeKubelet, cpuMillis float64) {
	t.Helper()
	ctx := context.Background()
	p := fk.get("p")
	d.Observe(ctx, refOf(p), calm(time.Now(), cpuMillis))
	d.PassDone(ctx)
	synctest.Wait()
	d.Settle(ctx)
}

// TestDeciderStartupBoost: a container with a readiness probe that starts
// under a startupBoost gets 3x its cpu (limit with it) at once, learns no
// cpu and gets no cpu decision while boosted (a throttled start-up is the
// boost's), and is set back to exactly what it had once Ready and
// durationSeconds later; one StartupBoost event each way, and the unboost
// delay is observed.
func TestDeciderStartupBoost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := startingPod(time.Now(), true)
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, boostPolicy(5))
		rec := record.NewFakeRecorder(16)
		d.cfg.Recorder = rec
		pass(t, d, fk, 100) // pinned at its limit as a CPU-bound start-up is
		if got := specCPU(fk); got != "150m/300m" {
			t.Fatalf("cpu after the first pass %s, want the boost's 150m/300m", got)
		}
		v := d.View(pod.UID, "app")
		if v.StartupBoost == nil || v.StartupBoost.Phase != "Active" || v.StartupBoost.Before.CPURequestMillicores != 50 {
			t.Fatalf("boost %+v, want Active from 50m", v.StartupBoost)
		}
		if r := v.Resizes[0]; r.StartupBoost != "Boost" || r.Outcome != "Applied" {
			t.Errorf("resize %+v, want an applied Boost", r)
		}
		for range 5 {
			time.Sleep(time.Second)
			pass(t, d, fk, 300) // throttled at the boosted limit
		}
		if n := len(fk.patches); n != 1 {
			t.Fatalf("%d patches while starting, want the boost's only", n)
		}
		if v := d.View(pod.UID, "app"); v.LastDecision.CPU.Action != "Hold" {
			t.Errorf("cpu decision while boosted %+v, want Hold", v.LastDecision.CPU)
		}
		readyAt := time.Now()
		setReady(fk, readyAt)
		pass(t, d, fk, 20)
		if got := specCPU(fk); got != "150m/300m" {
			t.Fatalf("cpu right at Ready %s, want still boosted for durationSeconds", got)
		}
		for time.Since(readyAt) < 5*time.Second {
			time.Sleep(time.Second)
			pass(t, d, fk, 20)
		}
		if got := specCPU(fk); got != "50m/100m" {
			t.Fatalf("cpu %s after Ready + durationSeconds, want back at 50m/100m", got)
		}
		v = d.View(pod.UID, "app")
		if v.StartupBoost.Phase != "Over" || v.Resizes[len(v.Resizes)-1].StartupBoost != "Unboost" {
			t.Errorf("boost %+v, last resize %+v; want Over after an Unboost", v.StartupBoost, v.Resizes[len(v.Resizes)-1])
		}
		evs := events(rec)
		if len(evs) != 2 || !strings.HasPrefix(evs[0], "Normal StartupBoost snug boosted app cpu 50m/100m -> 150m/300m") ||
			!strings.HasPrefix(evs[1], "Normal StartupBoost snug ended the startup boost: app cpu 150m/300m -> 50m/100m") {
			t.Errorf("events %q, want the boost and its end", evs)
		}
		if n := metricValue(t, d.metrics, "snug_agent_startup_boosts_total", "ns", "pol", "ended"); n != 1 {
			t.Errorf("ended boosts %v, want 1", n)
		}
		d.Wait()
	})
}

// TestDeciderStartupBoostRestarts: a container restarted while boosted
// keeps its boost (no second boost on top); one restarted after its boost
// ended is boosted again.
func TestDeciderStartupBoostRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := startingPod(time.Now(), true)
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, boostPolicy(0))
		pass(t, d, fk, 100)
		time.Sleep(time.Second)
		restart(fk, "containerd://2", time.Now())
		pass(t, d, fk, 100)
		if got, n := specCPU(fk), len(fk.patches); got != "150m/300m" || n != 1 {
			t.Fatalf("after a restart while boosted: cpu %s in %d patches, want 150m/300m in 1", got, n)
		}
		// Ready ends the boost at once: the pod's update wakes the loop
		// (no pass needed).
		setReady(fk, time.Now())
		for range 2 {
			synctest.Wait()
			d.Settle(context.Background())
		}
		if got := specCPU(fk); got != "50m/100m" {
			t.Fatalf("cpu %s once Ready, with no pass since, want 50m/100m", got)
		}
		time.Sleep(time.Second)
		restart(fk, "containerd://3", time.Now())
		pass(t, d, fk, 100)
		if got := specCPU(fk); got != "150m/300m" {
			t.Errorf("cpu %s after a restart once the boost had ended, want boosted again", got)
		}
		d.Wait()
	})
}

// TestDeciderStartupBoostWithoutProbe: a container without probes is
// boosted as it starts and set back once three samples in a row use no
// more than its limit before the boost; one the agent meets after
// boostStartGrace is not boosted.
func TestDeciderStartupBoostWithoutProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := startingPod(time.Now(), false)
		pod.Status.ContainerStatuses[0].Ready = true
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, boostPolicy(0))
		pass(t, d, fk, 100)
		if got := specCPU(fk); got != "150m/300m" {
			t.Fatalf("cpu %s, want boosted", got)
		}
		for _, use := range []float64{280, 90, 250, 90, 80} {
			time.Sleep(time.Second)
			pass(t, d, fk, use)
		}
		if got := specCPU(fk); got != "150m/300m" {
			t.Fatalf("cpu %s after two calm samples, want still boosted", got)
		}
		time.Sleep(time.Second)
		pass(t, d, fk, 70)
		if got := specCPU(fk); got != "50m/100m" {
			t.Errorf("cpu %s after three calm samples, want back at 50m/100m", got)
		}
		d.Wait()
	})
	synctest.Test(t, func(t *testing.T) {
		pod := startingPod(time.Now().Add(-time.Minute), true)
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, boostPolicy(0))
		pass(t, d, fk, 20)
		pass(t, d, fk, 20)
		if n := len(fk.patches); n != 0 {
			t.Errorf("%d patches for a container that started a minute ago, want no boost", n)
		}
		if v := d.View(pod.UID, "app"); v.StartupBoost != nil {
			t.Errorf("boost %+v, want none (never given)", v.StartupBoost)
		}
		d.Wait()
	})
}

// TestDeciderStartupBoostOutlivesItsPolicy: a boost ends, back at exactly
// what the container had, also when its policy got a new generation
// meanwhile (a new policy state) and now yields to a VerticalPodAutoscaler
// (no resizes of its own): the boost belongs to the pod, not to the
// policy's state.
func TestDeciderStartupBoostOutlivesItsPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := startingPod(time.Now(), true)
		pol := boostPolicy(0)
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, pol)
		pass(t, d, fk, 100)
		if got := specCPU(fk); got != "150m/300m" {
			t.Fatalf("cpu %s, want boosted", got)
		}
		pol.Generation++
		pol.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionVPAConflict, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonYieldsToVPA}}
		time.Sleep(time.Second)
		pass(t, d, fk, 100)
		setReady(fk, time.Now())
		time.Sleep(time.Second)
		pass(t, d, fk, 20)
		if got := specCPU(fk); got != "50m/100m" {
			t.Errorf("cpu %s once Ready under the policy's new generation, want back at 50m/100m", got)
		}
		d.Wait()
	})
}

// TestDeciderStartupBoostNotTaken: a boost the kubelet has not applied
// when the wait times out is still in the spec, so it is ended like one
// applied (the spec set back); an agent that meets an already resized pod
// it has no record of (it restarted) does not boost it on top.
func TestDeciderStartupBoostNotTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := startingPod(time.Now(), true)
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, boostPolicy(0))
		fk.undecided = true
		pass(t, d, fk, 100)
		time.Sleep(DefaultResizeTimeout + time.Second)
		synctest.Wait()
		d.Settle(context.Background())
		v := d.View(pod.UID, "app")
		if r := v.Resizes[0]; r.Outcome != "Timeout" || v.StartupBoost.Phase != "Active" {
			t.Fatalf("resize %s, boost %s; want a Timeout and the boost Active (its spec stands)", r.Outcome, v.StartupBoost.Phase)
		}
		fk.mu.Lock()
		fk.undecided = false
		fk.mu.Unlock()
		setReady(fk, time.Now())
		pass(t, d, fk, 20)
		if got := specCPU(fk); got != "50m/100m" {
			t.Errorf("spec cpu %s after the end, want 50m/100m", got)
		}
		d.Wait()
	})
	synctest.Test(t, func(t *testing.T) {
		pod := startingPod(time.Now(), true)
		pod.Generation = 2 // resized before this agent started
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, boostPolicy(0))
		pass(t, d, fk, 20)
		if n := len(fk.patches); n != 0 {
			t.Errorf("%d patches for a resized pod this agent has no boost record of, want none", n)
		}
		d.Wait()
	})
}

// TestDeciderStartupBoostHoldsCPUDecisions: while boosted, the container's
// cpu decision is held with reason StartupBoost, however far below the
// boost its usage is.
func TestDeciderStartupBoostHoldsCPUDecisions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := startingPod(time.Now(), true)
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, boostPolicy(0))
		pass(t, d, fk, 100)
		time.Sleep(time.Second)
		pass(t, d, fk, 5)
		if c := d.View(pod.UID, "app").LastDecision.CPU; c.Action != "Hold" || c.Why != "StartupBoost" {
			t.Errorf("cpu decision while boosted %+v, want Hold StartupBoost", c)
		}
		d.Wait()
	})
}

// TestCalmMillis: the start-up is calm within the old limit when the boost
// raised the limit, within the old request when it did not (RequestsOnly)
// or there was none.
func TestCalmMillis(t *testing.T) {
	before := corev1.ResourceRequirements{Requests: rl("100m", ""), Limits: rl("200m", "")}
	raised := &resize.Plan{Containers: []resize.ContainerPlan{{Name: "app", Requests: rl("500m", ""), Limits: rl("1", "")}}}
	kept := &resize.Plan{Containers: []resize.ContainerPlan{{Name: "app", Requests: rl("200m", ""), Limits: rl("200m", "")}}}
	if got := calmMillis(before, raised, "app"); got != 200 {
		t.Errorf("limit raised: %dm, want the old limit 200m", got)
	}
	if got := calmMillis(before, kept, "app"); got != 100 {
		t.Errorf("limit kept: %dm, want the old request 100m", got)
	}
	if got := calmMillis(corev1.ResourceRequirements{Requests: rl("100m", "")}, raised, "app"); got != 100 {
		t.Errorf("no limit: %dm, want the request 100m", got)
	}
}

// TestDeciderStartupBoostBeforeTheFirstSample: the pod informer's update
// that shows the container started is enough: the boost goes out before
// the agent has sampled the container (its cgroup is found a pass later).
func TestDeciderStartupBoostBeforeTheFirstSample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := startingPod(time.Now(), true)
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, boostPolicy(0))
		fk.update(fk.get("p")) // the informer's event
		for range 2 {
			synctest.Wait()
			d.Settle(context.Background())
		}
		if got := specCPU(fk); got != "150m/300m" {
			t.Errorf("cpu %s with no sample yet, want the boost's 150m/300m", got)
		}
		d.Wait()
	})
}

// TestDeciderStartupBoostNotForPodLevelCPU: a pod whose cpu is set at the
// pod level gets no container boost: it would stay under the pod
// cgroup's limit, and the container's own cpu request could break the
// pod-level rules.
func TestDeciderStartupBoostNotForPodLevelCPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := startingPod(time.Now(), true)
		pod.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("100m", ""), Limits: rl("200m", "")}
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, boostPolicy(5))
		pass(t, d, fk, 100)
		if n := len(fk.patches); n != 0 {
			t.Fatalf("%d patches, want no boost: %s", n, fk.patches[0])
		}
	})
}
