package scale

import (
	"errors"
	"io/fs"
	"math"
	"testing"
	"time"

	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/cgroup"
)

// signalsOf reads a hollow container for n seconds and returns what the
// agent's own cgroup.Rate makes of each second.
func signalsOf(t *testing.T, d Demand, cpuLim, memLim int64, n int) []cgroup.Signals {
	t.Helper()
	s := &Sampler{
		Demand: func(agent.ContainerRef) Demand { return d },
		Limits: func(agent.ContainerRef) (int64, int64, bool) { return cpuLim, memLim, true },
		Seed:   1,
	}
	src, p, err := s.Open(agent.ContainerRef{Namespace: "ns", Pod: "p", Container: "app", ContainerID: "containerd://1"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != cgroup.V2 {
		t.Errorf("path %+v, want a v2 one", p)
	}
	t0 := time.Unix(1_700_000_000, 0)
	prev, err := src.Read(t0)
	if err != nil {
		t.Fatal(err)
	}
	var out []cgroup.Signals
	for i := 1; i <= n; i++ {
		cur, err := src.Read(t0.Add(time.Duration(i) * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cgroup.Rate(prev, cur))
		prev = cur
	}
	return out
}

// TestSamplerSignals: what the agent reads of a hollow container is what
// the replay's node model makes of its demand: all of it under no limit,
// the limit and throttling in most periods over it, its working set, and
// an OOM kill where the demand passes the memory limit.
func TestSamplerSignals(t *testing.T) {
	mean := func(ss []cgroup.Signals, f func(cgroup.Signals) float64) float64 {
		sum := 0.0
		for _, s := range ss {
			sum += f(s)
		}
		return sum / float64(len(ss))
	}
	cpu := func(s cgroup.Signals) float64 { return s.CPUUsageMillicores }
	thr := func(s cgroup.Signals) float64 { return s.CPUThrottledFraction }

	free := signalsOf(t, Steady{CPUMillis: 300, MemBytes: 64 << 20}, 0, 0, 30)
	if got := mean(free, cpu); math.Abs(got-300) > 3 {
		t.Errorf("no limit: %.1fm, want the demand, 300m", got)
	}
	if got := mean(free, thr); got != 0 {
		t.Errorf("no limit: throttled %.2f, want 0", got)
	}
	if ws := free[len(free)-1].MemoryWorkingSetBytes; ws != 64<<20 {
		t.Errorf("working set %d, want 64Mi", ws)
	}

	held := signalsOf(t, Steady{CPUMillis: 300, MemBytes: 64 << 20}, 200, 128<<20, 30)
	if got := mean(held, cpu); got > 200.5 || got < 190 {
		t.Errorf("300m under a 200m limit: %.1fm, want about the limit", got)
	}
	if got := mean(held, thr); got < 0.9 {
		t.Errorf("300m under a 200m limit: throttled in %.2f of periods, want most", got)
	}
	if s := held[0]; s.CPULimitMillicores != 200 || !s.MemoryLimited {
		t.Errorf("limits read as cpu %dm, memory limited %v; want 200m and limited", s.CPULimitMillicores, s.MemoryLimited)
	}

	// Under a limit, a light load is rarely throttled: the per-period
	// spread, not the mean, reaches the limit.
	light := signalsOf(t, Steady{CPUMillis: 100, MemBytes: 8 << 20}, 200, 0, 60)
	if got := mean(light, thr); got > 0.05 {
		t.Errorf("100m under a 200m limit: throttled in %.2f of periods, want rarely", got)
	}

	oom := signalsOf(t, Steady{CPUMillis: 10, MemBytes: 80 << 20}, 0, 64<<20, 3)
	if oom[0].OOMKillsDelta == 0 || oom[0].MemoryWorkingSetBytes > 64<<20 {
		t.Errorf("80Mi under a 64Mi limit: oom kills %d, working set %d; want kills, the working set at most the limit", oom[0].OOMKillsDelta, oom[0].MemoryWorkingSetBytes)
	}
}

// TestSamplerUnknown: a container whose limits are not known yet is not
// there yet (fs.ErrNotExist), which the agent retries.
func TestSamplerUnknown(t *testing.T) {
	s := &Sampler{
		Demand: func(agent.ContainerRef) Demand { return Steady{} },
		Limits: func(agent.ContainerRef) (int64, int64, bool) { return 0, 0, false },
	}
	if _, _, err := s.Open(agent.ContainerRef{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err %v, want one wrapping fs.ErrNotExist", err)
	}
}
