package recommend

import (
	"strings"
	"testing"
	"time"

	"github.com/snug-dev/snug/internal/resize"
)

var throttledAt100 = sig{cpuMillis: 100, throttled: 1, cpuLimit: 100, wsBytes: 64 << 20, memLimit: 256 << 20}

var small = Resources{CPURequestMillis: 100, CPULimitMillis: 100, MemRequestBytes: 256 << 20, MemLimitBytes: 256 << 20}

func TestInFlightUntilFeedback(t *testing.T) {
	p, c := newContainer(t, DefaultConfig(), Bounds{})
	d := c.Observe(t0.Add(time.Second), throttledAt100.at(1), small)
	if d.CPU.Action != Grow {
		t.Fatalf("want a grow, got %v", d)
	}
	p.Sent(t0.Add(time.Second))
	// The kubelet has not applied it yet: still throttled at 100m.
	d = c.Observe(t0.Add(2*time.Second), throttledAt100.at(2), small)
	if d.CPU.Action != Hold || d.CPU.Reason.Why != WhyInFlight {
		t.Fatalf("while in flight: %v, want InFlight", d)
	}
	p.Feedback(t0.Add(2500*time.Millisecond), Feedback{Outcome: resize.Conflict})
	d = c.Observe(t0.Add(3*time.Second), throttledAt100.at(3), small)
	if d.CPU.Action != Grow {
		t.Fatalf("after a conflict: %v, want the grow again at once", d)
	}
}

func TestInFlightEndsWhenResourcesChange(t *testing.T) {
	p, c := newContainer(t, DefaultConfig(), Bounds{})
	c.Observe(t0.Add(time.Second), throttledAt100.at(1), small)
	p.Sent(t0.Add(time.Second))
	grown := small
	grown.CPURequestMillis, grown.CPULimitMillis = 500, 500
	s := throttledAt100
	s.cpuLimit, s.cpuMillis = 500, 500
	// The sample that shows the change straddles it: ignored by the fast
	// path. The next one, fully throttled at 500m, counts.
	d := c.Observe(t0.Add(2*time.Second), s.at(2), grown)
	if d.CPU.Action != Hold {
		t.Fatalf("straddling sample: %v, want Hold", d)
	}
	d = c.Observe(t0.Add(3*time.Second), s.at(3), grown)
	if d.CPU.Action != Grow || d.CPU.Request != 2500 {
		t.Fatalf("after the change: %v, want a grow to 2500m", d)
	}
}

func TestInFlightTimeoutBacksOff(t *testing.T) {
	cfg := DefaultConfig()
	p, c := newContainer(t, cfg, Bounds{})
	c.Observe(t0.Add(time.Second), throttledAt100.at(1), small)
	p.Sent(t0.Add(time.Second))
	at := t0.Add(time.Second + cfg.InFlightTimeout)
	d := c.Observe(at, throttledAt100.at(31), small)
	if d.CPU.Reason.Why != WhyBackoff || d.CPU.Reason.Outcome != "Timeout" {
		t.Fatalf("after the in-flight timeout: %v, want a Timeout backoff", d)
	}
	d = c.Observe(at.Add(cfg.BackoffInitial), throttledAt100.at(36), small)
	if d.CPU.Action != Grow {
		t.Fatalf("after the backoff: %v, want the grow", d)
	}
}

func TestBackoffDoubles(t *testing.T) {
	cfg := DefaultConfig()
	p, c := newContainer(t, cfg, Bounds{})
	now := t0
	var waits []time.Duration
	for i := range 8 {
		now = now.Add(time.Second)
		d := c.Observe(now, throttledAt100.at(i), small)
		for d.CPU.Action != Grow {
			now = now.Add(time.Second)
			d = c.Observe(now, throttledAt100.at(i), small)
		}
		p.Sent(now)
		p.Feedback(now, Feedback{Outcome: resize.Error})
		waits = append(waits, p.backoffUntil.Sub(now))
		if c.cpu.capUntil.After(now) {
			t.Fatal("an Error was remembered as a cap")
		}
	}
	want := []time.Duration{5, 10, 20, 40, 80, 160, 300, 300}
	for i := range want {
		if waits[i] != want[i]*time.Second {
			t.Fatalf("backoffs = %v, want %v seconds", waits, want)
		}
	}
	p.Feedback(now, Feedback{Outcome: resize.Applied})
	if !p.backoffUntil.IsZero() || p.backoffStep != 0 {
		t.Error("Applied did not reset the backoff")
	}
}

func TestDeferredAndInfeasibleCaps(t *testing.T) {
	cfg := DefaultConfig()
	for _, tc := range []struct {
		outcome resize.Outcome
		caps    []Cap
		wantCap int64
		ttl     time.Duration
	}{
		{resize.Deferred, []Cap{{Container: "app", CPUMillis: 180}}, 180, cfg.DeferredCapTTL},
		{resize.Infeasible, []Cap{{Container: "app", CPUMillis: 150}}, 150, cfg.InfeasibleCapTTL},
		// Unknown cap: half-way between the old request and the one sent.
		{resize.Infeasible, nil, 300, cfg.InfeasibleCapTTL},
	} {
		t.Run(tc.outcome.String(), func(t *testing.T) {
			p, c := newContainer(t, cfg, Bounds{})
			now := t0.Add(time.Second)
			d := c.Observe(now, throttledAt100.at(1), small)
			p.Sent(now)
			if d.CPU.Request != 500 {
				t.Fatalf("sent %v", d)
			}
			p.Feedback(now, Feedback{Outcome: tc.outcome, Caps: tc.caps})
			now = now.Add(time.Second)
			d = c.Observe(now, throttledAt100.at(2), small)
			if d.CPU.Action != Grow || d.CPU.Request != tc.wantCap {
				t.Fatalf("after %v: %v, want a grow to the cap %dm", tc.outcome, d, tc.wantCap)
			}
			if r := c.Recommendation(now); r.CPU.Target > tc.wantCap {
				t.Errorf("target %d above the cap", r.CPU.Target)
			}
			p.Sent(now)
			grown := small
			grown.CPURequestMillis, grown.CPULimitMillis = tc.wantCap, tc.wantCap
			s := throttledAt100
			s.cpuLimit, s.cpuMillis = tc.wantCap, float64(tc.wantCap)
			c.Observe(now.Add(time.Second), s.at(3), grown)
			d = c.Observe(now.Add(2*time.Second), s.at(4), grown)
			if d.CPU.Action != Hold || d.CPU.Reason.Why != WhyCapped || d.CPU.Reason.Outcome != tc.outcome.String() {
				t.Fatalf("at the cap: %v, want Capped (%v)", d, tc.outcome)
			}
			// Once the cap expires the grow is tried again.
			later := now.Add(tc.ttl + time.Second)
			d = c.Observe(later, s.at(5), grown)
			if d.CPU.Action != Grow || d.CPU.Request <= tc.wantCap {
				t.Fatalf("after the cap's ttl: %v, want a grow past %dm", d, tc.wantCap)
			}
		})
	}
}

func TestHourlyBudget(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxResizesPerHour = 3
	p, _ := NewPod(cfg)
	now := t0
	for range 3 {
		if p.remaining(now) < 1 {
			t.Fatal("budget spent early")
		}
		p.Sent(now)
		now = now.Add(10 * time.Minute)
	}
	if got := p.ResizesInLastHour(now); got != 3 {
		t.Errorf("resizes in the last hour = %d, want 3", got)
	}
	if got := p.remaining(now); got != 0 {
		t.Errorf("remaining = %d, want 0", got)
	}
	// now = t0+30m; the first resize leaves the window at t0+60m.
	if got := p.waitFor(now, 1); got != 30*time.Minute {
		t.Errorf("wait for one = %v, want 30m", got)
	}
	// A shrink needs GrowReserve+1 = 2 free: the second leaves at t0+70m.
	if got := p.waitFor(now, 2); got != 40*time.Minute {
		t.Errorf("wait for two = %v, want 40m", got)
	}
	if got := p.remaining(t0.Add(time.Hour)); got != 1 {
		t.Errorf("remaining an hour after the first = %d, want 1", got)
	}
	p.Sent(t0.Add(time.Hour))
	if got := p.ResizesInLastHour(t0.Add(time.Hour)); got != 3 {
		t.Errorf("ring: resizes in the last hour = %d, want 3", got)
	}
}

// TestBudgetReserveForGrow: shrinks leave the last resize of the hour to a
// grow, and the decision says why it waits.
func TestBudgetReserveForGrow(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxResizesPerHour = 2
	cfg.WarmupSamples = 0
	cfg.ShrinkWindow = time.Minute
	p, c := newContainer(t, cfg, Bounds{})
	p.Sent(t0) // someone used one resize
	big := Resources{CPURequestMillis: 1000, CPULimitMillis: 1000, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20}
	var d Decision
	for i := 1; i <= 120; i++ {
		d = c.Observe(t0.Add(time.Duration(i)*time.Second), sig{cpuMillis: 100, cpuLimit: 1000, wsBytes: 64 << 20, memLimit: 80 << 20}.at(i), big)
	}
	if d.CPU.Action != Hold || d.CPU.Reason.Why != WhyBudget {
		t.Fatalf("shrink with one resize left: %v, want Budget", d)
	}
	if !strings.Contains(d.String(), "next in 58m") {
		t.Errorf("decision %q does not say when", d)
	}
	d = c.Observe(t0.Add(121*time.Second), throttledAt100.at(121), small)
	d = c.Observe(t0.Add(122*time.Second), throttledAt100.at(122), small)
	if d.CPU.Action != Grow {
		t.Fatalf("grow with one resize left: %v, want Grow", d)
	}
}

func TestPodContainers(t *testing.T) {
	p, err := NewPod(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddContainer("a", Bounds{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddContainer("a", Bounds{}, nil); err == nil {
		t.Error("added a container twice")
	}
	if _, err := p.AddContainer("b", Bounds{MinCPUMillis: 10, MaxCPUMillis: 5}, nil); err == nil {
		t.Error("accepted min above max")
	}
	bad := NewAggregate(Config{CPUHalfLife: time.Hour, MemoryHalfLife: time.Hour})
	if _, err := p.AddContainer("c", Bounds{}, bad); err == nil {
		t.Error("accepted a seed with other half-lives")
	}
	if p.Container("a") == nil || p.Container("x") != nil || len(p.Containers()) != 1 {
		t.Error("container lookup")
	}
	p.RemoveContainer("a")
	if p.Container("a") != nil {
		t.Error("container not removed")
	}
	if _, err := NewPod(Config{}); err == nil {
		t.Error("NewPod accepted an empty config")
	}
}

// TestOOMKilledRestart: a kill that restarted the container is reported
// from the pod status; the next sample grows memory.
func TestOOMKilledRestart(t *testing.T) {
	_, c := newContainer(t, DefaultConfig(), Bounds{})
	c.OOMKilled()
	d := c.Observe(t0.Add(time.Second), sig{cpuMillis: 10, cpuLimit: 100, wsBytes: 8 << 20, memLimit: 256 << 20}.at(1), small)
	if d.Memory.Action != Grow || d.Memory.Reason.Why != WhyOOMKill || d.Memory.Request != 384<<20 {
		t.Fatalf("after OOMKilled: %v, want a grow to 384Mi", d)
	}
}

// TestConflictIsNoFailure: a Conflict (someone else changed the pod) ends
// the wait and the next decision asks again at once; conflicts never count
// towards the backoff, so a failure after several of them backs off for
// BackoffInitial, not longer.
func TestConflictIsNoFailure(t *testing.T) {
	cfg := DefaultConfig()
	p, c := newContainer(t, cfg, Bounds{})
	at := t0
	for i := 1; i <= 3; i++ {
		at = t0.Add(time.Duration(i) * time.Second)
		d := c.Observe(at, throttledAt100.at(i), small)
		if d.CPU.Action != Grow {
			t.Fatalf("decision %d after %d conflicts: %v, want a grow at once", i, i-1, d)
		}
		p.Sent(at)
		p.Feedback(at.Add(100*time.Millisecond), Feedback{Outcome: resize.Conflict})
	}
	at = at.Add(time.Second)
	if d := c.Observe(at, throttledAt100.at(4), small); d.CPU.Action != Grow {
		t.Fatalf("after three conflicts: %v, want a grow", d)
	}
	p.Sent(at)
	p.Feedback(at, Feedback{Outcome: resize.Rejected})
	d := c.Observe(at.Add(time.Second), throttledAt100.at(5), small)
	if d.CPU.Action != Hold || d.CPU.Reason.Why != WhyBackoff {
		t.Fatalf("after a rejection: %v, want Backoff", d)
	}
	if got, want := d.CPU.Reason.Duration, cfg.BackoffInitial-time.Second; got != want {
		t.Errorf("backoff left %v, want %v (BackoffInitial: the conflicts did not count)", got, want)
	}
}
