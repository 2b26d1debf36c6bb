package cgroup

import (
	"math"
	"time"
)

// Version is the cgroup interface version a Path or Sample was read through.
type Version uint8

const (
	// V1 is the legacy per-controller hierarchy (also used for cpu and
	// memory on hybrid hosts).
	V1 Version = 1
	// V2 is the unified hierarchy.
	V2 Version = 2
)

func (v Version) String() string {
	switch v {
	case V1:
		return "v1"
	case V2:
		return "v2"
	default:
		return "unknown"
	}
}

// CPULimit is a CFS bandwidth limit: v2 cpu.max, or v1 cpu.cfs_quota_us and
// cpu.cfs_period_us. The zero value means "no limit known". Read fills in
// PeriodMicros even when Unlimited is true.
type CPULimit struct {
	// Unlimited is true for "max" (v2) or a quota of -1 (v1).
	Unlimited bool
	// QuotaMicros is the CPU time allowed per period. It is 0 when Unlimited.
	QuotaMicros uint64
	// PeriodMicros is the CFS period. The kubelet uses 100000 unless the
	// node sets cpuCFSQuotaPeriod.
	PeriodMicros uint64
}

// Millicores returns the limit in millicores, rounded to the nearest
// millicore. It returns 0 when the limit is unlimited or unknown, so check
// Unlimited first.
func (l CPULimit) Millicores() int64 {
	if l.Unlimited || l.PeriodMicros == 0 {
		return 0
	}
	m := math.Round(float64(l.QuotaMicros) * 1000 / float64(l.PeriodMicros))
	if m >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(m)
}

// MemoryLimit is a hard memory limit: v2 memory.max or v1
// memory.limit_in_bytes. The zero value is a limit of 0 bytes, so check
// Unlimited first.
type MemoryLimit struct {
	// Unlimited is true for "max" (v2) or for v1's page-counter maximum
	// (9223372036854771712 with 4 KiB pages).
	Unlimited bool
	// Bytes is the limit. It is 0 when Unlimited.
	Bytes uint64
}

// PressureLine is one line of a PSI file such as cpu.pressure.
type PressureLine struct {
	// Avg10Percent, Avg60Percent and Avg300Percent are the share of wall
	// time, in percent (0-100), spent stalled over the last 10, 60 and 300
	// seconds.
	Avg10Percent, Avg60Percent, Avg300Percent float64
	// TotalMicros is the cumulative stall time.
	TotalMicros uint64
}

// Pressure is one PSI file: cpu.pressure, memory.pressure or io.pressure.
type Pressure struct {
	// Some is the time during which at least one task was stalled.
	Some PressureLine
	// Full is the time during which all non-idle tasks were stalled. It is
	// only meaningful if HasFull is true. Kernels before 5.13 print no
	// "full" line in cpu.pressure.
	Full    PressureLine
	HasFull bool
}

// PSI holds the pressure stall information of a cgroup.
type PSI struct {
	// Present is false when the cgroup has no PSI files: on pure v1, on a
	// hybrid host whose unified mount does not hold the container, or on a
	// kernel built without CONFIG_PSI.
	Present bool
	// CPU, Memory and IO each come from their own PSI file. When Present is
	// true, the CPU figures are always read. The Memory and IO figures are
	// zero if their file is missing.
	CPU, Memory, IO Pressure
}

// Sample is one reading of a container or pod cgroup. It has the same
// meaning on v1 and v2. Cumulative counters only grow while the cgroup
// exists. Fields a version does not report are zero, and that is noted on
// each field. The zero value is an empty reading with no Version.
type Sample struct {
	// Time is when the caller took the reading. Read does not look at the
	// clock.
	Time time.Time
	// Version is the interface the counters came from.
	Version Version

	// CPUUsageMicros is cumulative CPU time (v2 usage_usec, v1
	// cpuacct.usage divided by 1000).
	CPUUsageMicros uint64
	// CPUPeriods is the cumulative number of CFS periods in which the cgroup
	// was runnable (nr_periods).
	CPUPeriods uint64
	// CPUThrottledPeriods is the cumulative number of those periods in which
	// the quota ran out (nr_throttled).
	CPUThrottledPeriods uint64
	// CPUThrottledMicros is cumulative throttled time (v2 throttled_usec,
	// v1 throttled_time divided by 1000).
	CPUThrottledMicros uint64
	// CPULimit is the CFS quota and period.
	CPULimit CPULimit
	// CPUShares is v1 cpu.shares. It is 0 on v2.
	CPUShares uint64
	// CPUWeight is v2 cpu.weight (1-10000, or 0 for SCHED_IDLE groups). It
	// is 0 on v1 or when the cpu controller is off. It is not converted to
	// shares, because runtimes map shares to weight by different formulas.
	CPUWeight uint64

	// MemoryUsageBytes is v2 memory.current or v1 memory.usage_in_bytes.
	MemoryUsageBytes uint64
	// MemoryWorkingSetBytes is usage minus inactive file pages, floored at
	// 0, the same way the kubelet computes it. This is the number the
	// kubelet compares with the limit when it evicts a pod.
	MemoryWorkingSetBytes uint64
	// MemoryInactiveFileBytes is v2 inactive_file or v1 total_inactive_file.
	MemoryInactiveFileBytes uint64
	// MemoryAnonBytes is v2 anon or v1 total_rss.
	MemoryAnonBytes uint64
	// MemoryFileBytes is v2 file or v1 total_cache (page cache, including
	// tmpfs).
	MemoryFileBytes uint64
	// MemoryLimit is v2 memory.max or v1 memory.limit_in_bytes.
	MemoryLimit MemoryLimit
	// MemoryPeakBytes is v2 memory.peak (kernel 5.19 and later, otherwise
	// 0) or v1 memory.max_usage_in_bytes.
	MemoryPeakBytes uint64
	// MemoryLimitHits is cumulative: how many times usage reached the limit
	// and forced reclaim (v2 memory.events max, v1 memory.failcnt).
	MemoryLimitHits uint64
	// OOMKills is the cumulative number of processes the OOM killer took
	// from this cgroup (v2 memory.events oom_kill, v1 memory.oom_control
	// oom_kill since kernel 4.13).
	OOMKills uint64

	// PSI is pressure stall information. It is v2 only, except on hybrid
	// hosts where the runtime also placed the container in the unified
	// mount.
	PSI PSI
}

// workingSetBytes is the kubelet's (cadvisor's) working set: usage minus
// inactive file pages, which the kernel can drop without stalling the
// workload.
func workingSetBytes(usageBytes, inactiveFileBytes uint64) uint64 {
	if inactiveFileBytes >= usageBytes {
		return 0
	}
	return usageBytes - inactiveFileBytes
}
