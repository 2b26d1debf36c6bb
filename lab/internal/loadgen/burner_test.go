package loadgen

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDutyPlan(t *testing.T) {
	const q = 10 * time.Millisecond
	ms, us := time.Millisecond, time.Microsecond
	tests := []struct {
		millis  int64
		quantum time.Duration
		want    []duty
	}{
		{0, q, nil},
		{-5, q, nil},
		{100, 0, nil},
		{1, q, []duty{{ms, time.Second}}}, // a tiny share: 1 ms a second
		{10, q, []duty{{q, time.Second}}},
		{100, q, []duty{{q, 100 * ms}}},
		{300, q, []duty{{q, 33333333}}},
		{500, q, []duty{{q, 20 * ms}}},
		{1000, q, []duty{{q, q}}},
		{1001, q, []duty{{q, 19960079}, {q, 20 * ms}}}, // 501m and 500m
		{1500, q, []duty{{q, 13333333}, {q, 13333333}}},
		{2000, q, []duty{{q, q}, {q, q}}},
		{2500, 5 * ms, []duty{{5 * ms, 5995203}, {5 * ms, 6002400}, {5 * ms, 6002400}}}, // 834m, 833m, 833m
		{7, 100 * us, []duty{{100 * us, 14285714}}},
	}
	for _, tt := range tests {
		got := dutyPlan(tt.millis, tt.quantum)
		if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(duty{})); d != "" {
			t.Errorf("dutyPlan(%d, %v) (-want +got):\n%s", tt.millis, tt.quantum, d)
		}
	}
}

// TestDutyPlanInvariants checks, for every target up to 4 cores, that the
// workers are as few as possible, none is busy longer than its period or
// sleeps past maxPeriod, and their duty cycles add up to the target.
func TestDutyPlanInvariants(t *testing.T) {
	for _, q := range []time.Duration{DefaultQuantum, 7 * time.Millisecond, 100 * time.Millisecond} {
		for m := int64(1); m <= 4000; m++ {
			plan := dutyPlan(m, q)
			if want := int((m + 999) / 1000); len(plan) != want {
				t.Fatalf("dutyPlan(%d): %d workers, want %d", m, len(plan), want)
			}
			var cores float64
			for _, d := range plan {
				if d.busy <= 0 || d.busy > q || d.busy > d.period || d.period > maxPeriod {
					t.Fatalf("dutyPlan(%d, %v): %+v", m, q, d)
				}
				cores += float64(d.busy) / float64(d.period)
			}
			// Periods are rounded down to the nanosecond: a relative
			// error far below anything measurable.
			if want := float64(m) / 1000; cores < want*(1-1e-6) || cores > want*(1+1e-6) {
				t.Fatalf("dutyPlan(%d, %v) burns %.9f cores, want %.3f", m, q, cores, want)
			}
		}
	}
}

func TestBurnerSetMillis(t *testing.T) {
	b := &Burner{Quantum: time.Millisecond}
	b.SetMillis(1)
	if b.Millis() != 1 {
		t.Errorf("Millis() = %d, want 1", b.Millis())
	}
	b.SetMillis(1001) // two workers at half a period each
	if got := b.running.Load(); got != 2 {
		t.Errorf("%d workers running, want 2", got)
	}
	b.SetMillis(0)
	if got := b.running.Load(); got != 0 {
		t.Errorf("%d workers still running after SetMillis(0)", got)
	}
	if b.Millis() != 0 {
		t.Errorf("Millis() = %d, want 0", b.Millis())
	}
}

func TestThreadCPU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, ok := threadCPU()
	if !ok {
		t.Skip("no thread CPU clock")
	}
	spin(2*time.Millisecond, time.Now().Add(time.Second))
	c1, _ := threadCPU()
	if c1-c0 < 2*time.Millisecond {
		t.Errorf("thread CPU advanced %v after a 2ms spin", c1-c0)
	}
}

// BenchmarkBurner measures the process's real CPU use while burning 300m
// and 1500m for a second each, and reports it as a share of the target. On
// an otherwise idle 2-core lab VM: 300m 104-106 (wake-ups, the first
// quantum and the benchmark itself), 1500m 100-101.
func BenchmarkBurner(b *testing.B) {
	for _, millis := range []int64{300, 1500} {
		b.Run(FormatCPU(millis), func(b *testing.B) {
			for b.Loop() {
				var bu Burner
				r0 := rusage(b)
				w0 := time.Now()
				bu.SetMillis(millis)
				time.Sleep(time.Second)
				bu.SetMillis(0)
				cpu := rusage(b) - r0
				wall := time.Since(w0)
				b.ReportMetric(100*float64(cpu)/(float64(wall)*float64(millis)/1000), "%target")
			}
		})
	}
}

func rusage(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
