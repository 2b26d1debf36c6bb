package agent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
	"github.com/snug-dev/snug/internal/recommend"
)

// restartWanted is the RestartWanted condition of the last status patch
// that set one, nil if none did.
func restartWanted(t *testing.T, fk *fakeKubelet) *corev1.PodCondition {
	t.Helper()
	fk.mu.Lock()
	defer fk.mu.Unlock()
	for i := len(fk.statusPatches) - 1; i >= 0; i-- {
		var p struct {
			Status struct{ Conditions []corev1.PodCondition } `json:"status"`
		}
		if err := json.Unmarshal(fk.statusPatches[i], &p); err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == policy.ConditionRestartWanted {
				return &c
			}
		}
	}
	return nil
}

// resizedMemory reports whether any resize patch sent changed memory.
func resizedMemory(fk *fakeKubelet) bool {
	fk.mu.Lock()
	defer fk.mu.Unlock()
	return slices.ContainsFunc(fk.patches, func(p []byte) bool { return strings.Contains(string(p), "/memory") })
}

// TestDeciderRestartWindow walks a container whose memory is
// RestartContainer, under a policy with a restart window, through one
// window: its memory grow is held and asked for (RestartWanted True) while
// its CPU grows in place; once the controller grants the window the memory
// resize goes out (event RestartWindow); once the container runs again as
// a new instance and is Ready, the agent says it was restarted
// (RestartWanted False, reason Restarted) and does not ask again.
func TestDeciderRestartWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		now := time.Now()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		pod.Status.ContainerStatuses[0].Ready = true
		pod.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(now.Add(-2 * time.Hour))
		pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
		pol.Spec.UpdatePolicy.RestartWindow = &v1alpha1.RestartWindow{}
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, pol)
		rec := record.NewFakeRecorder(64)
		d.cfg.Recorder = rec
		i := 0
		pass := func() {
			d.Observe(ctx, refOf(fk.get("p")), memoryHungry(now.Add(time.Duration(i)*time.Second)))
			i++
			d.PassDone(ctx)
			synctest.Wait()
			d.PassDone(ctx) // takes in what the effects returned
			synctest.Wait()
		}

		// Not granted: memory is held and asked for, cpu grows in place.
		for range 3 {
			pass()
		}
		if c := restartWanted(t, fk); c == nil || c.Status != corev1.ConditionTrue || c.Reason != reasonRestartWanted || !strings.Contains(c.Message, "app (memory)") {
			t.Fatalf("RestartWanted %+v, want True naming app (memory)", c)
		}
		if resizedMemory(fk) {
			t.Fatalf("memory resized before a window was granted: %q", fk.patches)
		}
		if got := fk.get("p").Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; got.MilliValue() <= 100 {
			t.Errorf("cpu limit %s, want grown in place meanwhile", got.String())
		}

		// A grant about to expire is not used: the controller may grant
		// the next pod before the restart would come.
		p := fk.get("p")
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: policy.ConditionRestartGranted, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(time.Duration(i)*time.Second - policy.RestartGrantTTL + restartGrantMargin))})
		fk.update(p)
		pass()
		if resizedMemory(fk) {
			t.Fatalf("memory resized in a grant within %s of its expiry", restartGrantMargin)
		}

		// Granted: the memory resize goes out, with the restart, once.
		p = fk.get("p")
		p.Status.Conditions[len(p.Status.Conditions)-1].LastTransitionTime = metav1.NewTime(now.Add(time.Duration(i) * time.Second))
		fk.update(p)
		pass()
		pass()
		if !resizedMemory(fk) {
			t.Fatalf("no memory resize in the granted window: %q", fk.patches)
		}
		evs := slices.DeleteFunc(events(rec), func(e string) bool { return !strings.HasPrefix(e, "Normal "+ReasonRestartWindow) })
		if len(evs) != 1 || !strings.Contains(evs[0], "the kubelet restarts app to apply it") {
			t.Errorf("RestartWindow events %q, want one naming app", evs)
		}
		if n := metricValue(t, d.metrics, "snug_agent_restart_resizes_total", "ns", "pol", "Sent"); n != 1 {
			t.Errorf("restart resizes sent %v, want 1 (once per container instance)", n)
		}

		// The kubelet restarted it: a new instance, Ready.
		p = fk.get("p")
		p.Status.ContainerStatuses[0].ContainerID = "containerd://2"
		p.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(now.Add(time.Duration(i) * time.Second))
		fk.update(p)
		pass()
		if c := restartWanted(t, fk); c == nil || c.Status != corev1.ConditionFalse || c.Reason != reasonRestartedToResize {
			t.Errorf("RestartWanted %+v after the restart, want False, reason %s", c, reasonRestartedToResize)
		}
		if n := metricValue(t, d.metrics, "snug_agent_restart_resizes_total", "ns", "pol", "Restarted"); n != 1 {
			t.Errorf("restarts seen %v, want 1", n)
		}
		// The new instance, just started, does not ask again though the
		// load still wants memory (the grant is still shown): no second
		// restarting resize.
		for range 3 {
			pass()
		}
		if c := restartWanted(t, fk); c == nil || c.Status != corev1.ConditionFalse {
			t.Errorf("RestartWanted %+v after more samples, want still False", c)
		}
		if n := metricValue(t, d.metrics, "snug_agent_restart_resizes_total", "ns", "pol", "Sent"); n != 1 {
			t.Errorf("restart resizes sent %v after the restart, want still 1", n)
		}
	})
}

// TestRestartGoesEligibility: a container asks for a window only past its
// start-up (Ready, running for the minimum interval) or right after an
// OOM kill, and only for a change worth a restart; without a window in
// the policy it never asks.
func TestRestartGoesEligibility(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name      string
		ready     bool
		started   time.Duration // ago
		oom       bool
		window    bool
		wantLimit int64 // the memory limit the change wants (current 128Mi)
		want      bool
	}{
		{"ready, running 2h, grow", true, 2 * time.Hour, false, true, 192 << 20, true},
		{"no window", true, 2 * time.Hour, false, false, 192 << 20, false},
		{"not ready", false, 2 * time.Hour, false, true, 192 << 20, false},
		{"running 10m", true, 10 * time.Minute, false, true, 192 << 20, false},
		{"after an OOM kill, just started", false, time.Second, true, true, 192 << 20, true},
		{"small shrink", true, 2 * time.Hour, false, true, 120 << 20, false},
		{"large shrink", true, 2 * time.Hour, false, true, 96 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("p", nil, rl("50m", "64Mi"), rl("100m", "128Mi"))
			pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
			status := &pod.Status.ContainerStatuses[0]
			status.Ready = tc.ready
			status.State.Running.StartedAt = metav1.NewTime(now.Add(-tc.started))
			pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
			if tc.window {
				pol.Spec.UpdatePolicy.RestartWindow = &v1alpha1.RestartWindow{}
			}
			st := &podState{pol: pol, mode: v1alpha1.UpdateModeInPlace}
			cs := &containerState{}
			ref := refOf(pod)
			if tc.oom {
				cs.oomInstance = ref.ContainerID
			}
			action := recommend.Grow
			if tc.wantLimit < 128<<20 {
				action = recommend.Shrink
			}
			dec := recommend.Decision{Memory: recommend.Change{Action: action, Request: tc.wantLimit / 2, Limit: tc.wantLimit}}
			actual := actualResources(pod, "app", status)
			d := &Decider{}
			if d.restartGoes(st, cs, pod, ref, status, dec, actual, now) {
				t.Error("goes without a grant")
			}
			if got := cs.restartWant != ""; got != tc.want {
				t.Errorf("asks for a window: %v (%q), want %v", got, cs.restartWant, tc.want)
			}
			// Granted: it goes if it asks, once per instance.
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: policy.ConditionRestartGranted, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)})
			if got := d.restartGoes(st, cs, pod, ref, status, dec, actual, now); got != tc.want {
				t.Errorf("granted: goes %v, want %v", got, tc.want)
			}
			cs.restartSentID = ref.ContainerID
			if d.restartGoes(st, cs, pod, ref, status, dec, actual, now) {
				t.Error("goes a second time for the same container instance")
			}
		})
	}
}

// TestRestartAskHolds: an ask outlasts a short hold of the change (the
// pod's budget, a backoff, a working set dipping under near-limit), for
// restartAskHold, so that the condition does not flap; it goes with the
// instance. A RequestsOnly grow (the limit stays) is worth a restart too.
func TestRestartAskHolds(t *testing.T) {
	now := time.Now()
	pod := testPod("p", nil, rl("50m", "64Mi"), rl("100m", "128Mi"))
	pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	status := &pod.Status.ContainerStatuses[0]
	status.Ready = true
	status.State.Running.StartedAt = metav1.NewTime(now.Add(-2 * time.Hour))
	pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
	pol.Spec.UpdatePolicy.RestartWindow = &v1alpha1.RestartWindow{}
	st := &podState{pol: pol, mode: v1alpha1.UpdateModeInPlace}
	cs := &containerState{}
	ref := refOf(pod)
	actual := actualResources(pod, "app", status)
	// RequestsOnly: the request grows 64Mi -> 96Mi, the limit stays.
	dec := recommend.Decision{Memory: recommend.Change{Action: recommend.Grow, Request: 96 << 20, Limit: 128 << 20}}
	d := &Decider{}
	d.restartGoes(st, cs, pod, ref, status, dec, actual, now)
	if cs.restartWant != "app (memory)" {
		t.Fatalf("ask %q for a RequestsOnly grow, want app (memory)", cs.restartWant)
	}
	cs.restartIdle(ref, now.Add(restartAskHold-time.Second))
	if cs.restartWant == "" {
		t.Errorf("the ask went within %s of the last want", restartAskHold)
	}
	cs.restartIdle(ref, now.Add(restartAskHold))
	if cs.restartWant != "" {
		t.Errorf("the ask %q stayed %s after the last want", cs.restartWant, restartAskHold)
	}
	d.restartGoes(st, cs, pod, ref, status, dec, actual, now)
	cs.restartIdle(ContainerRef{ContainerID: "containerd://2"}, now.Add(time.Second))
	if cs.restartWant != "" {
		t.Errorf("the ask %q stayed with a new container instance", cs.restartWant)
	}
}

// TestSizeForRestart: a grow in a restart window goes to at least the
// recommender's target, the limit keeping its ratio, so that one restart
// lasts; a shrink, a smaller target and a resource resized in place are
// left as decided.
func TestSizeForRestart(t *testing.T) {
	pod := testPod("p", nil, rl("50m", "32Mi"), rl("100m", "64Mi"))
	pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	actual := actualResources(pod, "app", &pod.Status.ContainerStatuses[0])
	rec := recommend.Recommendation{CPU: recommend.Estimate{Target: 400}, Memory: recommend.Estimate{Target: 70 << 20}}
	for _, tc := range []struct {
		name             string
		memory, cpu      recommend.Change
		wantMem, wantCPU recommend.Change
	}{
		{"memory grow to the target",
			recommend.Change{Action: recommend.Grow, Request: 48 << 20, Limit: 96 << 20}, recommend.Change{Action: recommend.Grow, Request: 250, Limit: 500},
			recommend.Change{Action: recommend.Grow, Request: 70 << 20, Limit: 140 << 20}, recommend.Change{Action: recommend.Grow, Request: 250, Limit: 500}},
		{"memory grow above the target",
			recommend.Change{Action: recommend.Grow, Request: 80 << 20, Limit: 160 << 20}, recommend.Change{},
			recommend.Change{Action: recommend.Grow, Request: 80 << 20, Limit: 160 << 20}, recommend.Change{}},
		{"memory shrink",
			recommend.Change{Action: recommend.Shrink, Request: 16 << 20, Limit: 32 << 20}, recommend.Change{},
			recommend.Change{Action: recommend.Shrink, Request: 16 << 20, Limit: 32 << 20}, recommend.Change{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sizeForRestart(pod, "app", recommend.Decision{CPU: tc.cpu, Memory: tc.memory}, rec, actual)
			if got.Memory != tc.wantMem || got.CPU != tc.wantCPU {
				t.Errorf("got memory %+v cpu %+v, want memory %+v cpu %+v", got.Memory, got.CPU, tc.wantMem, tc.wantCPU)
			}
		})
	}
}

// TestDeciderTakesBackUnappliedRestart: a restarting resize the kubelet has
// not applied when its window closes (here: left undecided, the wait timed
// out, the grant gone) would restart the container whenever the kubelet
// gets to it, outside any window; the agent sets its restarting part back
// to the actual resources, and the container may ask again after.
func TestDeciderTakesBackUnappliedRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		now := time.Now()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		pod.Status.ContainerStatuses[0].Ready = true
		pod.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(now.Add(-2 * time.Hour))
		pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
		pol.Spec.UpdatePolicy.RestartWindow = &v1alpha1.RestartWindow{}
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, pol)
		pass := func() {
			d.Observe(ctx, refOf(fk.get("p")), memoryHungry(time.Now()))
			d.PassDone(ctx)
			synctest.Wait()
			d.PassDone(ctx)
			synctest.Wait()
		}
		for range 2 {
			pass() // cpu grown in place, memory asked for
		}
		p := fk.get("p")
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: policy.ConditionRestartGranted, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now())})
		fk.update(p)
		fk.mu.Lock()
		fk.undecided = true // the kubelet defers it
		fk.mu.Unlock()
		pass()
		if !resizedMemory(fk) {
			t.Fatal("no memory resize in the granted window")
		}
		sent := fk.get("p").Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
		if sent.Cmp(resource.MustParse("128Mi")) <= 0 {
			t.Fatalf("spec memory limit %s, want the window's grow", sent.String())
		}
		time.Sleep(DefaultResizeTimeout + time.Second) // the wait ends: Timeout
		d.PassDone(ctx)
		fk.mu.Lock()
		fk.undecided = false
		fk.mu.Unlock()

		// The controller takes the grant back.
		p = fk.get("p")
		p.Status.Conditions[len(p.Status.Conditions)-1].Status = corev1.ConditionFalse
		fk.update(p)
		pass()
		if got := fk.get("p").Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]; got.Cmp(resource.MustParse("128Mi")) != 0 {
			t.Errorf("spec memory limit %s after the window closed, want it taken back to the actual 128Mi", got.String())
		}
		if got := fk.get("p").Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; got.MilliValue() <= 100 {
			t.Errorf("spec cpu limit %s, want the in-place grow kept", got.String())
		}
		// The kubelet applies what is left (the cpu of the deferred resize).
		p = fk.get("p")
		p.Status.ContainerStatuses[0].Resources = p.Spec.Containers[0].Resources.DeepCopy()
		fk.update(p)
		synctest.Wait()
		pass()
		if c := restartWanted(t, fk); c == nil || c.Status != corev1.ConditionTrue || strings.Contains(c.Message, "restarting") {
			t.Errorf("RestartWanted %+v after the take-back, want True, asking again (not restarting)", c)
		}
	})
}

// TestRestartAccepted: a resize the kubelet has taken up (in progress, or
// the new request allocated) is not taken back: the container may be
// restarting with it now.
func TestRestartAccepted(t *testing.T) {
	base := testPod("p", nil, rl("50m", "64Mi"), rl("100m", "128Mi"))
	base.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	base.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("96Mi")
	pending := base.DeepCopy()
	pending.Status.ContainerStatuses[0].AllocatedResources = rl("50m", "64Mi")
	inProgress := pending.DeepCopy()
	inProgress.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue}}
	allocated := base.DeepCopy()
	allocated.Status.ContainerStatuses[0].AllocatedResources = rl("50m", "96Mi")
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{"pending": {pending, false}, "in progress": {inProgress, true}, "allocated": {allocated, true}} {
		if got := restartAccepted(tc.pod, "app"); got != tc.want {
			t.Errorf("%s: accepted %v, want %v", name, got, tc.want)
		}
	}
}
