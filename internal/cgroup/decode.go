package cgroup

import (
	"errors"
	"fmt"
	"time"
)

// controller says which directory of a Path holds a file.
type controller uint8

const (
	ctrlUnified controller = iota
	ctrlCPU
	ctrlCPUAcct
	ctrlMemory
)

func (p Path) dir(c controller) string {
	switch c {
	case ctrlCPU:
		return p.CPU
	case ctrlCPUAcct:
		return p.CPUAcct
	case ctrlMemory:
		return p.Memory
	default:
		return p.Unified
	}
}

// fileID names each file Read can open.
type fileID uint8

const (
	fCPUStatV2 fileID = iota
	fCPUMax
	fCPUWeight
	fMemoryCurrent
	fMemoryStatV2
	fMemoryMax
	fMemoryEvents
	fMemoryPeak
	fCPUAcctUsage
	fCPUStatV1
	fCFSQuota
	fCFSPeriod
	fCPUShares
	fMemoryUsage
	fMemoryStatV1
	fMemoryLimit
	fMemoryMaxUsage
	fMemoryFailcnt
	fOOMControl
	fCPUPressure
	fMemoryPressure
	fIOPressure
	numFiles
)

type fileSpec struct {
	name string
	ctrl controller
	// optional files may be missing on some kernels or setups.
	optional bool
}

var specs = [numFiles]fileSpec{
	fCPUStatV2:      {"cpu.stat", ctrlUnified, false},
	fCPUMax:         {"cpu.max", ctrlUnified, true},    // cpu controller off
	fCPUWeight:      {"cpu.weight", ctrlUnified, true}, // cpu controller off
	fMemoryCurrent:  {"memory.current", ctrlUnified, false},
	fMemoryStatV2:   {"memory.stat", ctrlUnified, false},
	fMemoryMax:      {"memory.max", ctrlUnified, false},
	fMemoryEvents:   {"memory.events", ctrlUnified, false},
	fMemoryPeak:     {"memory.peak", ctrlUnified, true}, // before 5.19
	fCPUAcctUsage:   {"cpuacct.usage", ctrlCPUAcct, false},
	fCPUStatV1:      {"cpu.stat", ctrlCPU, false},
	fCFSQuota:       {"cpu.cfs_quota_us", ctrlCPU, false},
	fCFSPeriod:      {"cpu.cfs_period_us", ctrlCPU, false},
	fCPUShares:      {"cpu.shares", ctrlCPU, false},
	fMemoryUsage:    {"memory.usage_in_bytes", ctrlMemory, false},
	fMemoryStatV1:   {"memory.stat", ctrlMemory, false},
	fMemoryLimit:    {"memory.limit_in_bytes", ctrlMemory, false},
	fMemoryMaxUsage: {"memory.max_usage_in_bytes", ctrlMemory, false},
	fMemoryFailcnt:  {"memory.failcnt", ctrlMemory, false},
	fOOMControl:     {"memory.oom_control", ctrlMemory, false},
	fCPUPressure:    {"cpu.pressure", ctrlUnified, true}, // no CONFIG_PSI, psi=0
	fMemoryPressure: {"memory.pressure", ctrlUnified, true},
	fIOPressure:     {"io.pressure", ctrlUnified, true},
}

// filesOf lists the files decode reads for p, in the order it reads them.
func filesOf(p Path) []fileID {
	switch {
	case p.Version == V2:
		return []fileID{fCPUStatV2, fCPUMax, fCPUWeight, fMemoryCurrent, fMemoryStatV2, fMemoryMax,
			fMemoryEvents, fMemoryPeak, fCPUPressure, fMemoryPressure, fIOPressure}
	case p.Version == V1 && p.Unified != "":
		return []fileID{fCPUAcctUsage, fCPUStatV1, fCFSQuota, fCFSPeriod, fCPUShares, fMemoryUsage,
			fMemoryStatV1, fMemoryLimit, fMemoryMaxUsage, fMemoryFailcnt, fOOMControl,
			fCPUPressure, fMemoryPressure, fIOPressure}
	case p.Version == V1:
		return []fileID{fCPUAcctUsage, fCPUStatV1, fCFSQuota, fCFSPeriod, fCPUShares, fMemoryUsage,
			fMemoryStatV1, fMemoryLimit, fMemoryMaxUsage, fMemoryFailcnt, fOOMControl}
	}
	return nil
}

// source hands decode the contents of one file. ok is false when an
// optional file is absent. The bytes are valid until the next call.
type source interface {
	get(id fileID) (b []byte, ok bool, err error)
}

// decode reads every file of p from src and builds the Sample. The version
// and file list match filesOf.
func decode(src source, p Path, now time.Time) (Sample, error) {
	s := Sample{Time: now, Version: p.Version}
	r := &fileReader{src: src}
	var err error
	switch p.Version {
	case V2:
		err = decodeV2(r, &s)
	case V1:
		err = decodeV1(r, &s)
		if err == nil && p.Unified != "" {
			err = decodePSI(r, &s.PSI)
		}
	default:
		return Sample{}, fmt.Errorf("reading cgroup %+v: unknown version", p)
	}
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			// Parsers name only the file. The last file read is the
			// one that failed to parse.
			err = fmt.Errorf("reading cgroup %s: %w", p.dir(specs[r.last].ctrl), err)
		}
		return Sample{}, err
	}
	return s, nil
}

// fileReader remembers the last file it handed out, to name it in parse
// errors.
type fileReader struct {
	src  source
	last fileID
}

func (r *fileReader) get(id fileID) ([]byte, bool, error) {
	r.last = id
	return r.src.get(id)
}

// need returns a file that must exist.
func (r *fileReader) need(id fileID) ([]byte, error) {
	b, _, err := r.get(id)
	return b, err
}

func decodeV2(src *fileReader, s *Sample) error {
	b, err := src.need(fCPUStatV2)
	if err != nil {
		return err
	}
	cpu, err := parseCPUStatV2(b)
	if err != nil {
		return err
	}
	s.CPUUsageMicros = cpu.UsageMicros
	s.CPUPeriods = cpu.Periods
	s.CPUThrottledPeriods = cpu.ThrottledPeriods
	s.CPUThrottledMicros = cpu.ThrottledMicros

	// Without the cpu controller there is no cpu.max, which means no limit.
	s.CPULimit = CPULimit{Unlimited: true}
	b, ok, err := src.get(fCPUMax)
	if err != nil {
		return err
	}
	if ok {
		if s.CPULimit, err = parseCPUMax(b); err != nil {
			return err
		}
	}
	if b, ok, err = src.get(fCPUWeight); err != nil {
		return err
	}
	if ok {
		if s.CPUWeight, err = parseCPUWeight(b); err != nil {
			return err
		}
	}

	if b, err = src.need(fMemoryCurrent); err != nil {
		return err
	}
	if s.MemoryUsageBytes, err = parseSingleUint("memory.current", b); err != nil {
		return err
	}
	if b, err = src.need(fMemoryStatV2); err != nil {
		return err
	}
	mem, err := parseMemoryStatV2(b)
	if err != nil {
		return err
	}
	s.MemoryInactiveFileBytes = mem.InactiveFileBytes
	s.MemoryAnonBytes = mem.AnonBytes
	s.MemoryFileBytes = mem.FileBytes
	s.MemoryWorkingSetBytes = workingSetBytes(s.MemoryUsageBytes, mem.InactiveFileBytes)

	if b, err = src.need(fMemoryMax); err != nil {
		return err
	}
	if s.MemoryLimit, err = parseMemoryMax(b); err != nil {
		return err
	}
	if b, err = src.need(fMemoryEvents); err != nil {
		return err
	}
	ev, err := parseMemoryEvents(b)
	if err != nil {
		return err
	}
	s.MemoryLimitHits = ev.Max
	s.OOMKills = ev.OOMKill

	if b, ok, err = src.get(fMemoryPeak); err != nil {
		return err
	}
	if ok {
		if s.MemoryPeakBytes, err = parseSingleUint("memory.peak", b); err != nil {
			return err
		}
	}
	return decodePSI(src, &s.PSI)
}

func decodeV1(src *fileReader, s *Sample) error {
	b, err := src.need(fCPUAcctUsage)
	if err != nil {
		return err
	}
	usageNanos, err := parseSingleUint("cpuacct.usage", b)
	if err != nil {
		return err
	}
	s.CPUUsageMicros = usageNanos / 1000

	if b, err = src.need(fCPUStatV1); err != nil {
		return err
	}
	cpu, err := parseCPUStatV1(b)
	if err != nil {
		return err
	}
	s.CPUPeriods = cpu.Periods
	s.CPUThrottledPeriods = cpu.ThrottledPeriods
	s.CPUThrottledMicros = cpu.ThrottledNanos / 1000

	if b, err = src.need(fCFSQuota); err != nil {
		return err
	}
	quota, unlimited, err := parseCFSQuota(b)
	if err != nil {
		return err
	}
	if b, err = src.need(fCFSPeriod); err != nil {
		return err
	}
	period, err := parseCFSPeriod(b)
	if err != nil {
		return err
	}
	s.CPULimit = CPULimit{Unlimited: unlimited, QuotaMicros: quota, PeriodMicros: period}
	if b, err = src.need(fCPUShares); err != nil {
		return err
	}
	if s.CPUShares, err = parseSingleUint("cpu.shares", b); err != nil {
		return err
	}

	if b, err = src.need(fMemoryUsage); err != nil {
		return err
	}
	if s.MemoryUsageBytes, err = parseSingleUint("memory.usage_in_bytes", b); err != nil {
		return err
	}
	if b, err = src.need(fMemoryStatV1); err != nil {
		return err
	}
	mem, err := parseMemoryStatV1(b)
	if err != nil {
		return err
	}
	s.MemoryInactiveFileBytes = mem.inactiveFileBytes()
	s.MemoryAnonBytes = mem.anonBytes()
	s.MemoryFileBytes = mem.fileBytes()
	s.MemoryWorkingSetBytes = workingSetBytes(s.MemoryUsageBytes, s.MemoryInactiveFileBytes)

	if b, err = src.need(fMemoryLimit); err != nil {
		return err
	}
	if s.MemoryLimit, err = parseMemoryLimitInBytes(b); err != nil {
		return err
	}
	if b, err = src.need(fMemoryMaxUsage); err != nil {
		return err
	}
	if s.MemoryPeakBytes, err = parseSingleUint("memory.max_usage_in_bytes", b); err != nil {
		return err
	}
	if b, err = src.need(fMemoryFailcnt); err != nil {
		return err
	}
	if s.MemoryLimitHits, err = parseSingleUint("memory.failcnt", b); err != nil {
		return err
	}
	if b, err = src.need(fOOMControl); err != nil {
		return err
	}
	oom, err := parseMemoryOOMControl(b)
	if err != nil {
		return err
	}
	s.OOMKills = oom.Kills
	return nil
}

// decodePSI fills psi from the PSI files. It leaves psi absent if there is
// no cpu.pressure (no CONFIG_PSI, or PSI turned off with psi=0 or
// cgroup.pressure=0).
func decodePSI(src *fileReader, psi *PSI) error {
	for i, f := range [...]struct {
		id  fileID
		dst *Pressure
	}{
		{fCPUPressure, &psi.CPU},
		{fMemoryPressure, &psi.Memory},
		{fIOPressure, &psi.IO},
	} {
		b, ok, err := src.get(f.id)
		if err != nil {
			return err
		}
		if !ok {
			if i == 0 {
				return nil // no PSI at all
			}
			continue
		}
		if *f.dst, err = parsePressure(specs[f.id].name, b); err != nil {
			return err
		}
		psi.Present = true
	}
	return nil
}
