package recommend

import (
	"testing"
	"time"

	"github.com/snug-dev/snug/internal/resize"
)

// TestRecurringBurstsHoldTheLimit: a 100m load with a one-second burst to
// 400m every 3 minutes under a 200m/200m limit. The first burst starves
// and the fast path grows; the shrinks that follow stop where the limit
// holds the busiest second of the stabilization window, which always has
// a burst in it, so the bursts never starve again and the container
// settles. (Before, each shrink went back under the bursts: a grow and two
// or three shrinks every few minutes.)
func TestRecurringBurstsHoldTheLimit(t *testing.T) {
	s := newSim(t, DefaultConfig(), Resources{CPURequestMillis: 200, CPULimitMillis: 200, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
	s.cpu = func(sec int) float64 {
		if sec > 120 && sec%180 == 0 {
			return 400
		}
		return 100
	}
	s.run(0, 3*3600)
	for _, r := range s.resizes {
		t.Logf("t=%ds %v", r.sec, r.d.CPU)
	}
	if s.count(Grow, true) == 0 {
		t.Fatal("the first burst was not grown for")
	}
	starvedLate, resizesLate := 0, 0
	for sec := 3600; sec < 3*3600; sec++ {
		if s.throttle[sec] >= 0.25 {
			starvedLate++
		}
	}
	for _, r := range s.resizes {
		if r.sec >= 3600 {
			resizesLate++
		}
	}
	if starvedLate != 0 || resizesLate != 0 {
		t.Errorf("after the first hour: %d starved seconds, %d resizes; want none (limit %dm for 400m bursts)", starvedLate, resizesLate, s.cur.CPULimitMillis)
	}
	if l := s.cur.CPULimitMillis; l < 460 || l > 600 {
		t.Errorf("limit %dm, want the bursts' 400m plus the margin (460m), and not the fast path's overshoot: at most 600m", l)
	}
}

// TestShrinkStopsAtTheRecentPeak: a container sized well above a 100m load
// with one-second bursts to 400m every 3 minutes shrinks, but never under
// the bursts (a burst is always in its 5-minute window), so it never
// starves nor grows. The hold says why.
func TestShrinkStopsAtTheRecentPeak(t *testing.T) {
	cfg := DefaultConfig()
	s := newSim(t, cfg, Resources{CPURequestMillis: 600, CPULimitMillis: 600, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
	s.cpu = func(sec int) float64 {
		if sec > 120 && sec%180 == 0 {
			return 400
		}
		return 100
	}
	ds := s.run(0, 3600)
	if s.count(Grow, true) != 0 {
		t.Errorf("grew %d times: the bursts fit the limit, and no shrink may bring it under them", s.count(Grow, true))
	}
	if s.cur.CPULimitMillis < 460 {
		t.Errorf("limit %dm, want at least the bursts' 400m plus the margin", s.cur.CPULimitMillis)
	}
	held := false
	for _, d := range ds {
		held = held || d.CPU.Reason.Why == WhyRecentPeak
	}
	if !held {
		t.Error("no shrink was held as RecentPeak")
	}
	if s.cur.CPULimitMillis >= 600 {
		t.Errorf("limit %dm: never shrank at all", s.cur.CPULimitMillis)
	}
}

// TestGrowWaitsWithoutStarvation: a load that rises under a limit it does
// not reach is grown for by the baseline only after a CPU half-life at the
// new level; a rise that ends within it is not grown for at all. Starvation still grows at once
// (TestLoadStepUp).
func TestGrowWaitsWithoutStarvation(t *testing.T) {
	cfg := DefaultConfig()
	s := newSim(t, cfg, Resources{CPURequestMillis: 100, CPULimitMillis: 400, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
	// 80m for 20 minutes, then 200m for 2 minutes, back, then 200m for
	// good.
	s.cpu = func(sec int) float64 {
		switch {
		case sec >= 1200 && sec < 1320, sec >= 2400:
			return 200
		}
		return 80
	}
	ds := s.run(0, 2400)
	for _, r := range s.resizes {
		if r.d.CPU.Action == Grow {
			t.Errorf("t=%ds: %v: grew for a 2-minute rise that never starved", r.sec, r.d.CPU)
		}
	}
	waited := false
	for _, d := range ds[1200:1320] {
		waited = waited || d.CPU.Reason.Why == WhyGrowWaiting
	}
	if !waited {
		t.Error("the 2-minute rise was not held as GrowWaiting")
	}
	s.resizes = nil
	ds = s.run(2400, 3600)
	if len(s.resizes) == 0 || s.resizes[0].d.CPU.Action != Grow {
		t.Fatalf("resizes after the lasting rise: %v, want a grow", s.resizes)
	}
	g := s.resizes[0]
	waitFrom := -1
	for i, d := range ds {
		if d.CPU.Reason.Why == WhyGrowWaiting {
			waitFrom = 2400 + i
			break
		}
	}
	if waitFrom < 0 {
		t.Fatal("the lasting rise was never held as GrowWaiting")
	}
	if waited := time.Duration(g.sec-waitFrom) * time.Second; waited < cfg.CPUHalfLife {
		t.Errorf("grew %v after the target left the band, within the %v half-life", waited, cfg.CPUHalfLife)
	}
	if g.d.CPU.Request < 200 || g.d.CPU.Request > 300 {
		t.Errorf("grew to %dm, want the 200m load plus the margin", g.d.CPU.Request)
	}
	for sec := 2400; sec < 3600; sec++ {
		if s.throttle[sec] > 0 {
			t.Fatalf("t=%ds throttled %.2f: the wait must not starve", sec, s.throttle[sec])
		}
	}
}

// TestFirstSizingDoesNotWait: a container whose request is below its load
// from the start is grown as soon as the warm-up is over: the wait is for
// a change of load, not for sizing a container snug has just met.
func TestFirstSizingDoesNotWait(t *testing.T) {
	cfg := DefaultConfig()
	s := newSim(t, cfg, Resources{CPURequestMillis: 50, CPULimitMillis: 1000, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
	s.cpu = func(int) float64 { return 200 }
	s.run(0, 120)
	if len(s.resizes) == 0 || s.resizes[0].d.CPU.Action != Grow {
		t.Fatalf("resizes %v, want a grow", s.resizes)
	}
	if at := s.resizes[0].sec; at > cfg.WarmupSamples+5 {
		t.Errorf("grew at %ds, want right after the %d-sample warm-up", at, cfg.WarmupSamples)
	}
}

// TestGrowWaitSurvivesAnUnsentGrow: a grow decided after the wait but not
// sent (the planner found no room) is decided again on the next sample,
// not after another wait.
func TestGrowWaitSurvivesAnUnsentGrow(t *testing.T) {
	cfg := DefaultConfig()
	s := newSim(t, cfg, Resources{CPURequestMillis: 100, CPULimitMillis: 400, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
	s.cpu = step(1200, 80, 200)
	s.run(0, 1200)
	if len(s.resizes) != 0 {
		t.Fatalf("resized before the rise: %v", s.resizes)
	}
	var first int
	for sec := 1200; sec < 2400; sec++ {
		now := t0.Add(time.Duration(sec) * time.Second)
		d := s.c.Observe(now, s.signals(sec), s.cur)
		if d.CPU.Action != Grow {
			continue
		}
		if first == 0 {
			first = sec
			continue // not sent
		}
		if sec != first+1 {
			t.Errorf("grow decided at %ds, unsent, and again at %ds; want the next second", first, sec)
		}
		return
	}
	t.Fatalf("no grow decided twice (first at %ds)", first)
}

// TestFlappingLoadSettles: TestFlappingLoadIsBounded's load (400m and 50m,
// three minutes each, lab-short half-life and window) with the regrow
// floor: once the request has grown back after a shrink, shrinks stop
// there, and the load stops being resized and starving.
func TestFlappingLoadSettles(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUHalfLife, cfg.ShrinkWindow = 10*time.Second, 30*time.Second
	s := newSim(t, cfg, Resources{CPURequestMillis: 500, CPULimitMillis: 500, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
	s.cpu = func(sec int) float64 {
		if (sec/180)%2 == 0 {
			return 400
		}
		return 50
	}
	ds := s.run(0, 3*3600)
	late := 0
	for _, r := range s.resizes {
		t.Logf("t=%ds %v", r.sec, r.d.CPU)
		if r.sec >= 3600 {
			late++
		}
	}
	if late != 0 {
		t.Errorf("%d resizes after the first hour, want none once the request has grown back", late)
	}
	if r := s.cur.CPURequestMillis; r > 600 {
		t.Errorf("request %dm, want the 400m phases plus the margin (460m), not the fast path's overshoot", r)
	}
	for sec := 3600; sec < 3*3600; sec++ {
		if s.throttle[sec] >= 0.25 {
			t.Fatalf("t=%ds: starved (throttled %.2f) after the first hour", sec, s.throttle[sec])
		}
	}
	if d := ds[len(ds)-1]; d.CPU.Reason.Why != WhyRegrown && d.CPU.Reason.Why != WhyInBand {
		t.Errorf("last decision %s, want Regrown or InBand", d.CPU.Reason)
	}
}

// TestLongTroughIsGivenBack: a load of 400m for an hour and 50m for two,
// repeated. Its troughs are longer than MinTrough: a phase, not noise in
// one, so each is given back (the regrow floor does not hold it), and the
// request comes back down in the second trough as in the first.
func TestLongTroughIsGivenBack(t *testing.T) {
	cfg := DefaultConfig()
	s := newSim(t, cfg, Resources{CPURequestMillis: 500, CPULimitMillis: 1000, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
	s.cpu = func(sec int) float64 {
		if (sec/3600)%3 == 0 {
			return 400
		}
		return 50
	}
	s.run(0, 3*3600)
	first := s.cur.CPURequestMillis
	s.run(3*3600, 6*3600)
	second := s.cur.CPURequestMillis
	for _, r := range s.resizes {
		t.Logf("t=%ds %v", r.sec, r.d.CPU)
	}
	if first > 120 || second > 120 {
		t.Errorf("requests at the ends of the troughs %dm and %dm, want both down near the 50m load", first, second)
	}
	if !s.c.cpu.regrownAt.IsZero() && s.c.regrowHolds(t0.Add(6*time.Hour), &s.c.cpu) {
		t.Errorf("the regrow floor holds after a %v trough", s.c.cpu.trough)
	}
}

// TestSteppedTroughCountsFromTheFirstShrink: 400m for an hour and 50m for
// 90 minutes, repeated. The request comes down in halvings, the first
// about 22 minutes into the trough and the last about 10 minutes after;
// the trough the regrow floor judges runs from the first, about 68
// minutes, longer than MinTrough: it is given back again.
func TestSteppedTroughCountsFromTheFirstShrink(t *testing.T) {
	cfg := DefaultConfig()
	s := newSim(t, cfg, Resources{CPURequestMillis: 500, CPULimitMillis: 1000, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
	period := 3600 + 5400
	s.cpu = func(sec int) float64 {
		if sec%period < 3600 {
			return 400
		}
		return 50
	}
	s.run(0, period)
	first := s.cur.CPURequestMillis
	s.run(period, 2*period)
	second := s.cur.CPURequestMillis
	for _, r := range s.resizes {
		t.Logf("t=%ds %v", r.sec, r.d.CPU)
	}
	if first > 120 || second > 120 {
		t.Errorf("requests at the ends of the troughs %dm and %dm, want both down near the 50m load (trough %v)", first, second, s.c.cpu.trough)
	}
	if tr := s.c.cpu.trough; tr < cfg.MinTrough {
		t.Errorf("trough %v, want it counted from the first shrink, over %v", tr, cfg.MinTrough)
	}
}

// TestGrowWaitSurvivesADeferral: a grow decided after the wait that the
// planner finds no room for is fed back as Deferred with the current
// request as the cap, which holds the target in the band. When the cap
// expires the grow is decided again at once, not after another wait.
func TestGrowWaitSurvivesADeferral(t *testing.T) {
	cfg := DefaultConfig()
	s := newSim(t, cfg, Resources{CPURequestMillis: 100, CPULimitMillis: 400, MemRequestBytes: 80 << 20, MemLimitBytes: 80 << 20})
	s.cpu = step(1200, 80, 200)
	s.run(0, 1200)
	deferredAt := 0
	for sec := 1200; sec < 3600; sec++ {
		now := t0.Add(time.Duration(sec) * time.Second)
		d := s.c.Observe(now, s.signals(sec), s.cur)
		if d.CPU.Action != Grow {
			continue
		}
		if deferredAt == 0 {
			deferredAt = sec
			s.pod.Feedback(now, Feedback{Outcome: resize.Deferred, Caps: []Cap{{Container: "app", CPUMillis: s.cur.CPURequestMillis, MemBytes: s.cur.MemRequestBytes}}})
			continue
		}
		if late := time.Duration(sec-deferredAt)*time.Second - cfg.DeferredCapTTL; late > 5*time.Second {
			t.Errorf("grow decided at %ds, deferred, and again at %ds: %v after the cap expired, want at once", deferredAt, sec, late)
		}
		return
	}
	t.Fatalf("no grow decided twice (first at %ds)", deferredAt)
}

// TestTiedMemoryHoldsTheDaysPeak: a Guaranteed container (limits equal to
// requests) holds 300Mi for the first half hour of every 12 hours and 100Mi
// otherwise. Its memory is not shrunk in its first day (the day's peak is
// not known yet), then only down to the day's peak plus headroom: a shrink
// lowers the limit with the request, and the next half hour at 300Mi would
// be an OOM kill. A Burstable one (no cpu limit), whose memory limit the
// planner keeps, gives the request back in the troughs.
func TestTiedMemoryHoldsTheDaysPeak(t *testing.T) {
	ws := func(sec int) float64 {
		if sec%(12*3600) < 1800 {
			return 300 << 20
		}
		return 100 << 20
	}
	tied := newSim(t, DefaultConfig(), Resources{CPURequestMillis: 200, CPULimitMillis: 200, MemRequestBytes: 512 << 20, MemLimitBytes: 512 << 20})
	tied.cpu = func(int) float64 { return 100 }
	tied.ws = ws
	ds := tied.run(0, 23*3600)
	if r := tied.cur.MemRequestBytes; r != 512<<20 {
		t.Errorf("tied: memory request %d MiB within the first day, want the first 512Mi", r>>20)
	}
	ds = append(ds, tied.run(23*3600, 50*3600)...)
	if len(tied.ooms) != 0 {
		t.Errorf("tied: OOM kills at %v s, want none", tied.ooms)
	}
	held := false
	for _, d := range ds {
		held = held || d.Memory.Reason.Why == WhyTiedLimit
	}
	if !held {
		t.Error("tied: no memory shrink was held as TiedLimit")
	}
	if r, want := tied.cur.MemRequestBytes, int64(300<<20)*6/5; r < want || r >= 512<<20 {
		t.Errorf("tied: memory request %d MiB, want the day's 300Mi peak plus 20%% headroom (%d MiB) or a little more, under the first 512Mi", r>>20, want>>20)
	}

	burst := newSim(t, DefaultConfig(), Resources{CPURequestMillis: 200, MemRequestBytes: 512 << 20, MemLimitBytes: 512 << 20})
	burst.cpu = func(int) float64 { return 100 }
	burst.ws = ws
	burst.run(0, 11*3600)
	if r := burst.cur.MemRequestBytes; r >= 300<<20 {
		t.Errorf("burstable: memory request %d MiB after ten hours at 100Mi, want it given back under 300Mi", r>>20)
	}
}
