// Package scale is the scale bench's machinery (docs/design/scale-bench.md):
// hollow agents, real agent loops many to a process, one per node that kwok
// plays, whose containers are sampled from the replay's workload models
// (lab/internal/quality) instead of cgroups.
package scale

import (
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"time"

	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/cgroup"
	"github.com/snug-dev/snug/lab/internal/quality/node"
	"github.com/snug-dev/snug/lab/internal/quality/trace"
)

// Demand is a container's load at second t of its life: the CPU it would
// use if nothing held it back (millicores) and its working set (bytes).
type Demand interface {
	At(t int) (cpuMillis, memBytes float64)
}

// TraceDemand plays one container of a replay trace from its second
// Offset, over and over.
type TraceDemand struct {
	C      *trace.Container
	Offset int
}

// At implements Demand.
func (d TraceDemand) At(t int) (float64, float64) {
	n := len(d.C.CPUMillis)
	if n == 0 {
		return 0, 0
	}
	i := ((t+d.Offset)%n + n) % n
	mem := 0.0
	if i < len(d.C.MemBytes) {
		mem = d.C.MemBytes[i]
	}
	return d.C.CPUMillis[i], mem
}

// Steady is a constant load.
type Steady struct{ CPUMillis, MemBytes float64 }

// At implements Demand.
func (d Steady) At(int) (float64, float64) { return d.CPUMillis, d.MemBytes }

// Limits reports the CPU limit (millicores) and memory limit (bytes) the
// node applied to a container, 0 for none, as its pod's status shows them
// (containerStatuses[].resources, which kwok's stages set); ok is false
// while the container is not known.
type Limits func(ref agent.ContainerRef) (cpuMillis, memBytes int64, ok bool)

// Sampler is an agent.Sampler over Demand models: each container opened is
// read as a cgroup whose counters advance, between two reads, by what its
// demand under its applied limits makes of the time (the replay's node
// model: node.CPU, its per-period spread drawn from a seeded source), and
// whose working set is its demand's, capped by its memory limit where the
// model's container would be OOM-killed.
type Sampler struct {
	// Demand gives a container's load model.
	Demand func(ref agent.ContainerRef) Demand
	// Limits gives its applied limits.
	Limits Limits
	// Seed seeds each container's draws (with its ID), for reproducible
	// runs.
	Seed uint64
}

// ErrUnknown is what Open returns for a container that Limits does not
// know yet: the agent retries on its next pass, as it does for a cgroup
// that is not there yet.
var ErrUnknown = fmt.Errorf("hollow container not known yet: %w", fs.ErrNotExist)

// Open implements agent.Sampler.
func (s *Sampler) Open(ref agent.ContainerRef) (agent.Source, cgroup.Path, error) {
	if _, _, ok := s.Limits(ref); !ok {
		return nil, cgroup.Path{}, ErrUnknown
	}
	h := uint64(1469598103934665603)
	for _, b := range []byte(ref.ContainerID) {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return &source{ref: ref, demand: s.Demand(ref), limits: s.Limits, rng: rand.New(rand.NewPCG(s.Seed, h))},
		cgroup.Path{Version: cgroup.V2, Unified: "hollow://" + ref.String()}, nil
}

// source is one hollow container's counters.
type source struct {
	ref    agent.ContainerRef
	demand Demand
	limits Limits
	rng    *rand.Rand

	start, last time.Time
	// The cumulative counters, as floats until read.
	usageMicros, periods, throttledPeriods, throttledMicros float64
	peak, oomKills                                          uint64
}

// Read implements agent.Source.
func (s *source) Read(now time.Time) (cgroup.Sample, error) {
	if s.start.IsZero() {
		s.start, s.last = now, now
	}
	cpuLim, memLim, _ := s.limits(s.ref)
	cpu, mem := s.demand.At(int(now.Sub(s.start) / time.Second))
	if dt := now.Sub(s.last).Seconds(); dt > 0 {
		usage, throttled := node.CPU(cpu, cpuLim, node.DrawSpread(s.rng))
		s.usageMicros += usage / 1000 * dt * 1e6
		if cpu > 0 && cpuLim > 0 {
			// Every period is runnable; a throttled one waits about half
			// of its 100 ms (as the replay's signals count it).
			s.periods += dt * node.Periods
			s.throttledPeriods += throttled * dt * node.Periods
			s.throttledMicros += throttled * dt * node.Periods * 50_000
		}
	}
	s.last = now
	if memLim > 0 && mem > float64(memLim) {
		// The model's container is OOM-killed at its limit: the counter
		// moves and the working set stays under the limit.
		s.oomKills++
		mem = float64(memLim)
	}
	ws := uint64(math.Max(0, mem))
	s.peak = max(s.peak, ws)
	smp := cgroup.Sample{
		Time: now, Version: cgroup.V2,
		CPUUsageMicros:      uint64(s.usageMicros),
		CPUPeriods:          uint64(s.periods),
		CPUThrottledPeriods: uint64(s.throttledPeriods),
		CPUThrottledMicros:  uint64(s.throttledMicros),
		CPULimit:            cgroup.CPULimit{Unlimited: true},
		MemoryUsageBytes:    ws, MemoryWorkingSetBytes: ws, MemoryAnonBytes: ws,
		MemoryLimit:     cgroup.MemoryLimit{Unlimited: true},
		MemoryPeakBytes: s.peak,
		OOMKills:        s.oomKills,
	}
	if cpuLim > 0 {
		smp.CPULimit = cgroup.CPULimit{QuotaMicros: uint64(cpuLim) * 100, PeriodMicros: 100_000}
	}
	if memLim > 0 {
		smp.MemoryLimit = cgroup.MemoryLimit{Bytes: uint64(memLim)}
	}
	return smp, nil
}

// Close implements agent.Source.
func (s *source) Close() error { return nil }
