package cgroup

import (
	"bytes"
	"io"
)

// v1UnlimitedBytes is the smallest memory.limit_in_bytes read as unlimited.
// v1 reports "no limit" as its page-counter maximum rounded down to a page
// (9223372036854771712 with 4 KiB pages, less with 16 or 64 KiB pages).
// Anything at or above 4 EiB is that value on some page size.
const v1UnlimitedBytes = 1 << 62

// ParseCPUAcctUsage parses cgroup v1 cpuacct.usage: cumulative CPU time in
// nanoseconds.
func ParseCPUAcctUsage(r io.Reader) (nanos uint64, err error) {
	b, err := readAll("cpuacct.usage", r)
	if err != nil {
		return 0, err
	}
	return parseSingleUint("cpuacct.usage", b)
}

// CPUStatV1 is cgroup v1 cpu.stat (the cpu controller's CFS statistics).
type CPUStatV1 struct {
	Periods          uint64 // nr_periods
	ThrottledPeriods uint64 // nr_throttled
	ThrottledNanos   uint64 // throttled_time
	Bursts           uint64 // nr_bursts
	BurstNanos       uint64 // burst_time
}

// ParseCPUStatV1 parses cgroup v1 cpu.stat.
func ParseCPUStatV1(r io.Reader) (CPUStatV1, error) {
	b, err := readAll("cpu.stat", r)
	if err != nil {
		return CPUStatV1{}, err
	}
	return parseCPUStatV1(b)
}

func parseCPUStatV1(b []byte) (CPUStatV1, error) {
	const file = "cpu.stat"
	var s CPUStatV1
	l := lines{rest: b}
	for {
		key, val, ok := l.next()
		if !ok {
			return s, nil
		}
		var dst *uint64
		switch string(key) {
		case "nr_periods":
			dst = &s.Periods
		case "nr_throttled":
			dst = &s.ThrottledPeriods
		case "throttled_time":
			dst = &s.ThrottledNanos
		case "nr_bursts":
			dst = &s.Bursts
		case "burst_time":
			dst = &s.BurstNanos
		default:
			continue
		}
		if err := uintField(file, key, val, dst); err != nil {
			return CPUStatV1{}, err
		}
	}
}

// ParseCFSQuota parses cgroup v1 cpu.cfs_quota_us. It returns the quota in
// microseconds, or unlimited=true for -1.
func ParseCFSQuota(r io.Reader) (quotaMicros uint64, unlimited bool, err error) {
	b, err := readAll("cpu.cfs_quota_us", r)
	if err != nil {
		return 0, false, err
	}
	return parseCFSQuota(b)
}

func parseCFSQuota(b []byte) (uint64, bool, error) {
	const file = "cpu.cfs_quota_us"
	if bytes.Equal(trimSpace(b), []byte("-1")) {
		return 0, true, nil
	}
	q, err := parseSingleUint(file, b)
	if err != nil {
		return 0, false, err
	}
	if q == 0 {
		return 0, false, newParseError(file, nil, trimSpace(b), errOutOfRange)
	}
	return q, false, nil
}

// ParseCFSPeriod parses cgroup v1 cpu.cfs_period_us (microseconds, never 0).
func ParseCFSPeriod(r io.Reader) (periodMicros uint64, err error) {
	b, err := readAll("cpu.cfs_period_us", r)
	if err != nil {
		return 0, err
	}
	return parseCFSPeriod(b)
}

func parseCFSPeriod(b []byte) (uint64, error) {
	const file = "cpu.cfs_period_us"
	p, err := parseSingleUint(file, b)
	if err != nil {
		return 0, err
	}
	if p == 0 {
		return 0, newParseError(file, nil, trimSpace(b), errOutOfRange)
	}
	return p, nil
}

// ParseCPUShares parses cgroup v1 cpu.shares.
func ParseCPUShares(r io.Reader) (shares uint64, err error) {
	b, err := readAll("cpu.shares", r)
	if err != nil {
		return 0, err
	}
	return parseSingleUint("cpu.shares", b)
}

// ParseMemoryUsageInBytes parses cgroup v1 memory.usage_in_bytes.
func ParseMemoryUsageInBytes(r io.Reader) (usageBytes uint64, err error) {
	b, err := readAll("memory.usage_in_bytes", r)
	if err != nil {
		return 0, err
	}
	return parseSingleUint("memory.usage_in_bytes", b)
}

// ParseMemoryMaxUsageInBytes parses cgroup v1 memory.max_usage_in_bytes, the
// peak usage.
func ParseMemoryMaxUsageInBytes(r io.Reader) (peakBytes uint64, err error) {
	b, err := readAll("memory.max_usage_in_bytes", r)
	if err != nil {
		return 0, err
	}
	return parseSingleUint("memory.max_usage_in_bytes", b)
}

// ParseMemoryFailcnt parses cgroup v1 memory.failcnt: how many times usage
// hit the limit.
func ParseMemoryFailcnt(r io.Reader) (count uint64, err error) {
	b, err := readAll("memory.failcnt", r)
	if err != nil {
		return 0, err
	}
	return parseSingleUint("memory.failcnt", b)
}

// ParseMemoryLimitInBytes parses cgroup v1 memory.limit_in_bytes. The
// page-counter maximum (9223372036854771712 with 4 KiB pages) reads as
// unlimited.
func ParseMemoryLimitInBytes(r io.Reader) (MemoryLimit, error) {
	b, err := readAll("memory.limit_in_bytes", r)
	if err != nil {
		return MemoryLimit{}, err
	}
	return parseMemoryLimitInBytes(b)
}

func parseMemoryLimitInBytes(b []byte) (MemoryLimit, error) {
	n, err := parseSingleUint("memory.limit_in_bytes", b)
	if err != nil {
		return MemoryLimit{}, err
	}
	return memoryLimitV1(n), nil
}

func memoryLimitV1(n uint64) MemoryLimit {
	if n >= v1UnlimitedBytes {
		return MemoryLimit{Unlimited: true}
	}
	return MemoryLimit{Bytes: n}
}

// MemoryStatV1 is the part of cgroup v1 memory.stat that snug uses. Keys
// without "total_" are local to the cgroup. Keys with it include
// descendants, and those are the ones cadvisor and the kubelet use. All
// amounts are bytes.
type MemoryStatV1 struct {
	CacheBytes                   uint64 // cache
	RSSBytes                     uint64 // rss
	RSSHugeBytes                 uint64 // rss_huge
	ShmemBytes                   uint64 // shmem
	MappedFileBytes              uint64 // mapped_file
	DirtyBytes                   uint64 // dirty
	WritebackBytes               uint64 // writeback
	SwapBytes                    uint64 // swap
	InactiveAnonBytes            uint64 // inactive_anon
	ActiveAnonBytes              uint64 // active_anon
	InactiveFileBytes            uint64 // inactive_file
	ActiveFileBytes              uint64 // active_file
	UnevictableBytes             uint64 // unevictable
	HierarchicalMemoryLimitBytes uint64 // hierarchical_memory_limit
	TotalCacheBytes              uint64 // total_cache
	TotalRSSBytes                uint64 // total_rss
	TotalShmemBytes              uint64 // total_shmem
	TotalMappedFileBytes         uint64 // total_mapped_file
	TotalSwapBytes               uint64 // total_swap
	TotalInactiveAnonBytes       uint64 // total_inactive_anon
	TotalActiveAnonBytes         uint64 // total_active_anon
	TotalInactiveFileBytes       uint64 // total_inactive_file
	TotalActiveFileBytes         uint64 // total_active_file
	TotalUnevictableBytes        uint64 // total_unevictable
	TotalPgMajFault              uint64 // total_pgmajfault
	TotalWorkingsetRefaultFile   uint64 // total_workingset_refault_file

	// HasTotalInactiveFile, HasTotalRSS and HasTotalCache tell whether the
	// kernel printed those keys, so a real 0 and a missing key differ.
	HasTotalInactiveFile, HasTotalRSS, HasTotalCache bool
}

// ParseMemoryStatV1 parses cgroup v1 memory.stat.
func ParseMemoryStatV1(r io.Reader) (MemoryStatV1, error) {
	b, err := readAll("memory.stat", r)
	if err != nil {
		return MemoryStatV1{}, err
	}
	return parseMemoryStatV1(b)
}

func parseMemoryStatV1(b []byte) (MemoryStatV1, error) {
	const file = "memory.stat"
	var s MemoryStatV1
	l := lines{rest: b}
	for {
		key, val, ok := l.next()
		if !ok {
			return s, nil
		}
		var dst *uint64
		switch string(key) {
		case "cache":
			dst = &s.CacheBytes
		case "rss":
			dst = &s.RSSBytes
		case "rss_huge":
			dst = &s.RSSHugeBytes
		case "shmem":
			dst = &s.ShmemBytes
		case "mapped_file":
			dst = &s.MappedFileBytes
		case "dirty":
			dst = &s.DirtyBytes
		case "writeback":
			dst = &s.WritebackBytes
		case "swap":
			dst = &s.SwapBytes
		case "inactive_anon":
			dst = &s.InactiveAnonBytes
		case "active_anon":
			dst = &s.ActiveAnonBytes
		case "inactive_file":
			dst = &s.InactiveFileBytes
		case "active_file":
			dst = &s.ActiveFileBytes
		case "unevictable":
			dst = &s.UnevictableBytes
		case "hierarchical_memory_limit":
			dst = &s.HierarchicalMemoryLimitBytes
		case "total_cache":
			dst = &s.TotalCacheBytes
			s.HasTotalCache = true
		case "total_rss":
			dst = &s.TotalRSSBytes
			s.HasTotalRSS = true
		case "total_shmem":
			dst = &s.TotalShmemBytes
		case "total_mapped_file":
			dst = &s.TotalMappedFileBytes
		case "total_swap":
			dst = &s.TotalSwapBytes
		case "total_inactive_anon":
			dst = &s.TotalInactiveAnonBytes
		case "total_active_anon":
			dst = &s.TotalActiveAnonBytes
		case "total_inactive_file":
			dst = &s.TotalInactiveFileBytes
			s.HasTotalInactiveFile = true
		case "total_active_file":
			dst = &s.TotalActiveFileBytes
		case "total_unevictable":
			dst = &s.TotalUnevictableBytes
		case "total_pgmajfault":
			dst = &s.TotalPgMajFault
		case "total_workingset_refault_file":
			dst = &s.TotalWorkingsetRefaultFile
		default:
			continue
		}
		if err := uintField(file, key, val, dst); err != nil {
			return MemoryStatV1{}, err
		}
	}
}

// inactiveFileBytes is what the kubelet subtracts from usage: the
// hierarchical total_inactive_file, or inactive_file when the kernel prints
// no totals.
func (s MemoryStatV1) inactiveFileBytes() uint64 {
	if s.HasTotalInactiveFile {
		return s.TotalInactiveFileBytes
	}
	return s.InactiveFileBytes
}

// anonBytes and fileBytes prefer the hierarchical totals, like
// inactiveFileBytes.
func (s MemoryStatV1) anonBytes() uint64 {
	if s.HasTotalRSS {
		return s.TotalRSSBytes
	}
	return s.RSSBytes
}

func (s MemoryStatV1) fileBytes() uint64 {
	if s.HasTotalCache {
		return s.TotalCacheBytes
	}
	return s.CacheBytes
}

// OOMControl is cgroup v1 memory.oom_control.
type OOMControl struct {
	KillDisable bool   // oom_kill_disable
	UnderOOM    bool   // under_oom
	Kills       uint64 // oom_kill (kernel 4.13 and later; 0 before)
}

// ParseMemoryOOMControl parses cgroup v1 memory.oom_control.
func ParseMemoryOOMControl(r io.Reader) (OOMControl, error) {
	b, err := readAll("memory.oom_control", r)
	if err != nil {
		return OOMControl{}, err
	}
	return parseMemoryOOMControl(b)
}

func parseMemoryOOMControl(b []byte) (OOMControl, error) {
	const file = "memory.oom_control"
	var c OOMControl
	l := lines{rest: b}
	for {
		key, val, ok := l.next()
		if !ok {
			return c, nil
		}
		var (
			n   uint64
			dst *bool
		)
		switch string(key) {
		case "oom_kill_disable":
			dst = &c.KillDisable
		case "under_oom":
			dst = &c.UnderOOM
		case "oom_kill":
			if err := uintField(file, key, val, &c.Kills); err != nil {
				return OOMControl{}, err
			}
			continue
		default:
			continue
		}
		if err := uintField(file, key, val, &n); err != nil {
			return OOMControl{}, err
		}
		if n > 1 {
			return OOMControl{}, newParseError(file, key, val, errOutOfRange)
		}
		*dst = n == 1
	}
}
