package cgroup

import (
	"bytes"
	"errors"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// seed adds every testdata file with one of the given base names under dirs
// (e.g. "v2"), plus extra inline inputs.
func seed(f *testing.F, dirs []string, names []string, extra ...string) {
	f.Helper()
	for _, dir := range dirs {
		for _, name := range names {
			paths, err := filepath.Glob(filepath.Join("testdata", dir, "*", name))
			if err != nil {
				f.Fatal(err)
			}
			for _, p := range paths {
				rel, _ := filepath.Rel("testdata", p)
				f.Add(fixture(f, rel))
			}
		}
	}
	for _, e := range extra {
		f.Add([]byte(e))
	}
}

// checkErr asserts that a parse error is a *ParseError that names file.
func checkErr(t *testing.T, file string, err error) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != file || !strings.Contains(err.Error(), file) {
		t.Fatalf("error %q (%T) is not a *ParseError naming %s", err, err, file)
	}
	if len(pe.Value) > 64 || len(pe.Key) > 64 {
		t.Fatalf("error %q carries more than 64 bytes of input", err)
	}
}

// flatOracle is a second, simpler reading of a flat-keyed file: the last
// value of each known key, and whether any known key has a bad value.
func flatOracle(data []byte, known []string) (vals map[string]uint64, ok bool) {
	isKnown := map[string]bool{}
	for _, k := range known {
		isKnown[k] = true
	}
	vals = map[string]uint64{}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' })
		if len(fields) == 0 || !isKnown[fields[0]] {
			continue
		}
		if len(fields) != 2 {
			return nil, false
		}
		n, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return nil, false
		}
		vals[fields[0]] = n
	}
	return vals, true
}

// fuzzFlat checks a flat-keyed parser against flatOracle. got maps each key
// the parser knows to the field it filled.
func fuzzFlat(t *testing.T, file string, data []byte, err error, got map[string]uint64) {
	t.Helper()
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	want, ok := flatOracle(data, keys)
	if (err == nil) != ok {
		t.Fatalf("parser error %v, oracle ok=%v", err, ok)
	}
	if err != nil {
		checkErr(t, file, err)
		return
	}
	for k, v := range got {
		if want[k] != v {
			t.Fatalf("key %s: parser %d, oracle %d", k, v, want[k])
		}
	}
}

func FuzzCPUStatV2(f *testing.F) {
	seed(f, []string{"v2"}, []string{"cpu.stat"}, "usage_usec 1 2\n", "nr_periods\n", "nr_throttled 18446744073709551616")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseCPUStatV2(bytes.NewReader(data))
		fuzzFlat(t, "cpu.stat", data, err, map[string]uint64{
			"usage_usec": s.UsageMicros, "user_usec": s.UserMicros, "system_usec": s.SystemMicros,
			"nr_periods": s.Periods, "nr_throttled": s.ThrottledPeriods, "throttled_usec": s.ThrottledMicros,
			"nr_bursts": s.Bursts, "burst_usec": s.BurstMicros,
		})
	})
}

func FuzzCPUStatV1(f *testing.F) {
	seed(f, []string{"v1"}, []string{"cpu.stat"}, "throttled_time -1\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseCPUStatV1(bytes.NewReader(data))
		fuzzFlat(t, "cpu.stat", data, err, map[string]uint64{
			"nr_periods": s.Periods, "nr_throttled": s.ThrottledPeriods, "throttled_time": s.ThrottledNanos,
			"nr_bursts": s.Bursts, "burst_time": s.BurstNanos,
		})
	})
}

func FuzzMemoryStatV2(f *testing.F) {
	seed(f, []string{"v2"}, []string{"memory.stat"}, "anon\n", "inactive_file 1\r\ninactive_file 2")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseMemoryStatV2(bytes.NewReader(data))
		fuzzFlat(t, "memory.stat", data, err, map[string]uint64{
			"anon": s.AnonBytes, "file": s.FileBytes, "kernel": s.KernelBytes, "sock": s.SockBytes,
			"shmem": s.ShmemBytes, "file_mapped": s.FileMappedBytes, "file_dirty": s.FileDirtyBytes,
			"file_writeback": s.FileWritebackBytes, "inactive_anon": s.InactiveAnonBytes,
			"active_anon": s.ActiveAnonBytes, "inactive_file": s.InactiveFileBytes,
			"active_file": s.ActiveFileBytes, "unevictable": s.UnevictableBytes, "slab": s.SlabBytes,
			"workingset_refault_anon": s.WorkingsetRefaultAnon, "workingset_refault_file": s.WorkingsetRefaultFile,
			"pgfault": s.PgFault, "pgmajfault": s.PgMajFault, "pgscan": s.PgScan, "pgsteal": s.PgSteal,
			"zswap": s.ZswapBytes, "zswapped": s.ZswappedBytes,
		})
	})
}

func FuzzMemoryStatV1(f *testing.F) {
	seed(f, []string{"v1"}, []string{"memory.stat"}, "total_inactive_file 0\n", "rss x")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseMemoryStatV1(bytes.NewReader(data))
		fuzzFlat(t, "memory.stat", data, err, map[string]uint64{
			"cache": s.CacheBytes, "rss": s.RSSBytes, "rss_huge": s.RSSHugeBytes, "shmem": s.ShmemBytes,
			"mapped_file": s.MappedFileBytes, "dirty": s.DirtyBytes, "writeback": s.WritebackBytes,
			"swap": s.SwapBytes, "inactive_anon": s.InactiveAnonBytes, "active_anon": s.ActiveAnonBytes,
			"inactive_file": s.InactiveFileBytes, "active_file": s.ActiveFileBytes,
			"unevictable": s.UnevictableBytes, "hierarchical_memory_limit": s.HierarchicalMemoryLimitBytes,
			"total_cache": s.TotalCacheBytes, "total_rss": s.TotalRSSBytes, "total_shmem": s.TotalShmemBytes,
			"total_mapped_file": s.TotalMappedFileBytes, "total_swap": s.TotalSwapBytes,
			"total_inactive_anon": s.TotalInactiveAnonBytes, "total_active_anon": s.TotalActiveAnonBytes,
			"total_inactive_file": s.TotalInactiveFileBytes, "total_active_file": s.TotalActiveFileBytes,
			"total_unevictable": s.TotalUnevictableBytes, "total_pgmajfault": s.TotalPgMajFault,
			"total_workingset_refault_file": s.TotalWorkingsetRefaultFile,
		})
		if err == nil {
			if !s.HasTotalInactiveFile && s.TotalInactiveFileBytes != 0 {
				t.Fatalf("total_inactive_file %d without HasTotalInactiveFile", s.TotalInactiveFileBytes)
			}
			if s.inactiveFileBytes() > max(s.TotalInactiveFileBytes, s.InactiveFileBytes) {
				t.Fatal("inactiveFileBytes invented a value")
			}
		}
	})
}

func FuzzMemoryEvents(f *testing.F) {
	seed(f, []string{"v2"}, []string{"memory.events"}, "oom_kill\n", "max max\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseMemoryEvents(bytes.NewReader(data))
		fuzzFlat(t, "memory.events", data, err, map[string]uint64{
			"low": e.Low, "high": e.High, "max": e.Max, "oom": e.OOM,
			"oom_kill": e.OOMKill, "oom_group_kill": e.OOMGroupKill,
		})
	})
}

func FuzzMemoryOOMControl(f *testing.F) {
	seed(f, []string{"v1"}, []string{"memory.oom_control"}, "under_oom 2\n", "oom_kill_disable 1\nunder_oom 1\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseMemoryOOMControl(bytes.NewReader(data))
		want, ok := flatOracle(data, []string{"oom_kill_disable", "under_oom", "oom_kill"})
		if ok && (want["oom_kill_disable"] > 1 || want["under_oom"] > 1) {
			ok = false
		}
		if (err == nil) != ok {
			t.Fatalf("parser error %v, oracle ok=%v", err, ok)
		}
		if err != nil {
			checkErr(t, "memory.oom_control", err)
			return
		}
		if c.Kills != want["oom_kill"] || c.KillDisable != (want["oom_kill_disable"] == 1) || c.UnderOOM != (want["under_oom"] == 1) {
			t.Fatalf("got %+v, oracle %v", c, want)
		}
	})
}

func FuzzPressure(f *testing.F) {
	seed(f, []string{"v2"}, []string{"cpu.pressure", "memory.pressure", "io.pressure"},
		"some avg10=1.2.3\n", "full avg10=NaN total=1\n", "some avg10=99999999999999999999.5\n",
		"some avg10=0.000000000000000000001 total=0\n", "some avg10= total=\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePressure("io.pressure", bytes.NewReader(data))
		if err != nil {
			checkErr(t, "io.pressure", err)
			return
		}
		for _, l := range []PressureLine{p.Some, p.Full} {
			for _, v := range []float64{l.Avg10Percent, l.Avg60Percent, l.Avg300Percent} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("insane average %v in %+v", v, p)
				}
			}
		}
		if !p.HasFull && p.Full != (PressureLine{}) {
			t.Fatalf("full line values without HasFull: %+v", p)
		}
	})
}

func FuzzCPUMax(f *testing.F) {
	seed(f, []string{"v2"}, []string{"cpu.max"}, "max", "50000", "0 100000", "max 0", "1 1", "18446744073709551615 1")
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseCPUMax(bytes.NewReader(data))
		if err != nil {
			checkErr(t, "cpu.max", err)
			return
		}
		if l.Unlimited && l.QuotaMicros != 0 {
			t.Fatalf("unlimited with a quota: %+v", l)
		}
		if !l.Unlimited && (l.QuotaMicros == 0 || l.PeriodMicros == 0) {
			t.Fatalf("limited without quota or period: %+v", l)
		}
		if m := l.Millicores(); m < 0 || (l.Unlimited && m != 0) {
			t.Fatalf("Millicores() = %d for %+v", m, l)
		}
	})
}

// FuzzLimits covers the files whose value has a special meaning beyond a
// plain number: "max", -1, the v1 unlimited value, and ranges.
func FuzzLimits(f *testing.F) {
	seed(f, []string{"v1", "v2"}, []string{"memory.max", "memory.limit_in_bytes", "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.weight"},
		"max", "-1", "0", "10001", "4611686018427387904", "4611686018427387903", "18446744073709551616")
	f.Fuzz(func(t *testing.T, data []byte) {
		trimmed := strings.Trim(string(data), " \t\r\n")
		n, nerr := strconv.ParseUint(trimmed, 10, 64)

		m, err := ParseMemoryMax(bytes.NewReader(data))
		switch {
		case trimmed == "max":
			if err != nil || m != (MemoryLimit{Unlimited: true}) {
				t.Fatalf("memory.max %q: %+v, %v", trimmed, m, err)
			}
		case (err == nil) != (nerr == nil) || (err == nil && m != MemoryLimit{Bytes: n}):
			t.Fatalf("memory.max %q: %+v, %v", trimmed, m, err)
		}

		m, err = ParseMemoryLimitInBytes(bytes.NewReader(data))
		if (err == nil) != (nerr == nil) {
			t.Fatalf("memory.limit_in_bytes %q: %+v, %v", trimmed, m, err)
		}
		if err == nil {
			want := MemoryLimit{Bytes: n}
			if n >= 1<<62 {
				want = MemoryLimit{Unlimited: true}
			}
			if m != want {
				t.Fatalf("memory.limit_in_bytes %q: got %+v, want %+v", trimmed, m, want)
			}
		}

		q, unlimited, err := ParseCFSQuota(bytes.NewReader(data))
		if err == nil && !(unlimited && q == 0 && trimmed == "-1" || !unlimited && q > 0 && q == n) {
			t.Fatalf("cpu.cfs_quota_us %q: %d %v", trimmed, q, unlimited)
		}
		if err != nil {
			checkErr(t, "cpu.cfs_quota_us", err)
		}

		p, err := ParseCFSPeriod(bytes.NewReader(data))
		if err == nil && (p == 0 || p != n) {
			t.Fatalf("cpu.cfs_period_us %q: %d", trimmed, p)
		}

		w, err := ParseCPUWeight(bytes.NewReader(data))
		if (err == nil) != (nerr == nil && n <= 10000) || (err == nil && w != n) {
			t.Fatalf("cpu.weight %q: %d, %v", trimmed, w, err)
		}
		if err != nil {
			checkErr(t, "cpu.weight", err)
		}
	})
}

// FuzzSingleValues covers the files that hold one plain counter.
func FuzzSingleValues(f *testing.F) {
	seed(f, []string{"v1", "v2"}, []string{"memory.current", "memory.peak", "cpuacct.usage", "cpu.shares",
		"memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.failcnt"}, "", " ", "1 2", "-0", "+1", "0x10", "18446744073709551616")
	parsers := map[string]func(io.Reader) (uint64, error){
		"memory.current":            ParseMemoryCurrent,
		"memory.peak":               ParseMemoryPeak,
		"cpuacct.usage":             ParseCPUAcctUsage,
		"cpu.shares":                ParseCPUShares,
		"memory.usage_in_bytes":     ParseMemoryUsageInBytes,
		"memory.max_usage_in_bytes": ParseMemoryMaxUsageInBytes,
		"memory.failcnt":            ParseMemoryFailcnt,
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, werr := strconv.ParseUint(strings.Trim(string(data), " \t\r\n"), 10, 64)
		for file, parse := range parsers {
			got, err := parse(bytes.NewReader(data))
			if (err == nil) != (werr == nil) || (err == nil && got != want) {
				t.Fatalf("%s: got %d, %v; oracle %d, %v", file, got, err, want, werr)
			}
			if err != nil {
				checkErr(t, file, err)
			}
		}
	})
}

// FuzzRate checks that Rate never returns negative, infinite or NaN numbers
// and keeps fractions within [0, 1], whatever the counters do.
func FuzzRate(f *testing.F) {
	f.Add(uint64(1e6), uint64(2e6), uint64(10), uint64(20), uint64(5), uint64(9), uint64(1e9), uint64(100), uint64(200), uint64(1<<30), int64(time.Second))
	f.Add(uint64(2e6), uint64(1e6), uint64(20), uint64(10), uint64(9), uint64(5), uint64(0), uint64(200), uint64(100), uint64(0), int64(-1))
	f.Add(uint64(0), uint64(math.MaxUint64), uint64(0), uint64(1), uint64(0), uint64(7), uint64(math.MaxUint64), uint64(0), uint64(math.MaxUint64), uint64(1), int64(1))
	f.Fuzz(func(t *testing.T, usage0, usage1, periods0, periods1, thr0, thr1, ws, psi0, psi1, limit uint64, dtNanos int64) {
		prev := Sample{
			Time: t0, Version: V2,
			CPUUsageMicros: usage0, CPUPeriods: periods0, CPUThrottledPeriods: thr0, CPUThrottledMicros: thr0,
			PSI: PSI{Present: true, CPU: Pressure{Some: PressureLine{TotalMicros: psi0}, Full: PressureLine{TotalMicros: psi0}, HasFull: true}},
		}
		cur := Sample{
			Time: t0.Add(time.Duration(dtNanos)), Version: V2,
			CPUUsageMicros: usage1, CPUPeriods: periods1, CPUThrottledPeriods: thr1, CPUThrottledMicros: thr1,
			MemoryWorkingSetBytes: ws, MemoryLimit: MemoryLimit{Bytes: limit},
			PSI: PSI{Present: true, CPU: Pressure{Some: PressureLine{TotalMicros: psi1}, Full: PressureLine{TotalMicros: psi1}, HasFull: true}},
		}
		s := Rate(prev, cur)
		for name, v := range map[string]float64{
			"interval": s.IntervalSeconds, "millicores": s.CPUUsageMillicores,
			"throttled s/s": s.CPUThrottledSecondsPerSecond, "headroom": s.MemoryHeadroomFraction,
			"throttled fraction": s.CPUThrottledFraction, "some": s.CPUPressure.SomeStalledFraction,
			"full": s.CPUPressure.FullStalledFraction,
		} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("%s = %v in %+v", name, v, s)
			}
		}
		for name, v := range map[string]float64{
			"headroom": s.MemoryHeadroomFraction, "throttled fraction": s.CPUThrottledFraction,
			"some": s.CPUPressure.SomeStalledFraction, "full": s.CPUPressure.FullStalledFraction,
		} {
			if v > 1 {
				t.Fatalf("%s = %v > 1", name, v)
			}
		}
		if s.HasRate && (usage1 < usage0 || periods1 < periods0 || thr1 < thr0 || psi1 < psi0 || dtNanos <= 0) {
			t.Fatalf("rate across a counter reset or a backward clock: %+v", s)
		}
		if s.MemoryHeadroomBytes > limit {
			t.Fatalf("headroom %d above limit %d", s.MemoryHeadroomBytes, limit)
		}
	})
}
