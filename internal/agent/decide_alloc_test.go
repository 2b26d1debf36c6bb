package agent

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
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
