package cgroup

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sampleAt builds a v2 sample for Rate tests.
func sampleAt(sec float64, mod func(*Sample)) Sample {
	s := Sample{
		Time:                  t0.Add(time.Duration(sec * float64(time.Second))),
		Version:               V2,
		CPULimit:              CPULimit{QuotaMicros: 50000, PeriodMicros: 100000},
		MemoryUsageBytes:      300 << 20,
		MemoryWorkingSetBytes: 192 << 20,
		MemoryLimit:           MemoryLimit{Bytes: 256 << 20},
	}
	if mod != nil {
		mod(&s)
	}
	return s
}

func TestRate(t *testing.T) {
	busy := func(s *Sample) {
		s.CPUUsageMicros = 10_000_000
		s.CPUPeriods = 1000
		s.CPUThrottledPeriods = 100
		s.CPUThrottledMicros = 2_000_000
		s.OOMKills = 1
		s.MemoryLimitHits = 7
		s.PSI = PSI{Present: true,
			CPU:    Pressure{Some: PressureLine{Avg10Percent: 20, TotalMicros: 5_000_000}, Full: PressureLine{Avg10Percent: 15, TotalMicros: 4_000_000}, HasFull: true},
			Memory: Pressure{Some: PressureLine{TotalMicros: 100}, HasFull: true},
			IO:     Pressure{Some: PressureLine{Avg10Percent: 1.5, TotalMicros: 10}},
		}
	}
	// One second later: 480m used, 8 of 10 periods throttled for 0.3 s,
	// one more OOM kill, CPU stalled 60% (some) and 50% (full).
	later := func(s *Sample) {
		busy(s)
		s.CPUUsageMicros += 480_000
		s.CPUPeriods += 10
		s.CPUThrottledPeriods += 8
		s.CPUThrottledMicros += 300_000
		s.OOMKills++
		s.PSI.CPU.Some.TotalMicros += 600_000
		s.PSI.CPU.Full.TotalMicros += 500_000
		s.PSI.CPU.Some.Avg10Percent = 25
		s.PSI.Memory.Some.TotalMicros += 2_000_000 // more than the interval: clamped
	}
	levels := Signals{
		Time:                   t0.Add(time.Second),
		CPULimitMillicores:     500,
		MemoryWorkingSetBytes:  192 << 20,
		MemoryLimited:          true,
		MemoryHeadroomBytes:    64 << 20,
		MemoryHeadroomFraction: 0.25,
	}
	for _, tc := range []struct {
		name      string
		prev, cur Sample
		want      Signals
	}{
		{
			name: "steady interval",
			prev: sampleAt(0, busy), cur: sampleAt(1, later),
			want: func() Signals {
				s := levels
				s.HasRate = true
				s.IntervalSeconds = 1
				s.CPUUsageMillicores = 480
				s.CPUThrottledFraction = 0.8
				s.CPUThrottledSecondsPerSecond = 0.3
				s.OOMKillsDelta = 1
				s.PSIPresent = true
				s.CPUPressure = PressureSignals{SomeAvg10Percent: 25, FullAvg10Percent: 15, SomeStalledFraction: 0.6, FullStalledFraction: 0.5}
				s.MemoryPressure = PressureSignals{SomeStalledFraction: 1}
				s.IOPressure = PressureSignals{SomeAvg10Percent: 1.5}
				return s
			}(),
		},
		{
			name: "half second interval",
			prev: sampleAt(0, busy),
			cur: sampleAt(0.5, func(s *Sample) {
				busy(s)
				s.CPUUsageMicros += 250_000
				s.PSI = PSI{}
			}),
			want: func() Signals {
				s := levels
				s.Time = t0.Add(time.Second / 2)
				s.HasRate = true
				s.IntervalSeconds = 0.5
				s.CPUUsageMillicores = 500
				return s
			}(),
		},
		{
			name: "first sample",
			prev: Sample{}, cur: sampleAt(1, later),
			want: withPressureLevels(levels, 25),
		},
		{
			name: "counter reset after restart",
			prev: sampleAt(0, later), cur: sampleAt(1, busy),
			want: withPressureLevels(levels, 20),
		},
		{
			name: "psi total reset",
			prev: sampleAt(0, later),
			cur: sampleAt(1, func(s *Sample) {
				later(s)
				s.PSI.IO.Some.TotalMicros = 0
			}),
			want: withPressureLevels(levels, 25),
		},
		{
			name: "clock did not move",
			prev: sampleAt(1, busy), cur: sampleAt(1, later),
			want: withPressureLevels(levels, 25),
		},
		{
			name: "version changed",
			prev: sampleAt(0, func(s *Sample) { s.Version = V1 }), cur: sampleAt(1, nil),
			want: levels,
		},
		{
			name: "unlimited",
			prev: sampleAt(0, nil),
			cur: sampleAt(1, func(s *Sample) {
				s.CPULimit = CPULimit{Unlimited: true, PeriodMicros: 100000}
				s.MemoryLimit = MemoryLimit{Unlimited: true}
			}),
			want: Signals{
				Time: t0.Add(time.Second), HasRate: true, IntervalSeconds: 1,
				CPUUnlimited: true, MemoryWorkingSetBytes: 192 << 20,
			},
		},
		{
			name: "working set over the limit",
			prev: sampleAt(0, nil),
			cur:  sampleAt(1, func(s *Sample) { s.MemoryWorkingSetBytes = 300 << 20 }),
			want: Signals{
				Time: t0.Add(time.Second), HasRate: true, IntervalSeconds: 1,
				CPULimitMillicores: 500, MemoryWorkingSetBytes: 300 << 20, MemoryLimited: true,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Rate(tc.prev, tc.cur)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("Rate mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// withPressureLevels is levels plus the PSI level fields of TestRate's
// samples, whose CPU "some" 10 s average is cpuSomeAvg10.
func withPressureLevels(s Signals, cpuSomeAvg10 float64) Signals {
	s.PSIPresent = true
	s.CPUPressure = PressureSignals{SomeAvg10Percent: cpuSomeAvg10, FullAvg10Percent: 15}
	s.IOPressure = PressureSignals{SomeAvg10Percent: 1.5}
	return s
}

func TestWorkingSetBytes(t *testing.T) {
	for _, tc := range []struct{ usage, inactive, want uint64 }{
		{100, 30, 70},
		{100, 100, 0},
		{100, 130, 0}, // stats race: inactive_file read after usage fell
		{0, 0, 0},
	} {
		if got := workingSetBytes(tc.usage, tc.inactive); got != tc.want {
			t.Errorf("workingSetBytes(%d, %d) = %d, want %d", tc.usage, tc.inactive, got, tc.want)
		}
	}
}

func TestCPULimitMillicores(t *testing.T) {
	for _, tc := range []struct {
		l    CPULimit
		want int64
	}{
		{CPULimit{QuotaMicros: 25000, PeriodMicros: 100000}, 250},
		{CPULimit{QuotaMicros: 1000, PeriodMicros: 100000}, 10}, // kubelet's minimum quota
		{CPULimit{QuotaMicros: 1234, PeriodMicros: 100000}, 12},
		{CPULimit{QuotaMicros: 5000, PeriodMicros: 10000}, 500},
		{CPULimit{Unlimited: true, PeriodMicros: 100000}, 0},
		{CPULimit{}, 0},
		{CPULimit{QuotaMicros: math.MaxUint64, PeriodMicros: 1}, math.MaxInt64},
	} {
		if got := tc.l.Millicores(); got != tc.want {
			t.Errorf("%+v.Millicores() = %d, want %d", tc.l, got, tc.want)
		}
	}
}
