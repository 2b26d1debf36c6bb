package cgroup

import "time"

// Signals is what two consecutive Samples of one cgroup say about it. Rate
// fields cover the interval between the samples. Level fields (working set,
// headroom, PSI averages) describe the later sample and are filled in even
// when HasRate is false.
type Signals struct {
	// Time is the later sample's time.
	Time time.Time
	// HasRate is false when no rate could be computed: there is no earlier
	// sample, time did not move forward, the version changed, or a
	// cumulative counter went down (the cgroup was recreated). All rate
	// fields are then zero.
	HasRate bool
	// IntervalSeconds is the time between the two samples.
	IntervalSeconds float64

	// CPUUsageMillicores is the average CPU use over the interval.
	CPUUsageMillicores float64
	// CPUThrottledFraction is throttled periods over runnable periods in the
	// interval (0-1). It is 0 when the cgroup ran in no CFS period.
	CPUThrottledFraction float64
	// CPUThrottledSecondsPerSecond is the throttled time per wall-clock
	// second. It can exceed 1 for multi-threaded cgroups, because the kernel
	// sums throttled time over CPUs.
	CPUThrottledSecondsPerSecond float64
	// CPULimitMillicores is the later sample's CFS limit. It is 0 if
	// unlimited or unknown; see CPUUnlimited.
	CPULimitMillicores int64
	CPUUnlimited       bool

	// OOMKillsDelta is how many processes the OOM killer took during the
	// interval.
	OOMKillsDelta uint64
	// MemoryLimitHitsDelta is how many times usage reached the limit
	// during the interval.
	MemoryLimitHitsDelta uint64

	// MemoryWorkingSetBytes is the later sample's working set.
	MemoryWorkingSetBytes uint64
	// MemoryLimited is false when the memory limit is unlimited. The two
	// headroom fields are then zero.
	MemoryLimited bool
	// MemoryHeadroomBytes is the limit minus the working set, floored at 0.
	MemoryHeadroomBytes uint64
	// MemoryHeadroomFraction is MemoryHeadroomBytes over the limit (0-1).
	MemoryHeadroomFraction float64

	// PSIPresent is the later sample's PSI.Present. The pressure fields are
	// zero when it is false.
	PSIPresent                              bool
	CPUPressure, MemoryPressure, IOPressure PressureSignals
}

// PressureSignals condenses one PSI file.
type PressureSignals struct {
	// SomeAvg10Percent and FullAvg10Percent are the kernel's 10-second
	// averages from the later sample, in percent.
	SomeAvg10Percent, FullAvg10Percent float64
	// SomeStalledFraction and FullStalledFraction are the share of the
	// interval (0-1) spent stalled, from the PSI totals. At a 1 s interval
	// they react ten times faster than the 10 s averages. They are zero
	// without a rate.
	SomeStalledFraction, FullStalledFraction float64
}

// Rate derives Signals from two samples of the same cgroup, prev taken
// before cur. It never returns negative numbers. If a cumulative counter went
// down, the cgroup was recreated under the same path, and Rate returns the
// level signals of cur with HasRate false. Pass a zero prev for the first
// sample.
func Rate(prev, cur Sample) Signals {
	s := Signals{
		Time:                  cur.Time,
		MemoryWorkingSetBytes: cur.MemoryWorkingSetBytes,
		CPUUnlimited:          cur.CPULimit.Unlimited,
		CPULimitMillicores:    cur.CPULimit.Millicores(),
		PSIPresent:            cur.PSI.Present,
	}
	if !cur.MemoryLimit.Unlimited && cur.MemoryLimit.Bytes > 0 {
		s.MemoryLimited = true
		if cur.MemoryWorkingSetBytes < cur.MemoryLimit.Bytes {
			s.MemoryHeadroomBytes = cur.MemoryLimit.Bytes - cur.MemoryWorkingSetBytes
		}
		s.MemoryHeadroomFraction = float64(s.MemoryHeadroomBytes) / float64(cur.MemoryLimit.Bytes)
	}
	if cur.PSI.Present {
		s.CPUPressure = pressureLevels(cur.PSI.CPU)
		s.MemoryPressure = pressureLevels(cur.PSI.Memory)
		s.IOPressure = pressureLevels(cur.PSI.IO)
	}

	dt := cur.Time.Sub(prev.Time).Seconds()
	if prev.Time.IsZero() || dt <= 0 || prev.Version != cur.Version || counterReset(prev, cur) {
		return s
	}
	s.HasRate = true
	s.IntervalSeconds = dt
	s.CPUUsageMillicores = float64(cur.CPUUsageMicros-prev.CPUUsageMicros) / 1e3 / dt
	s.CPUThrottledSecondsPerSecond = float64(cur.CPUThrottledMicros-prev.CPUThrottledMicros) / 1e6 / dt
	if periods := cur.CPUPeriods - prev.CPUPeriods; periods > 0 {
		s.CPUThrottledFraction = fraction(float64(cur.CPUThrottledPeriods-prev.CPUThrottledPeriods) / float64(periods))
	}
	s.OOMKillsDelta = cur.OOMKills - prev.OOMKills
	s.MemoryLimitHitsDelta = cur.MemoryLimitHits - prev.MemoryLimitHits
	if cur.PSI.Present && prev.PSI.Present {
		stalled(&s.CPUPressure, prev.PSI.CPU, cur.PSI.CPU, dt)
		stalled(&s.MemoryPressure, prev.PSI.Memory, cur.PSI.Memory, dt)
		stalled(&s.IOPressure, prev.PSI.IO, cur.PSI.IO, dt)
	}
	return s
}

// counterReset reports whether any cumulative counter of cur is below prev.
func counterReset(prev, cur Sample) bool {
	if cur.CPUUsageMicros < prev.CPUUsageMicros ||
		cur.CPUPeriods < prev.CPUPeriods ||
		cur.CPUThrottledPeriods < prev.CPUThrottledPeriods ||
		cur.CPUThrottledMicros < prev.CPUThrottledMicros ||
		cur.OOMKills < prev.OOMKills ||
		cur.MemoryLimitHits < prev.MemoryLimitHits {
		return true
	}
	if !prev.PSI.Present || !cur.PSI.Present {
		return false
	}
	for _, pair := range [...][2]Pressure{
		{prev.PSI.CPU, cur.PSI.CPU},
		{prev.PSI.Memory, cur.PSI.Memory},
		{prev.PSI.IO, cur.PSI.IO},
	} {
		if pair[1].Some.TotalMicros < pair[0].Some.TotalMicros ||
			pair[1].Full.TotalMicros < pair[0].Full.TotalMicros {
			return true
		}
	}
	return false
}

func pressureLevels(p Pressure) PressureSignals {
	ps := PressureSignals{SomeAvg10Percent: p.Some.Avg10Percent}
	if p.HasFull {
		ps.FullAvg10Percent = p.Full.Avg10Percent
	}
	return ps
}

func stalled(dst *PressureSignals, prev, cur Pressure, dt float64) {
	dst.SomeStalledFraction = fraction(float64(cur.Some.TotalMicros-prev.Some.TotalMicros) / 1e6 / dt)
	if prev.HasFull && cur.HasFull {
		dst.FullStalledFraction = fraction(float64(cur.Full.TotalMicros-prev.Full.TotalMicros) / 1e6 / dt)
	}
}

// fraction clamps to [0, 1]. Counters sampled a few microseconds apart can
// overshoot 1 slightly.
func fraction(f float64) float64 {
	switch {
	case f < 0:
		return 0
	case f > 1:
		return 1
	default:
		return f
	}
}
