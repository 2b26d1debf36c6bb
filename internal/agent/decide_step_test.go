package agent

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/recommend"
)

// TestObserveAllocations: a steady sample of a container whose pod is
// bound to a policy (the common case, every second per container) costs
// no allocation.
func TestObserveAllocations(t *testing.T) {
	ctx := context.Background()
	pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
	a, d, _ := newTestDecider(t, true, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeOff))
	a.UpsertPod(pod) // the pod informer's event
	ref := refOf(pod)
	now := time.Now()
	// Past the recommender's warm-up (60 samples), within the shrink
	// window (300 s): every sample Holds.
	for i := range 100 {
		d.Observe(ctx, ref, idlePoint(now.Add(time.Duration(i)*time.Second)))
	}
	i := 100
	allocs := testing.AllocsPerRun(200, func() {
		d.Observe(ctx, ref, idlePoint(now.Add(time.Duration(i)*time.Second)))
		i++
	})
	t.Logf("%.1f allocations per sample", allocs)
	if allocs > 0 {
		t.Errorf("Observe allocates %.1f times per steady sample, want 0", allocs)
	}
}

// TestDecide drives the pure decide step with no Agent or Decider: a
// container throttled at its limit grows in cpu; an OOM kill grows memory
// at once; the state kept for the planner follows the samples.
func TestDecide(t *testing.T) {
	newState := func(t *testing.T) *containerState {
		t.Helper()
		pod, err := recommend.NewPod(recommend.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		rc, err := pod.AddContainer("app", recommend.Bounds{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &containerState{rc: rc}
	}
	actual := recommend.Resources{CPURequestMillis: 50, CPULimitMillis: 100, MemRequestBytes: 64 << 20, MemLimitBytes: 128 << 20}
	now := time.Now()

	t.Run("throttled grows cpu", func(t *testing.T) {
		cs := newState(t)
		dec := decide(cs, "c1", throttled(now, 100), actual, false)
		if dec.CPU.Action != recommend.Grow || dec.CPU.Request <= 50 {
			t.Errorf("cpu %v, want a grow above 50m", dec.CPU)
		}
		if cs.last != dec || !cs.lastTime.Equal(now) || cs.containerID != "c1" || cs.cpuMillis != 100 || cs.wsBytes != 8<<20 {
			t.Errorf("state %+v does not follow the sample", cs)
		}
	})
	t.Run("oom kill grows memory", func(t *testing.T) {
		cs := newState(t)
		decide(cs, "c1", idlePoint(now), actual, false)
		dec := decide(cs, "c2", idlePoint(now.Add(time.Second)), actual, true)
		if dec.Memory.Action != recommend.Grow || dec.Memory.Request <= 64<<20 {
			t.Errorf("memory %v, want a grow above 64Mi after an OOM kill", dec.Memory)
		}
	})
	t.Run("idle holds", func(t *testing.T) {
		cs := newState(t)
		if dec := decide(cs, "c1", idlePoint(now), actual, false); dec.Resize() {
			t.Errorf("first idle sample decided %v, want Hold", dec)
		}
	})
}

func TestRestartedAfterOOM(t *testing.T) {
	oomed := &corev1.ContainerStatus{LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled"}}}
	errored := &corev1.ContainerStatus{LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error"}}}
	for _, tc := range []struct {
		name      string
		known, id string
		status    *corev1.ContainerStatus
		want      bool
	}{
		{"first sample", "", "c1", oomed, false},
		{"same container", "c1", "c1", oomed, false},
		{"restarted after an oom kill", "c1", "c2", oomed, true},
		{"restarted after an error", "c1", "c2", errored, false},
		{"no status", "c1", "c2", nil, false},
	} {
		if got := restartedAfterOOM(&containerState{containerID: tc.known}, tc.id, tc.status); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
