package recommend

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/snug-dev/snug/internal/cgroup"
)

// sig builds one second of signals.
type sig struct {
	cpuMillis, throttled float64
	cpuLimit             int64
	wsBytes, memLimit    uint64
	oom                  uint64
	psiMemory            float64
	limitHits            uint64
}

func (s sig) at(sec int) cgroup.Signals {
	out := cgroup.Signals{
		Time: t0.Add(time.Duration(sec) * time.Second), HasRate: true, IntervalSeconds: 1,
		CPUUsageMillicores: s.cpuMillis, CPUThrottledFraction: s.throttled, CPULimitMillicores: s.cpuLimit,
		MemoryWorkingSetBytes: s.wsBytes, OOMKillsDelta: s.oom, MemoryLimitHitsDelta: s.limitHits,
	}
	if s.memLimit > 0 {
		out.MemoryLimited = true
		if s.wsBytes < s.memLimit {
			out.MemoryHeadroomBytes = s.memLimit - s.wsBytes
		}
		out.MemoryHeadroomFraction = float64(out.MemoryHeadroomBytes) / float64(s.memLimit)
	}
	if s.psiMemory > 0 {
		out.PSIPresent = true
		out.MemoryPressure.SomeStalledFraction = s.psiMemory
	}
	return out
}

var approx = cmpopts.EquateApprox(0, 1e-6)

func newContainer(t testing.TB, cfg Config, b Bounds) (*Pod, *Container) {
	t.Helper()
	p, err := NewPod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := p.AddContainer("app", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

// TestFastPath feeds a fresh container the same second of signals n times
// and checks the last decision.
func TestFastPath(t *testing.T) {
	const mi = 1 << 20
	guaranteed := Resources{CPURequestMillis: 100, CPULimitMillis: 100, MemRequestBytes: 256 * mi, MemLimitBytes: 256 * mi}
	burstable := Resources{CPURequestMillis: 50, CPULimitMillis: 100, MemRequestBytes: 128 * mi, MemLimitBytes: 256 * mi}
	calm := sig{cpuMillis: 50, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi}
	for _, tc := range []struct {
		name   string
		cur    Resources
		bounds Bounds
		s      sig
		n      int
		cpu    Change
		memory Change
	}{{
		// Every period throttled: usage is censored at the limit, x5.
		name: "one fully throttled second grows cpu x5",
		cur:  guaranteed, s: sig{cpuMillis: 100, throttled: 1, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi}, n: 1,
		cpu: Change{Action: Grow, Request: 500, Limit: 500, Fast: true,
			Reason: Reason{Why: WhyThrottled, Value: 100, Limit: 100, Request: 100, Fraction: 1, Duration: time.Second}},
		memory: Change{Request: 256 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyWarmingUp, Memory: true, Duration: 59 * time.Second}},
	}, {
		// Bursts near the limit: under CPUCensoredFraction (0.8) with
		// usage under the limit, x(1 + 1.5*0.75) = x2.125.
		name: "seconds throttled in 75% of periods grow by the throttled fraction",
		cur:  guaranteed, s: sig{cpuMillis: 90, throttled: 0.75, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi}, n: 2,
		cpu: Change{Action: Grow, Request: 213, Limit: 213, Fast: true,
			Reason: Reason{Why: WhyThrottled, Value: 90, Limit: 100, Request: 100, Fraction: 0.75, Duration: 2 * time.Second}},
		memory: Change{Request: 256 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyWarmingUp, Memory: true, Duration: 58 * time.Second}},
	}, {
		// The whole quota used and still throttled: censored whatever the
		// fraction (a CI run's backlogged 400m under 100m read 71%).
		name: "throttled with the whole quota used is censored",
		cur:  guaranteed, s: sig{cpuMillis: 100, throttled: 0.7, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi}, n: 2,
		cpu: Change{Action: Grow, Request: 500, Limit: 500, Fast: true,
			Reason: Reason{Why: WhyThrottled, Value: 100, Limit: 100, Request: 100, Fraction: 0.7, Duration: 2 * time.Second}},
		memory: Change{Request: 256 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyWarmingUp, Memory: true, Duration: 58 * time.Second}},
	}, {
		// At CPUCensoredFraction: censored, x5 (the lab's backlog read 0.91).
		name: "seconds throttled in 80% of periods are censored",
		cur:  guaranteed, s: sig{cpuMillis: 100, throttled: 0.8, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi}, n: 2,
		cpu: Change{Action: Grow, Request: 500, Limit: 500, Fast: true,
			Reason: Reason{Why: WhyThrottled, Value: 100, Limit: 100, Request: 100, Fraction: 0.8, Duration: 2 * time.Second}},
		memory: Change{Request: 256 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyWarmingUp, Memory: true, Duration: 58 * time.Second}},
	}, {
		name: "one partly throttled second waits",
		cur:  guaranteed, s: sig{cpuMillis: 95, throttled: 0.6, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi}, n: 1,
		cpu:    Change{Request: 100, Limit: 100, Reason: Reason{Why: WhyWarmingUp, Duration: 59 * time.Second}},
		memory: Change{Request: 256 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyWarmingUp, Memory: true, Duration: 59 * time.Second}},
	}, {
		name: "two partly throttled seconds grow by the throttled fraction",
		cur:  burstable, s: sig{cpuMillis: 95, throttled: 0.6, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi}, n: 2,
		// x(1 + 1.5*0.6) = x1.9 of the limit; the request keeps its ratio.
		cpu: Change{Action: Grow, Request: 95, Limit: 190, Fast: true,
			Reason: Reason{Why: WhyThrottled, Value: 95, Limit: 100, Request: 50, Fraction: 0.6, Duration: 2 * time.Second}},
		memory: Change{Request: 128 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyWarmingUp, Memory: true, Duration: 58 * time.Second}},
	}, {
		name: "pinned at the limit without throttling grows x1.75 after 2s",
		cur:  guaranteed, s: sig{cpuMillis: 99, throttled: 0.1, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi}, n: 2,
		cpu: Change{Action: Grow, Request: 175, Limit: 175, Fast: true,
			Reason: Reason{Why: WhyPinned, Value: 99, Limit: 100, Request: 100, Fraction: 0.5, Duration: 2 * time.Second}},
		memory: Change{Request: 256 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyWarmingUp, Memory: true, Duration: 58 * time.Second}},
	}, {
		name: "requests only cannot move the limit",
		cur:  burstable, bounds: Bounds{RequestsOnly: true},
		s: sig{cpuMillis: 100, throttled: 1, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi}, n: 2,
		cpu:    Change{Request: 50, Limit: 100, Reason: Reason{Why: WhyLimitFixed, Limit: 100}},
		memory: Change{Request: 128 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyWarmingUp, Memory: true, Duration: 58 * time.Second}},
	}, {
		name: "cpu not controlled",
		cur:  guaranteed, bounds: Bounds{IgnoreCPU: true},
		s: sig{cpuMillis: 100, throttled: 1, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi}, n: 1,
		cpu:    Change{Request: 100, Limit: 100, Reason: Reason{Why: WhyNotControlled}},
		memory: Change{Request: 256 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyWarmingUp, Memory: true, Duration: 59 * time.Second}},
	}, {
		name: "maxAllowed caps a grow",
		cur:  guaranteed, bounds: Bounds{MaxCPUMillis: 150},
		s: sig{cpuMillis: 100, throttled: 1, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi}, n: 1,
		cpu: Change{Action: Grow, Request: 150, Limit: 150, Fast: true,
			Reason: Reason{Why: WhyThrottled, Value: 100, Limit: 100, Request: 100, Fraction: 1, Duration: time.Second}},
		memory: Change{Request: 256 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyWarmingUp, Memory: true, Duration: 59 * time.Second}},
	}, {
		name: "at maxAllowed a grow is held",
		cur:  guaranteed, bounds: Bounds{MaxCPUMillis: 100},
		s: sig{cpuMillis: 100, throttled: 1, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi}, n: 1,
		cpu:    Change{Request: 100, Limit: 100, Reason: Reason{Why: WhyCapped, Value: 500, Limit: 100, Outcome: "maxAllowed"}},
		memory: Change{Request: 256 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyWarmingUp, Memory: true, Duration: 59 * time.Second}},
	}, {
		name: "oom kill grows memory x1.5 at once",
		cur:  guaranteed, s: sig{cpuMillis: 50, cpuLimit: 100, wsBytes: 250 * mi, memLimit: 256 * mi, oom: 1}, n: 1,
		cpu: Change{Request: 100, Limit: 100, Reason: Reason{Why: WhyWarmingUp, Duration: 59 * time.Second}},
		memory: Change{Action: Grow, Request: 384 * mi, Limit: 384 * mi, Fast: true,
			Reason: Reason{Why: WhyOOMKill, Memory: true, Value: 250 * mi, Limit: 256 * mi, Request: 256 * mi}},
	}, {
		name: "working set within 10% of the limit grows memory",
		cur:  burstable, s: sig{cpuMillis: 50, cpuLimit: 100, wsBytes: 240 * mi, memLimit: 256 * mi}, n: 1,
		cpu: Change{Request: 50, Limit: 100, Reason: Reason{Why: WhyWarmingUp, Duration: 59 * time.Second}},
		// To the peak plus 20%: 288Mi, not a multiple of the limit.
		memory: Change{Action: Grow, Request: 144 * mi, Limit: 288 * mi, Fast: true,
			Reason: Reason{Why: WhyMemoryNearLimit, Memory: true, Value: 240 * mi, Limit: 256 * mi, Request: 128 * mi, Fraction: 1.0 / 16}},
	}, {
		name: "memory pressure near the limit grows memory",
		cur:  guaranteed, s: sig{cpuMillis: 50, cpuLimit: 100, wsBytes: 200 * mi, memLimit: 256 * mi, psiMemory: 0.2}, n: 1,
		cpu: Change{Request: 100, Limit: 100, Reason: Reason{Why: WhyWarmingUp, Duration: 59 * time.Second}},
		memory: Change{Action: Grow, Request: 384 * mi, Limit: 384 * mi, Fast: true,
			Reason: Reason{Why: WhyMemoryPressure, Memory: true, Value: 200 * mi, Limit: 256 * mi, Request: 256 * mi, Fraction: 0.2}},
	}, {
		name: "memory pressure far from the limit is the node's",
		cur:  guaranteed, s: sig{cpuMillis: 50, cpuLimit: 100, wsBytes: 64 * mi, memLimit: 256 * mi, psiMemory: 0.5}, n: 1,
		cpu:    Change{Request: 100, Limit: 100, Reason: Reason{Why: WhyWarmingUp, Duration: 59 * time.Second}},
		memory: Change{Request: 256 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyWarmingUp, Memory: true, Duration: 59 * time.Second}},
	}, {
		name: "no request, nothing to size",
		cur:  Resources{}, s: sig{cpuMillis: 500, throttled: 1, cpuLimit: 100, wsBytes: 64 * mi}, n: 2,
		cpu:    Change{Reason: Reason{Why: WhyNoRequest}},
		memory: Change{Reason: Reason{Why: WhyNoRequest, Memory: true}},
	}, {
		name: "calm after warm-up holds in band",
		cur:  Resources{CPURequestMillis: 60, CPULimitMillis: 100, MemRequestBytes: 80 * mi, MemLimitBytes: 256 * mi}, s: calm, n: 60,
		cpu:    Change{Request: 60, Limit: 100, Reason: Reason{Why: WhyInBand, Value: 59, Request: 60}},
		memory: Change{Request: 80 * mi, Limit: 256 * mi, Reason: Reason{Why: WhyInBand, Memory: true, Value: 80530637, Request: 80 * mi}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := newContainer(t, DefaultConfig(), tc.bounds)
			var d Decision
			for i := range tc.n {
				d = c.Observe(t0.Add(time.Duration(i+1)*time.Second), tc.s.at(i+1), tc.cur)
			}
			want := Decision{CPU: tc.cpu, Memory: tc.memory}
			if diff := cmp.Diff(want, d, approx); diff != "" {
				t.Errorf("decision (-want +got):\n%s\ngot: %v", diff, d)
			}
		})
	}
}

func TestReasonStrings(t *testing.T) {
	for _, tc := range []struct {
		r    Reason
		want string
	}{
		{Reason{Why: WhyThrottled, Limit: 100, Fraction: 0.62, Duration: 2 * time.Second}, "cpu throttled in 62% of periods for 2s at limit 100m"},
		{Reason{Why: WhyPinned, Value: 98, Limit: 100, Duration: 2 * time.Second}, "cpu usage pinned at 98m of limit 100m for 2s"},
		{Reason{Why: WhyOOMKill, Memory: true, Limit: 128 << 20}, "oom kill at memory limit 128Mi"},
		{Reason{Why: WhyMemoryNearLimit, Memory: true, Value: 240 << 20, Limit: 256 << 20, Fraction: 0.0625}, "memory working set 240Mi is within 6% of limit 256Mi"},
		{Reason{Why: WhyMemoryCreep, Memory: true, Value: 200 << 20, Limit: 256 << 20, Duration: 56 * time.Second}, "memory working set 200Mi would reach limit 256Mi in 56s"},
		{Reason{Why: WhyStabilizing, Value: 60, Request: 400, Duration: 192 * time.Second}, "cpu target 60m is below request 400m; shrinking in 3m12s if it stays there"},
		{Reason{Why: WhyBelowRequest, Memory: true, Value: 1536 << 20, Request: 2 << 30, Duration: 5 * time.Minute}, "memory target 1.5Gi has been below request 2Gi for 5m0s"},
		{Reason{Why: WhyBudget, Value: 250, Duration: 4 * time.Minute}, "cpu wants 250m but the pod used its resizes for the hour; next in 4m0s"},
		{Reason{Why: WhyBackoff, Value: 250, Duration: 10 * time.Second, Outcome: "Error"}, "cpu wants 250m but the last resize ended Error; retrying in 10s"},
		{Reason{Why: WhyCapped, Value: 2500, Limit: 1900, Outcome: "Infeasible"}, "cpu wants 2500m but is capped at 1900m (Infeasible)"},
		{Reason{Why: WhyLoadGone, Value: 1174, Request: 500}, "cpu target 1174m is above request 500m, but the load that asked for it is over"},
		{Reason{Why: WhyLoadNow, Value: 32, Request: 63, Limit: 86}, "cpu shrink to 32m waits: demand now is 86m, over the limit it would bring"},
		{Reason{Why: WhyRestartRequired, Memory: true, Value: 96 << 20, Request: 64 << 20}, "memory wants 96Mi but is held at request 64Mi: its resizePolicy is RestartContainer, so a resize would restart the container"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.r.Why, got, tc.want)
		}
	}
	// Every reason up to the last one declared has a name of its own.
	for w := WhyNoData; w <= WhyRestartRequired; w++ {
		if w.String() == "" || strings.HasPrefix(w.String(), "Why(") || (Reason{Why: w}).String() == "" {
			t.Errorf("reason %d has no name or text", w)
		}
	}
}

// TestHotReplica: two pods of one workload start from the same seed; the
// one that gets more load is sized up on its own, its sibling stays.
func TestHotReplica(t *testing.T) {
	cfg := DefaultConfig()
	seed := NewAggregate(cfg)
	for i := range 3600 {
		seed.CPU.Add(100, 1, t0.Add(time.Duration(i)*time.Second))
		seed.Memory.Add(64<<20, 1, t0.Add(time.Duration(i)*time.Second))
	}
	seed.CPUSeconds, seed.MemorySeconds = 3600, 3600
	start := t0.Add(time.Hour)
	cur := Resources{CPURequestMillis: 120, CPULimitMillis: 240, MemRequestBytes: 80 << 20, MemLimitBytes: 160 << 20}
	pods := map[string]float64{"cold": 100, "hot": 300}
	got := map[string]int64{}
	for name, load := range pods {
		p, _ := NewPod(cfg)
		c, err := p.AddContainer("app", Bounds{}, seed)
		if err != nil {
			t.Fatal(err)
		}
		// A seeded container needs no warm-up.
		if r := c.Recommendation(start); r.CPU.Target < 100 || r.CPU.Target > 130 {
			t.Errorf("%s: seeded target %dm, want near 100m+15%%", name, r.CPU.Target)
		}
		cr := cur
		for i := range 600 {
			now := start.Add(time.Duration(i) * time.Second)
			d := c.Observe(now, sig{cpuMillis: load, cpuLimit: cr.CPULimitMillis, wsBytes: 64 << 20, memLimit: uint64(cr.MemLimitBytes)}.at(3600+i), cr)
			if d.Resize() {
				p.Sent(now)
				cr.CPURequestMillis, cr.CPULimitMillis = d.CPU.Request, d.CPU.Limit
			}
		}
		got[name] = cr.CPURequestMillis
	}
	if got["cold"] != 120 {
		t.Errorf("cold replica request = %dm, want unchanged 120m", got["cold"])
	}
	if got["hot"] < 300 {
		t.Errorf("hot replica request = %dm, want at least its 300m load", got["hot"])
	}
}

func TestRecommendation(t *testing.T) {
	cfg := DefaultConfig()
	_, c := newContainer(t, cfg, Bounds{MaxCPUMillis: 400})
	cur := Resources{CPURequestMillis: 500, CPULimitMillis: 500, MemRequestBytes: 256 << 20, MemLimitBytes: 256 << 20}
	if r := c.Recommendation(t0); r != (Recommendation{}) {
		t.Errorf("recommendation without samples = %+v, want zero", r)
	}
	for i := range 7200 {
		load := 300.0
		if (i/15)%10 == 0 {
			load = 500 // a tenth of the time is busier, in stretches of 15s (CPURequestResolution)
		}
		c.Observe(t0.Add(time.Duration(i)*time.Second), sig{cpuMillis: load, cpuLimit: 1000, wsBytes: 100 << 20, memLimit: 256 << 20}.at(i), cur)
	}
	r := c.Recommendation(t0.Add(7200 * time.Second))
	// 90% of the weight is at 300m, so p90 and p50 are 300m's bucket end
	// (302.4m); p95 is 500m's bucket, and with the margin and the
	// confidence factor above maxAllowed.
	within(t, "cpu uncapped target", float64(r.CPU.UncappedTarget), 302.4*1.15, 0.01)
	if r.CPU.Target != r.CPU.UncappedTarget || r.CPU.UpperBound != 400 {
		t.Errorf("cpu target %d, upper %d: want the target uncapped and the upper bound at maxAllowed 400m", r.CPU.Target, r.CPU.UpperBound)
	}
	within(t, "cpu lower bound", float64(r.CPU.LowerBound), 302.4*1.15, 0.01)
	within(t, "memory target", float64(r.Memory.Target), 100<<20*1.2, 0.01)
	if !(r.Memory.LowerBound <= r.Memory.Target && r.Memory.Target <= r.Memory.UpperBound) {
		t.Errorf("memory bounds out of order: %+v", r.Memory)
	}
}

// TestCPURequestFromMeans: the CPU request is sized from demand averaged
// over CPURequestResolution, so a load with one-second noise is not
// reserved for its noise; the limit the request brings at the container's
// ratio still covers the one-second percentile, so a container whose request
// is its limit keeps the one-second sizing; a seeded container waits until
// its own history dominates.
func TestCPURequestFromMeans(t *testing.T) {
	// 200m with +-30% uniform noise every second: the p90 of one-second
	// samples is 248m, that of 15-second means about 211m.
	const mean, noise = 200.0, 0.3
	perSecond := mean * (1 + noise*0.8) * 1.15
	means := mean * 1.06 * 1.15
	burstable := Resources{CPURequestMillis: 300, CPULimitMillis: 600, MemRequestBytes: 128 << 20, MemLimitBytes: 256 << 20}
	for _, tc := range []struct {
		name     string
		cur      Resources
		cfg      func(*Config)
		seconds  int
		seed     bool
		lo, hi   float64
		describe string
	}{
		{name: "limit twice the request", cur: burstable,
			lo: mean * 1.15, hi: means * 1.06, describe: "the p90 of 15s means plus margin"},
		{name: "request is the limit", cur: Resources{CPURequestMillis: 300, CPULimitMillis: 300, MemRequestBytes: 128 << 20, MemLimitBytes: 128 << 20},
			lo: perSecond * 0.97, hi: perSecond * 1.06, describe: "the p90 of one-second samples plus margin"},
		{name: "no limit", cur: Resources{CPURequestMillis: 300, MemRequestBytes: 128 << 20},
			lo: mean * 1.15, hi: means * 1.06, describe: "the p90 of 15s means plus margin"},
		{name: "a short half-life keeps one-second samples", cur: burstable,
			cfg: func(c *Config) { c.CPUHalfLife = 10 * time.Second },
			lo:  perSecond * 0.97, hi: perSecond * 1.06, describe: "the p90 of one-second samples plus margin"},
		{name: "seeded, own history short", cur: burstable, seconds: 900, seed: true,
			lo: perSecond * 0.97, hi: perSecond * 1.06, describe: "the one-second p90 of the seed and its own samples"},
		{name: "seeded, own history long", cur: burstable, seed: true,
			lo: mean * 1.15, hi: means * 1.06, describe: "the p90 of its own 15s means plus margin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			_, c := newContainer(t, cfg, Bounds{})
			if tc.seed {
				// The workload ran the same load before.
				old := c
				observeNoisy(old, mean, noise, tc.cur, 7200)
				w := NewAggregate(cfg)
				if err := w.Merge(old.Snapshot(t0.Add(2 * time.Hour))); err != nil {
					t.Fatal(err)
				}
				p, err := NewPod(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if c, err = p.AddContainer("app", Bounds{}, w); err != nil {
					t.Fatal(err)
				}
			}
			n := tc.seconds
			if n == 0 {
				n = 7200
			}
			observeNoisy(c, mean, noise, tc.cur, n)
			got := float64(c.Recommendation(t0.Add(time.Duration(n) * time.Second)).CPU.Target)
			if got < tc.lo || got > tc.hi {
				t.Errorf("cpu target %.0fm, want %s, in [%.0fm, %.0fm]", got, tc.describe, tc.lo, tc.hi)
			}
		})
	}
}

// observeNoisy feeds n seconds of mean +- noise (uniform, seeded) from t0
// at the resources cur.
func observeNoisy(c *Container, mean, noise float64, cur Resources, n int) {
	rng := uint64(1)
	for i := range n {
		rng = rng*6364136223846793005 + 1442695040888963407
		u := float64(rng>>11) / (1 << 53)
		load := mean * (1 + noise*(2*u-1))
		c.Observe(t0.Add(time.Duration(i)*time.Second), sig{cpuMillis: load, cpuLimit: cur.CPULimitMillis, wsBytes: 64 << 20, memLimit: uint64(cur.MemLimitBytes)}.at(i), cur)
	}
}

// TestMemoryLimitFloor: the floor handed to the planner is the memory limit
// of the first sample, whatever the resizes after it.
func TestMemoryLimitFloor(t *testing.T) {
	_, c := newContainer(t, DefaultConfig(), Bounds{})
	cur := Resources{CPURequestMillis: 100, CPULimitMillis: 200, MemRequestBytes: 256 << 20, MemLimitBytes: 512 << 20}
	if got := c.MemoryLimitFloorBytes(); got != 0 {
		t.Errorf("floor before any sample = %d, want 0", got)
	}
	for i := range 3 {
		c.Observe(t0.Add(time.Duration(i)*time.Second), sig{cpuMillis: 50, cpuLimit: cur.CPULimitMillis, wsBytes: 100 << 20, memLimit: uint64(cur.MemLimitBytes)}.at(i), cur)
		cur.MemRequestBytes, cur.MemLimitBytes = cur.MemRequestBytes*3/4, cur.MemLimitBytes*3/4 // resized down between samples
	}
	if got := c.MemoryLimitFloorBytes(); got != 512<<20 {
		t.Errorf("floor = %s, want the first sample's limit 512Mi", formatBytes(got))
	}
	_, noLimit := newContainer(t, DefaultConfig(), Bounds{})
	noLimit.Observe(t0, sig{cpuMillis: 50, wsBytes: 100 << 20}.at(0), Resources{CPURequestMillis: 100, MemRequestBytes: 256 << 20})
	if got := noLimit.MemoryLimitFloorBytes(); got != 0 {
		t.Errorf("floor without a limit = %d, want 0", got)
	}
}
