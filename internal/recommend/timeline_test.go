package recommend

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/snug-dev/snug/internal/cgroup"
	"github.com/snug-dev/snug/internal/resize"
)

// sim is a container on a node, simulated once a second: a CPU demand and
// a working set per second, a CFS limit that throttles demand above it, a
// memory limit that OOM-kills at it, and a kubelet that applies every resize
// before the next sample (the lab measured 0.44 s).
type sim struct {
	t        *testing.T
	pod      *Pod
	c        *Container
	cur      Resources
	cpu      func(sec int) float64 // millicores wanted
	ws       func(sec int) float64 // bytes
	noise    float64               // relative per-second CPU noise (uniform)
	rng      *rand.Rand
	resizes  []simResize
	ooms     []int
	throttle []float64 // throttled fraction per second
	psi      func(sec int) float64
	// partialAt, partial: the sample of second partialAt saw the new load
	// for only this share of its interval (a step between two samples).
	partialAt int
	partial   float64
}

type simResize struct {
	sec int
	d   Decision
}

func newSim(t *testing.T, cfg Config, cur Resources) *sim {
	t.Helper()
	pod, err := NewPod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pod.AddContainer("app", Bounds{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &sim{
		t: t, pod: pod, c: c, cur: cur,
		cpu: func(int) float64 { return 0 },
		ws:  func(int) float64 { return 64 << 20 }, // 80Mi requests keep memory in band
		rng: rand.New(rand.NewPCG(7, 8)),
	}
}

// throttledFraction models CFS: a demand at or above the limit keeps work
// queued, so every period is throttled; within 10% below the limit bursts
// hit the quota in some periods.
func throttledFraction(demand, limit float64) float64 {
	switch {
	case limit <= 0:
		return 0
	case demand >= limit:
		return 1
	case demand > 0.9*limit:
		return (demand - 0.9*limit) / (0.1 * limit)
	}
	return 0
}

// signals returns what the cgroup would say about second sec.
func (s *sim) signals(sec int) cgroup.Signals {
	d := s.cpu(sec) * (1 + s.noise*(2*s.rng.Float64()-1))
	lim := float64(s.cur.CPULimitMillis)
	use, f := d, 0.0
	if lim > 0 {
		use = min(d, lim)
		f = throttledFraction(d, lim)
	}
	if s.partial > 0 && sec == s.partialAt {
		f *= s.partial
	}
	ws := s.ws(sec)
	sig := cgroup.Signals{
		Time: t0.Add(time.Duration(sec) * time.Second), HasRate: sec > 0, IntervalSeconds: 1,
		CPUUsageMillicores: use, CPUThrottledFraction: f, CPULimitMillicores: s.cur.CPULimitMillis,
		MemoryWorkingSetBytes: uint64(ws),
	}
	if !sig.HasRate {
		sig.IntervalSeconds, sig.CPUUsageMillicores, sig.CPUThrottledFraction = 0, 0, 0
	}
	if ml := float64(s.cur.MemLimitBytes); ml > 0 {
		sig.MemoryLimited = true
		if ws >= ml {
			// The OOM killer fires; the process restarts small.
			sig.OOMKillsDelta = 1
			sig.MemoryWorkingSetBytes = uint64(ml)
			s.ooms = append(s.ooms, sec)
		}
		sig.MemoryHeadroomBytes = uint64(max(ml-float64(sig.MemoryWorkingSetBytes), 0))
		sig.MemoryHeadroomFraction = float64(sig.MemoryHeadroomBytes) / ml
	}
	if s.psi != nil {
		sig.PSIPresent = true
		sig.MemoryPressure.SomeStalledFraction = s.psi(sec)
	}
	s.throttle = append(s.throttle, sig.CPUThrottledFraction)
	return sig
}

// run simulates seconds [from, to) and returns the decisions.
func (s *sim) run(from, to int) []Decision {
	var out []Decision
	for sec := from; sec < to; sec++ {
		now := t0.Add(time.Duration(sec) * time.Second)
		d := s.c.Observe(now, s.signals(sec), s.cur)
		out = append(out, d)
		if !d.Resize() {
			continue
		}
		s.resizes = append(s.resizes, simResize{sec, d})
		s.pod.Sent(now)
		s.cur = Resources{
			CPURequestMillis: d.CPU.Request, CPULimitMillis: d.CPU.Limit,
			MemRequestBytes: d.Memory.Request, MemLimitBytes: d.Memory.Limit,
		}
		s.pod.Feedback(now.Add(500*time.Millisecond), Feedback{Outcome: resize.Applied})
	}
	return out
}

func (s *sim) count(a Action, cpu bool) int {
	n := 0
	for _, r := range s.resizes {
		ch := r.d.Memory
		if cpu {
			ch = r.d.CPU
		}
		if ch.Action == a {
			n++
		}
	}
	return n
}

func step(at int, before, after float64) func(int) float64 {
	return func(sec int) float64 {
		if sec < at {
			return before
		}
		return after
	}
}

// TestLoadStepUp is the scenario: 50m of load under a 100m limit
// steps to 400m. The grow decision comes within two samples, and throttling
// ends with that one resize: every period is throttled, so the fast path
// grows by the censored x5 (issue 16: starvation ended within 4 s of a 4x
// step).
func TestLoadStepUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cur     Resources
		partial float64
	}{
		{"guaranteed 100m", Resources{CPURequestMillis: 100, CPULimitMillis: 100, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20}, 0},
		{"burstable 50m/100m", Resources{CPURequestMillis: 50, CPULimitMillis: 100, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20}, 0},
		{"step between samples", Resources{CPURequestMillis: 100, CPULimitMillis: 100, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20}, 0.4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const stepAt = 120
			s := newSim(t, DefaultConfig(), tc.cur)
			s.partialAt, s.partial = stepAt, tc.partial
			s.cpu = step(stepAt, 50, 400)
			s.noise = 0.03
			s.run(0, stepAt)
			before := len(s.resizes)
			s.run(stepAt, stepAt+120)
			ups := s.resizes[before:]
			if len(ups) == 0 {
				t.Fatal("no resize after the load step")
			}
			first := ups[0]
			if got := first.sec - stepAt + 1; got > 2 {
				t.Errorf("first grow after %d samples, want at most 2", got)
			}
			if !first.d.CPU.Fast || first.d.CPU.Reason.Why != WhyThrottled {
				t.Errorf("first grow = %v, want a fast throttling grow", first.d)
			}
			t.Logf("first decision: %v", first.d)
			// Throttling ends: find the last throttled second.
			last := -1
			for sec := stepAt; sec < stepAt+120; sec++ {
				if s.throttle[sec] > 0 {
					last = sec
				}
			}
			n := 0
			for _, r := range ups {
				if r.sec <= last {
					n++
				}
			}
			if n > 1 {
				t.Errorf("throttling lasted until %ds after %d resizes, want one", last-stepAt, n)
			}
			if last-stepAt > 10 {
				t.Errorf("throttling lasted %ds after the step", last-stepAt)
			}
			if s.cur.CPULimitMillis < 400 || s.cur.CPULimitMillis > 400*2.5*1.1 {
				t.Errorf("limit ended at %dm, want between the demand and 2.5x it", s.cur.CPULimitMillis)
			}
			for _, r := range ups {
				t.Logf("t+%ds %v", r.sec-stepAt, r.d)
			}
			if s.count(Shrink, true) != 0 {
				t.Errorf("shrank within two minutes of a grow")
			}
		})
	}
}

// TestLoadDrop: after a long phase at 400m the load drops to 50m. No shrink
// comes before the stabilization window has passed with the target below the
// band; then CPU comes down in bounded steps, and never below the new demand.
func TestLoadDrop(t *testing.T) {
	lab := DefaultConfig()
	lab.CPUHalfLife, lab.ShrinkWindow = 10*time.Second, 30*time.Second
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"defaults", DefaultConfig()}, {"lab e2e tuning", lab}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			const dropAt = 3600
			s := newSim(t, cfg, Resources{CPURequestMillis: 500, CPULimitMillis: 500, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
			s.cpu = step(dropAt, 400, 50)
			s.noise = 0.05
			s.run(0, dropAt)
			if n := len(s.resizes); n > 1 {
				t.Fatalf("%d resizes at steady load: %v", n, s.resizes)
			}
			s.resizes = nil
			ds := s.run(dropAt, dropAt+2*3600)
			if len(s.resizes) == 0 {
				t.Fatal("never shrank after the drop")
			}
			first := s.resizes[0]
			if first.d.CPU.Action != Shrink {
				t.Fatalf("first resize after the drop = %v, want a shrink", first.d)
			}
			after := time.Duration(first.sec-dropAt) * time.Second
			if after < cfg.ShrinkWindow {
				t.Errorf("shrank %v after the drop, before the %v window", after, cfg.ShrinkWindow)
			}
			// The target needs log2(10) half-lives to forget the old p90,
			// then the window runs.
			want := time.Duration(math.Log2(10)*float64(cfg.CPUHalfLife)) + cfg.ShrinkWindow
			within(t, "first shrink after the drop (s)", after.Seconds(), want.Seconds(), 0.15)
			t.Logf("first shrink %v after the drop (formula %v)", after, want)
			// The window before the shrink was spent stabilizing, every
			// second: not one shrink before the window was over.
			w := int(cfg.ShrinkWindow / time.Second)
			for i := first.sec - dropAt - w; i < first.sec-dropAt; i++ {
				if ds[i].CPU.Reason.Why != WhyStabilizing {
					t.Fatalf("t+%ds: %v, want stabilizing during the window", i, ds[i])
				}
			}
			prev := first.sec
			for i, r := range s.resizes {
				t.Logf("t+%ds %v", r.sec-dropAt, r.d)
				if r.d.CPU.Action != Shrink {
					t.Errorf("resize %d after the drop is %v", i, r.d)
				}
				if i > 0 && time.Duration(r.sec-prev)*time.Second < cfg.ShrinkWindow {
					t.Errorf("shrinks %ds apart, closer than the window", r.sec-prev)
				}
				prev = r.sec
			}
			if got := s.cur.CPURequestMillis; got < 50 || got > 80 {
				t.Errorf("request ended at %dm, want near 50m * 1.15", got)
			}
		})
	}
}

// TestNoisySteadyLoad: a noisy but steady load settles in a few resizes and
// then stays put: no oscillation, never more than the hourly bound.
func TestNoisySteadyLoad(t *testing.T) {
	cfg := DefaultConfig()
	for _, tc := range []struct {
		name  string
		start int64
		noise float64
	}{
		{"starts small", 150, 0.3},
		{"starts right", 260, 0.3},
		{"starts big", 1000, 0.3},
		{"very noisy", 200, 0.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, cfg, Resources{CPURequestMillis: tc.start, CPULimitMillis: tc.start, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
			s.cpu = func(int) float64 { return 200 }
			s.noise = tc.noise
			const hours = 4
			s.run(0, hours*3600)
			for _, r := range s.resizes {
				t.Logf("t=%ds %v", r.sec, r.d)
			}
			// The hourly bound holds in every sliding hour.
			for i := range s.resizes {
				n := 0
				for _, r := range s.resizes[i:] {
					if r.sec-s.resizes[i].sec < 3600 {
						n++
					}
				}
				if n > cfg.MaxResizesPerHour {
					t.Fatalf("%d resizes in the hour from t=%ds", n, s.resizes[i].sec)
				}
			}
			// No oscillation: the direction changes at most once (grow then
			// settle down, or shrink then correct up once).
			changes, dir := 0, Hold
			for _, r := range s.resizes {
				if a := r.d.CPU.Action; a != Hold && a != dir {
					if dir != Hold {
						changes++
					}
					dir = a
				}
			}
			if changes > 1 {
				t.Errorf("direction changed %d times", changes)
			}
			// Settled: nothing in the last two hours.
			for _, r := range s.resizes {
				if r.sec >= (hours-2)*3600 {
					t.Errorf("resize at t=%ds, after settling", r.sec)
				}
			}
			if got := float64(s.cur.CPURequestMillis); got < 200 || got > 200*(1+tc.noise)*1.15*1.25 {
				t.Errorf("request settled at %vm", got)
			}
		})
	}
}

// TestMemoryCreep: a working set that creeps towards the limit gets more
// memory before it reaches it.
func TestMemoryCreep(t *testing.T) {
	for _, rate := range []float64{256 << 10, 1 << 20, 4 << 20} { // bytes per second
		t.Run(formatBytes(int64(rate))+"/s", func(t *testing.T) {
			s := newSim(t, DefaultConfig(), Resources{CPURequestMillis: 100, CPULimitMillis: 200, MemRequestBytes: 256 << 20, MemLimitBytes: 256 << 20})
			s.cpu = func(int) float64 { return 50 }
			s.ws = func(sec int) float64 {
				if sec < 60 {
					return 100 << 20
				}
				return 100<<20 + rate*float64(sec-60)
			}
			end := 60 + int(float64(1<<30)/rate) // creep to 1.1 GiB
			s.run(0, end)
			if len(s.ooms) > 0 {
				t.Fatalf("OOM kills at %v", s.ooms)
			}
			if s.count(Grow, false) == 0 {
				t.Fatal("memory never grew")
			}
			for _, r := range s.resizes {
				if r.d.Memory.Action == Grow {
					if !r.d.Memory.Fast {
						t.Errorf("t=%ds: slow memory grow %v", r.sec, r.d)
					}
					t.Logf("t=%ds %v", r.sec, r.d)
				}
			}
		})
	}
}

// TestOOMKill: an OOM kill grows memory in the same sample.
func TestOOMKill(t *testing.T) {
	s := newSim(t, DefaultConfig(), Resources{CPURequestMillis: 100, CPULimitMillis: 200, MemRequestBytes: 128 << 20, MemLimitBytes: 128 << 20})
	s.ws = func(sec int) float64 {
		if sec == 100 {
			return 300 << 20 // one allocation burst, faster than any sample
		}
		return 60 << 20
	}
	ds := s.run(0, 101)
	d := ds[100]
	if d.Memory.Action != Grow || d.Memory.Reason.Why != WhyOOMKill {
		t.Fatalf("decision at the kill = %v, want an OOM grow", d)
	}
	if got := d.Memory.Limit; got < 192<<20 || got > 200<<20 {
		t.Errorf("limit after the kill = %s, want 1.5x 128Mi", formatBytes(got))
	}
	// The bumped size is remembered as a peak: memory stays at least there
	// for the peak window, then comes down.
	cfg := DefaultConfig()
	s.run(101, 101+int(cfg.MemoryPeakWindow/time.Second)-600)
	if n := s.count(Shrink, false); n != 0 || s.cur.MemLimitBytes < 192<<20 {
		t.Errorf("%d memory shrinks within the peak window after an OOM kill, limit now %s",
			n, formatBytes(s.cur.MemLimitBytes))
		for _, r := range s.resizes {
			t.Logf("t=%ds %v", r.sec, r.d)
		}
	}
	s.run(101+int(cfg.MemoryPeakWindow/time.Second)-600, 3*3600)
	if n := s.count(Shrink, false); n == 0 {
		t.Errorf("memory never came down after the peak window")
	}
}

// TestMemoryPressure: PSI stalls near the limit grow memory; stalls far from
// it (the node's pressure) do not.
func TestMemoryPressure(t *testing.T) {
	for _, tc := range []struct {
		name string
		ws   float64
		grow bool
	}{
		{"near the limit", 200 << 20, true},
		{"far from the limit", 64 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, DefaultConfig(), Resources{CPURequestMillis: 100, CPULimitMillis: 200, MemRequestBytes: 256 << 20, MemLimitBytes: 256 << 20})
			s.cpu = func(int) float64 { return 50 }
			s.ws = func(int) float64 { return tc.ws }
			s.psi = func(sec int) float64 {
				if sec >= 30 {
					return 0.3
				}
				return 0
			}
			ds := s.run(0, 31)
			d := ds[30]
			if got := d.Memory.Action == Grow && d.Memory.Reason.Why == WhyMemoryPressure; got != tc.grow {
				t.Errorf("decision = %v, want grow %v", d, tc.grow)
			}
		})
	}
}

// TestFlappingLoadIsBounded: with lab-short half-life and window, a load
// that alternates every three minutes would be resized twice a cycle; the
// hourly bound caps it, and shrinks leave the last resize to a grow. The
// regrow floor, which stops this load's flapping on its own
// (TestFlappingLoadSettles), is turned off to reach the bound.
func TestFlappingLoadIsBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUHalfLife, cfg.ShrinkWindow = 10*time.Second, 30*time.Second
	cfg.RegrowWindow = time.Nanosecond
	s := newSim(t, cfg, Resources{CPURequestMillis: 500, CPULimitMillis: 500, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
	s.cpu = func(sec int) float64 {
		if (sec/180)%2 == 0 {
			return 400
		}
		return 50
	}
	s.run(0, 3*3600)
	for i := range s.resizes {
		n := 0
		for _, r := range s.resizes[i:] {
			if r.sec-s.resizes[i].sec < 3600 {
				n++
			}
		}
		if n > cfg.MaxResizesPerHour {
			t.Fatalf("%d resizes in the hour from t=%ds", n, s.resizes[i].sec)
		}
	}
	if n := len(s.resizes); n < 2*cfg.MaxResizesPerHour {
		t.Errorf("only %d resizes in 3h: the bound, not the load, should limit them", n)
	}
	for i, r := range s.resizes {
		if r.d.CPU.Action != Shrink {
			continue
		}
		before := 0
		for _, q := range s.resizes[:i] {
			if r.sec-q.sec < 3600 {
				before++
			}
		}
		if before >= cfg.MaxResizesPerHour-cfg.GrowReserve {
			t.Errorf("t=%ds: shrink with only %d resizes left in the hour", r.sec, cfg.MaxResizesPerHour-before)
		}
	}
	t.Logf("%d resizes in 3h (%d grows, %d shrinks)", len(s.resizes), s.count(Grow, true), s.count(Shrink, true))
}

// TestStartupBurstIsNotReserved: a start-up burst (800m for 50 s, then
// 100m) under 200m/400m is served by the fast path, and the baseline does
// not grow the request for it when the warm-up ends after the burst: the
// percentiles still remember it, the load no longer asks for it. The old
// rule grew to 1174m at the first sample after the warm-up.
func TestStartupBurstIsNotReserved(t *testing.T) {
	cfg := DefaultConfig()
	// The rule under test is the baseline's: a fast path that grows less
	// than the burst's percentiles (x2.5, not the censored x5, whose 1000m
	// request is above them) leaves a grow for the baseline to hold.
	cfg.CPUCensoredGrowth = 1
	s := newSim(t, cfg, Resources{CPURequestMillis: 200, CPULimitMillis: 400, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
	s.cpu = step(50, 800, 100)
	ds := s.run(0, 50)
	if s.count(Grow, true) == 0 {
		t.Fatal("the burst was not grown for")
	}
	burstReq := s.cur.CPURequestMillis
	ds = s.run(50, 400)
	if n := s.count(Grow, true); n != len(s.resizes) || s.cur.CPURequestMillis > burstReq {
		t.Errorf("after the burst: request %dm (the burst's %dm), resizes %+v; want no grow", s.cur.CPURequestMillis, burstReq, s.resizes)
	}
	gone := 0
	for _, d := range ds {
		if d.CPU.Reason.Why == WhyLoadGone {
			gone++
		}
	}
	if gone == 0 {
		t.Error("no decision after the burst said LoadGone")
	}
	// The percentiles forget the burst, and the request comes down.
	s.run(400, 1800)
	if s.cur.CPURequestMillis >= burstReq || s.count(Shrink, true) == 0 {
		t.Errorf("request %dm after 30m (burst %dm), resizes %+v; want shrinks", s.cur.CPURequestMillis, burstReq, s.resizes)
	}
	// A sustained rise is still grown for by the baseline: the load then asks for it.
	s.cpu = step(0, 2000, 2000)
	s.run(1800, 1900)
	if s.cur.CPULimitMillis < 2000 {
		t.Errorf("limit %dm under a 2000m load", s.cur.CPULimitMillis)
	}
}

// TestShrinkWaitsForABurst: a shrink that falls due during a burst would
// bring the limit under the burst's demand, and the fast path would grow
// it back within seconds; it waits for the burst to pass, and then for it
// to leave the stabilization window (a burst within the window is part of
// the evidence: a limit under it would starve when it came back).
func TestShrinkWaitsForABurst(t *testing.T) {
	s := newSim(t, DefaultConfig(), Resources{CPURequestMillis: 200, CPULimitMillis: 400, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
	s.cpu = step(0, 20, 20)
	var due int
	for sec := 0; sec < 3600 && due == 0; sec++ {
		d := s.run(sec, sec+1)[0]
		if d.CPU.Reason.Why == WhyStabilizing && d.CPU.Reason.Duration <= time.Second {
			due = sec + 1
		}
	}
	if due == 0 {
		t.Fatal("no shrink fell due within an hour")
	}
	// A 10 s burst of 300m, over the 200m limit a halving would bring.
	s.cpu = func(sec int) float64 {
		if sec >= due && sec < due+10 {
			return 300
		}
		return 20
	}
	ds := s.run(due, due+10)
	if len(s.resizes) != 0 {
		t.Fatalf("resized during the burst: %+v", s.resizes)
	}
	if why := ds[0].CPU.Reason.Why; why != WhyLoadNow {
		t.Errorf("decision at the burst: %s, want LoadNow", ds[0].CPU.Reason)
	}
	w := int(DefaultConfig().ShrinkWindow / time.Second)
	s.run(due+10, due+10+w*11/12-1)
	if len(s.resizes) != 0 {
		t.Fatalf("shrank while the burst was in the window: %+v", s.resizes)
	}
	s.run(due+10+w*11/12-1, due+10+w+1)
	if len(s.resizes) != 1 || s.resizes[0].d.CPU.Action != Shrink {
		t.Errorf("after the burst left the window: resizes %+v, want the shrink", s.resizes)
	}
}
