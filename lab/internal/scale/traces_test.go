package scale

import (
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/lab/internal/quality/trace"
)

// series is n seconds of v.
func series(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func testTraces() []*trace.Trace {
	const day = 86400
	// Container a: 200m for its first two days, 800m for its third.
	a := trace.Container{Name: "a", CPURequestMillis: 500, MemRequestBytes: 1 << 30, MemLimitBytes: 2 << 30,
		CPUMillis: append(series(2*day, 200), series(day, 800)...), MemBytes: series(3*day, 512<<20)}
	// Container b: shorter than a day of history, no resources written.
	b := trace.Container{Name: "b", CPUMillis: series(3600, 50), MemBytes: series(3600, 64<<20)}
	return []*trace.Trace{
		{Name: "job1", Seconds: 3 * day, Pods: []trace.Pod{{Name: "t0", Containers: []trace.Container{a}}}},
		{Name: "job2", Seconds: 3600, Pods: []trace.Pod{{Name: "t0", Containers: []trace.Container{b}}}},
	}
}

// TestTracePlan: workloads take the traces' containers in turn, each from
// an offset that leaves its history inside the trace when the trace is
// long enough; the same seed gives the same plan.
func TestTracePlan(t *testing.T) {
	p, err := newTracePlan(testTraces(), 6, 24*time.Hour, 1)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := newTracePlan(testTraces(), 6, 24*time.Hour, 1)
	for g := range 6 {
		c := p.container(g)
		if want := []string{"a", "b"}[g%2]; c.Name != want {
			t.Errorf("workload %d plays %s, want %s", g, c.Name, want)
		}
		off := p.offsets[g]
		if off < 0 || off >= len(c.CPUMillis) || (c.Name == "a" && off < 86400) {
			t.Errorf("workload %d (%s): offset %d, want in [a day, %d) for a, in the trace for b", g, c.Name, off, len(c.CPUMillis))
		}
		if q.offsets[g] != off {
			t.Errorf("workload %d: offset %d, then %d with the same seed", g, off, q.offsets[g])
		}
	}
	if _, err := newTracePlan(nil, 1, 0, 1); err == nil {
		t.Error("a plan without traces: no error")
	}
}

// TestTracePlanResources: the trace's starting resources, defaults where
// it writes no request, no limit where it writes none.
func TestTracePlanResources(t *testing.T) {
	p, err := newTracePlan(testTraces(), 2, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	a := p.resources(0)
	if a.Requests.Cpu().MilliValue() != 500 || a.Requests.Memory().Value() != 1<<30 || a.Limits.Memory().Value() != 2<<30 {
		t.Errorf("a: %v", a)
	}
	if _, ok := a.Limits[corev1.ResourceCPU]; ok {
		t.Errorf("a has a cpu limit the trace does not write: %v", a.Limits)
	}
	b := p.resources(1)
	if b.Requests.Cpu().MilliValue() != 100 || b.Requests.Memory().Value() != 64<<20 || b.Limits != nil {
		t.Errorf("b: %v, want 100m and 64Mi requested, no limits", b)
	}
}

// TestTracePlanHistory: a workload's snapshot is its container's own day
// before the offset, as the agent would have observed it; the demand then
// plays on from the offset.
func TestTracePlanHistory(t *testing.T) {
	p, err := newTracePlan(testTraces()[:1], 1, 24*time.Hour, 1)
	if err != nil {
		t.Fatal(err)
	}
	// An offset whose day before is all 200m, then 800m from it.
	p.offsets[0] = 2 * 86400
	now := time.Now()
	v, err := p.history(0, 24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	agg := appAggregate(t, v)
	if agg.CPUSeconds != 86400 || agg.MemoryPeakBytes != 512<<20 {
		t.Errorf("cpu %v s, memory peak %v, want a day and 512Mi", agg.CPUSeconds, agg.MemoryPeakBytes)
	}
	if p95 := agg.CPU.Percentile(0.95); p95 < 180 || p95 > 230 {
		t.Errorf("history's cpu p95 %.0fm, want about 200m (the day before the offset, not the 800m after)", p95)
	}
	if c, _ := p.demand(0).At(0); c != 800 {
		t.Errorf("demand at the start %vm, want the offset's 800m", c)
	}
	if c, _ := p.demand(0).At(86400); c != 200 {
		t.Errorf("demand a day on %vm, want 200m (the trace wrapped to its start)", c)
	}
}

// TestGrown: with a CPU limit at the step, the step's grow raises the
// limit (the flat load's 100m/200m -> 122m/244m counts, though its request
// rose less than half); without one, the request half again above the one
// at the step; an unknown one never counts.
func TestGrown(t *testing.T) {
	for _, tc := range []struct {
		now, was cpuAt
		want     bool
	}{
		{cpuAt{122, 244}, cpuAt{100, 200}, true},
		{cpuAt{150, 200}, cpuAt{100, 200}, false},
		{cpuAt{150, 0}, cpuAt{100, 0}, false},
		{cpuAt{151, 0}, cpuAt{100, 0}, true},
		{cpuAt{400, 800}, cpuAt{}, false},
		{cpuAt{90, 0}, cpuAt{100, 0}, false},
	} {
		if got := grown(tc.now, tc.was); got != tc.want {
			t.Errorf("grown(%v, %v) = %v, want %v", tc.now, tc.was, got, tc.want)
		}
	}
}

// TestTracePlanGoogle: the real excerpt of Google cluster-data 2019 the
// replay's tests use (quality/trace/testdata) plans: every workload plays a
// task with its Borg request, from an offset inside the task, with a
// history the agent accepts.
func TestTracePlanGoogle(t *testing.T) {
	f, err := os.Open("../quality/trace/testdata/google2019.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	trs, err := trace.ReadGoogle(f, "g", trace.GoogleOptions{CPUMillis: 64000, MemBytes: 256 << 30, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := newTracePlan(trs, 4, time.Hour, 1)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for g := range 4 {
		c := p.container(g)
		if off := p.offsets[g]; off < 0 || off >= len(c.CPUMillis) {
			t.Errorf("workload %d: offset %d outside its %d s", g, off, len(c.CPUMillis))
		}
		if rr := p.resources(g); rr.Requests.Cpu().MilliValue() != max(c.CPURequestMillis, 100) {
			t.Errorf("workload %d: cpu request %v, want the trace's %dm", g, rr.Requests.Cpu(), c.CPURequestMillis)
		}
		v, err := p.history(g, time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		if v == "" {
			continue // an offset at the task's start: no history before it
		}
		appAggregate(t, v)
	}
}
