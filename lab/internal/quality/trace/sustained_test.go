package trace

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSustained: the calibration's scenario is reproducible, whole
// millicores within ±15% of 200m, constant memory, and refuses no seconds.
func TestSustained(t *testing.T) {
	a, err := Sustained(120, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Sustained(120, 1)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two traces of one seed differ (-+):\n%s", diff)
	}
	c, _ := Sustained(120, 2)
	if cmp.Equal(a.Pods[0].Containers[0].CPUMillis, c.Pods[0].Containers[0].CPUMillis) {
		t.Error("seeds 1 and 2 give the same demand")
	}
	if len(a.Pods) != SustainedReplicas || a.Steps[0] != 0 {
		t.Errorf("%d pods, steps %v; want %d and [0]", len(a.Pods), a.Steps, SustainedReplicas)
	}
	for _, p := range a.Pods {
		for i, v := range p.Containers[0].CPUMillis {
			if v != math.Round(v) || v < SustainedCPUMillis*(1-SustainedNoise)-0.5 || v > SustainedCPUMillis*(1+SustainedNoise)+0.5 {
				t.Fatalf("%s second %d: %v millicores, want whole and within ±15%% of 200", p.Name, i, v)
			}
			if p.Containers[0].MemBytes[i] != SustainedMemBytes {
				t.Fatalf("%s second %d: memory %v", p.Name, i, p.Containers[0].MemBytes[i])
			}
		}
	}
	if _, err := Sustained(0, 1); err == nil {
		t.Error("Sustained took 0 seconds")
	}
}
