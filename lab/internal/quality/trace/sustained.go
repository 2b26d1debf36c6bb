package trace

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// The sustained-load scenario of the field report's convergence test ("30
// minutes of sustained CPU load": VPA went from 25m to 247m by t+5min and
// stayed there), as `snug-lab bench quality --calibrate` plays it into
// snug-load on the lab and replays it on the model.
const (
	// SustainedSeconds is the report's 30 minutes.
	SustainedSeconds = 30 * 60
	// SustainedCPUMillis is the load's mean; each second is drawn within
	// +-SustainedNoise of it.
	SustainedCPUMillis = 200
	SustainedNoise     = 0.15
	// SustainedMemBytes is the memory snug-load holds throughout.
	SustainedMemBytes = 32 * mi
	// SustainedReplicas is how many pods the workload has: VPA's updater
	// runs with upstream's --min-replicas=2.
	SustainedReplicas = 2
)

// Sustained is the sustained-load scenario for seconds seconds: two
// replicas starting at cpu 50m/100m and memory 64Mi/128Mi (the reaction
// bench's workload), each burning SustainedCPUMillis +-SustainedNoise,
// drawn per pod and second and rounded to whole millicores (what
// snug-load's control file says), and holding SustainedMemBytes. Second 0
// is a step from idle. The same seconds and seed give the same trace.
func Sustained(seconds int, seed int64) (*Trace, error) {
	if seconds <= 0 {
		return nil, fmt.Errorf("sustained scenario: %d seconds, want at least 1", seconds)
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x5057a1ed))
	t := &Trace{Name: fmt.Sprintf("sustained/seed%d", seed), Shape: "sustained", Seed: seed, Seconds: seconds, Steps: []int{0}}
	for p := range SustainedReplicas {
		t.Pods = append(t.Pods, Pod{Name: fmt.Sprintf("pod-%d", p), Containers: []Container{{
			Name:             "app",
			CPURequestMillis: 50, CPULimitMillis: 100, MemRequestBytes: 64 * mi, MemLimitBytes: 128 * mi,
			CPUMillis: series(seconds, func(int) float64 { return math.Round(SustainedCPUMillis * noise(r, SustainedNoise)) }),
			MemBytes:  series(seconds, func(int) float64 { return SustainedMemBytes }),
		}}})
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}
