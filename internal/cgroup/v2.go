package cgroup

import (
	"bytes"
	"io"
)

// CPUStatV2 is cgroup v2 cpu.stat. Without the cpu controller the kernel
// prints only the first three keys, and the others read as 0.
type CPUStatV2 struct {
	UsageMicros      uint64 // usage_usec
	UserMicros       uint64 // user_usec
	SystemMicros     uint64 // system_usec
	Periods          uint64 // nr_periods
	ThrottledPeriods uint64 // nr_throttled
	ThrottledMicros  uint64 // throttled_usec
	Bursts           uint64 // nr_bursts
	BurstMicros      uint64 // burst_usec
}

// ParseCPUStatV2 parses cgroup v2 cpu.stat.
func ParseCPUStatV2(r io.Reader) (CPUStatV2, error) {
	b, err := readAll("cpu.stat", r)
	if err != nil {
		return CPUStatV2{}, err
	}
	return parseCPUStatV2(b)
}

func parseCPUStatV2(b []byte) (CPUStatV2, error) {
	const file = "cpu.stat"
	var s CPUStatV2
	l := lines{rest: b}
	for {
		key, val, ok := l.next()
		if !ok {
			return s, nil
		}
		var dst *uint64
		switch string(key) {
		case "usage_usec":
			dst = &s.UsageMicros
		case "user_usec":
			dst = &s.UserMicros
		case "system_usec":
			dst = &s.SystemMicros
		case "nr_periods":
			dst = &s.Periods
		case "nr_throttled":
			dst = &s.ThrottledPeriods
		case "throttled_usec":
			dst = &s.ThrottledMicros
		case "nr_bursts":
			dst = &s.Bursts
		case "burst_usec":
			dst = &s.BurstMicros
		default:
			continue
		}
		if err := uintField(file, key, val, dst); err != nil {
			return CPUStatV2{}, err
		}
	}
}

// ParseCPUMax parses cgroup v2 cpu.max: "$MAX $PERIOD", where $MAX is
// "max" or a quota in microseconds, e.g. "max 100000" or "50000 100000". A
// lone "max" is accepted and leaves PeriodMicros 0. A lone quota is
// rejected because it cannot be turned into millicores.
func ParseCPUMax(r io.Reader) (CPULimit, error) {
	b, err := readAll("cpu.max", r)
	if err != nil {
		return CPULimit{}, err
	}
	return parseCPUMax(b)
}

func parseCPUMax(b []byte) (CPULimit, error) {
	const file = "cpu.max"
	v := trimSpace(b)
	if len(v) == 0 {
		return CPULimit{}, &ParseError{File: file, Err: errEmpty}
	}
	quota, period := cutSpace(v)
	var l CPULimit
	if len(period) > 0 {
		p, err := parseUint(period)
		if err != nil {
			return CPULimit{}, newParseError(file, []byte("period"), period, err)
		}
		if p == 0 {
			return CPULimit{}, newParseError(file, []byte("period"), period, errOutOfRange)
		}
		l.PeriodMicros = p
	}
	if string(quota) == "max" {
		l.Unlimited = true
		return l, nil
	}
	q, err := parseUint(quota)
	if err != nil {
		return CPULimit{}, newParseError(file, []byte("quota"), quota, err)
	}
	if q == 0 {
		return CPULimit{}, newParseError(file, []byte("quota"), quota, errOutOfRange)
	}
	if l.PeriodMicros == 0 {
		return CPULimit{}, newParseError(file, []byte("period"), nil, errMissingValue)
	}
	l.QuotaMicros = q
	return l, nil
}

// ParseCPUWeight parses cgroup v2 cpu.weight: 1-10000, or 0 for a
// SCHED_IDLE group.
func ParseCPUWeight(r io.Reader) (weight uint64, err error) {
	b, err := readAll("cpu.weight", r)
	if err != nil {
		return 0, err
	}
	return parseCPUWeight(b)
}

func parseCPUWeight(b []byte) (uint64, error) {
	w, err := parseSingleUint("cpu.weight", b)
	if err != nil {
		return 0, err
	}
	if w > 10000 {
		return 0, newParseError("cpu.weight", nil, trimSpace(b), errOutOfRange)
	}
	return w, nil
}

// ParseMemoryCurrent parses cgroup v2 memory.current (bytes).
func ParseMemoryCurrent(r io.Reader) (usageBytes uint64, err error) {
	b, err := readAll("memory.current", r)
	if err != nil {
		return 0, err
	}
	return parseSingleUint("memory.current", b)
}

// ParseMemoryPeak parses cgroup v2 memory.peak (bytes).
func ParseMemoryPeak(r io.Reader) (peakBytes uint64, err error) {
	b, err := readAll("memory.peak", r)
	if err != nil {
		return 0, err
	}
	return parseSingleUint("memory.peak", b)
}

// ParseMemoryMax parses cgroup v2 memory.max: "max" or bytes.
func ParseMemoryMax(r io.Reader) (MemoryLimit, error) {
	b, err := readAll("memory.max", r)
	if err != nil {
		return MemoryLimit{}, err
	}
	return parseMemoryMax(b)
}

func parseMemoryMax(b []byte) (MemoryLimit, error) {
	if bytes.Equal(trimSpace(b), []byte("max")) {
		return MemoryLimit{Unlimited: true}, nil
	}
	n, err := parseSingleUint("memory.max", b)
	if err != nil {
		return MemoryLimit{}, err
	}
	return MemoryLimit{Bytes: n}, nil
}

// MemoryStatV2 is the part of cgroup v2 memory.stat that snug uses. All
// amounts are bytes, and the page-event counters are counts. Keys the kernel
// does not print read as 0.
type MemoryStatV2 struct {
	AnonBytes                 uint64 // anon
	FileBytes                 uint64 // file
	KernelBytes               uint64 // kernel
	SockBytes                 uint64 // sock
	ShmemBytes                uint64 // shmem
	FileMappedBytes           uint64 // file_mapped
	FileDirtyBytes            uint64 // file_dirty
	FileWritebackBytes        uint64 // file_writeback
	InactiveAnonBytes         uint64 // inactive_anon
	ActiveAnonBytes           uint64 // active_anon
	InactiveFileBytes         uint64 // inactive_file
	ActiveFileBytes           uint64 // active_file
	UnevictableBytes          uint64 // unevictable
	SlabBytes                 uint64 // slab
	WorkingsetRefaultAnon     uint64 // workingset_refault_anon
	WorkingsetRefaultFile     uint64 // workingset_refault_file
	PgFault                   uint64 // pgfault
	PgMajFault                uint64 // pgmajfault
	PgScan, PgSteal           uint64 // pgscan, pgsteal
	ZswapBytes, ZswappedBytes uint64 // zswap, zswapped
}

// ParseMemoryStatV2 parses cgroup v2 memory.stat.
func ParseMemoryStatV2(r io.Reader) (MemoryStatV2, error) {
	b, err := readAll("memory.stat", r)
	if err != nil {
		return MemoryStatV2{}, err
	}
	return parseMemoryStatV2(b)
}

func parseMemoryStatV2(b []byte) (MemoryStatV2, error) {
	const file = "memory.stat"
	var s MemoryStatV2
	l := lines{rest: b}
	for {
		key, val, ok := l.next()
		if !ok {
			return s, nil
		}
		var dst *uint64
		switch string(key) {
		case "anon":
			dst = &s.AnonBytes
		case "file":
			dst = &s.FileBytes
		case "kernel":
			dst = &s.KernelBytes
		case "sock":
			dst = &s.SockBytes
		case "shmem":
			dst = &s.ShmemBytes
		case "file_mapped":
			dst = &s.FileMappedBytes
		case "file_dirty":
			dst = &s.FileDirtyBytes
		case "file_writeback":
			dst = &s.FileWritebackBytes
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
		case "slab":
			dst = &s.SlabBytes
		case "workingset_refault_anon":
			dst = &s.WorkingsetRefaultAnon
		case "workingset_refault_file":
			dst = &s.WorkingsetRefaultFile
		case "pgfault":
			dst = &s.PgFault
		case "pgmajfault":
			dst = &s.PgMajFault
		case "pgscan":
			dst = &s.PgScan
		case "pgsteal":
			dst = &s.PgSteal
		case "zswap":
			dst = &s.ZswapBytes
		case "zswapped":
			dst = &s.ZswappedBytes
		default:
			continue
		}
		if err := uintField(file, key, val, dst); err != nil {
			return MemoryStatV2{}, err
		}
	}
}

// MemoryEvents is cgroup v2 memory.events. Its counts are hierarchical and
// cumulative.
type MemoryEvents struct {
	Low          uint64 // low: reclaimed below memory.low
	High         uint64 // high: throttled over memory.high
	Max          uint64 // max: usage about to exceed memory.max
	OOM          uint64 // oom: allocation about to fail at the limit
	OOMKill      uint64 // oom_kill: processes killed by the OOM killer
	OOMGroupKill uint64 // oom_group_kill (kernel 6.1 and later)
}

// ParseMemoryEvents parses cgroup v2 memory.events (or memory.events.local).
func ParseMemoryEvents(r io.Reader) (MemoryEvents, error) {
	b, err := readAll("memory.events", r)
	if err != nil {
		return MemoryEvents{}, err
	}
	return parseMemoryEvents(b)
}

func parseMemoryEvents(b []byte) (MemoryEvents, error) {
	const file = "memory.events"
	var e MemoryEvents
	l := lines{rest: b}
	for {
		key, val, ok := l.next()
		if !ok {
			return e, nil
		}
		var dst *uint64
		switch string(key) {
		case "low":
			dst = &e.Low
		case "high":
			dst = &e.High
		case "max":
			dst = &e.Max
		case "oom":
			dst = &e.OOM
		case "oom_kill":
			dst = &e.OOMKill
		case "oom_group_kill":
			dst = &e.OOMGroupKill
		default:
			continue
		}
		if err := uintField(file, key, val, dst); err != nil {
			return MemoryEvents{}, err
		}
	}
}

// ParsePressure parses a PSI file: cpu.pressure, memory.pressure or
// io.pressure. Each has lines of the form
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//
// An empty file gives a zero Pressure. File only names the file in errors.
func ParsePressure(file string, r io.Reader) (Pressure, error) {
	b, err := readAll(file, r)
	if err != nil {
		return Pressure{}, err
	}
	return parsePressure(file, b)
}
