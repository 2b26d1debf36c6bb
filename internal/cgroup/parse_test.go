package cgroup

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// parseCase is one input to a parser: inline text or a testdata file.
type parseCase[T any] struct {
	name string
	in   string // used when file is empty
	file string // path under testdata
	want T
	// wantErr lists substrings the error must contain. Empty means success.
	wantErr []string
	// wantIs is an error the result must match with errors.Is.
	wantIs error
}

func runParse[T any](t *testing.T, parse func(io.Reader) (T, error), cases []parseCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if tc.file != "" {
				in = string(fixture(t, tc.file))
			}
			// One byte at a time, so the parser cannot rely on a single
			// Read returning the whole file.
			got, err := parse(iotest.OneByteReader(strings.NewReader(in)))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("got %+v, want error containing %q", got, tc.wantErr)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
					t.Errorf("error %q does not match %v", err, tc.wantIs)
				}
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Errorf("error %T is not a *ParseError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseCPUStatV2(t *testing.T) {
	runParse(t, ParseCPUStatV2, []parseCase[CPUStatV2]{
		{name: "throttled", file: "v2/throttled/cpu.stat", want: CPUStatV2{
			UsageMicros: 183492011, UserMicros: 170112334, SystemMicros: 13379677,
			Periods: 3667, ThrottledPeriods: 1208, ThrottledMicros: 58120443,
		}},
		{name: "kernel 5.10 has no burst keys", file: "v2/unlimited/cpu.stat", want: CPUStatV2{
			UsageMicros: 9021554, UserMicros: 7730012, SystemMicros: 1291542,
		}},
		{name: "cpu controller off", file: "v2/odd/cpu.stat", want: CPUStatV2{
			UsageMicros: 5000, UserMicros: 4000, SystemMicros: 1000,
		}},
		{name: "empty", in: "", want: CPUStatV2{}},
		{name: "tabs CRLF and blank lines", in: "\r\nusage_usec\t7\r\n\n  nr_periods  3  \n", want: CPUStatV2{UsageMicros: 7, Periods: 3}},
		{name: "unknown key with odd value", in: "usage_usec 1\nnew_key -1 x\n", want: CPUStatV2{UsageMicros: 1}},
		{name: "malformed", in: "usage_usec 1\nnr_throttled 1e3\n",
			wantErr: []string{"cpu.stat", `"nr_throttled"`, `"1e3"`}, wantIs: strconv.ErrSyntax},
		{name: "negative", in: "usage_usec -1\n", wantErr: []string{`"usage_usec"`}, wantIs: strconv.ErrSyntax},
		{name: "overflow", in: "usage_usec 18446744073709551616\n", wantErr: []string{`"usage_usec"`}, wantIs: strconv.ErrRange},
		{name: "missing value", in: "usage_usec\n", wantErr: []string{`"usage_usec"`, "missing value"}},
		{name: "two values", in: "usage_usec 1 2\n", wantErr: []string{`"usage_usec"`}},
	})
}

func TestParseCPUMax(t *testing.T) {
	runParse(t, ParseCPUMax, []parseCase[CPULimit]{
		{name: "quota", file: "v2/throttled/cpu.max", want: CPULimit{QuotaMicros: 50000, PeriodMicros: 100000}},
		{name: "max", file: "v2/unlimited/cpu.max", want: CPULimit{Unlimited: true, PeriodMicros: 100000}},
		{name: "lone max", in: "max", want: CPULimit{Unlimited: true}},
		{name: "no newline", in: "150000 100000", want: CPULimit{QuotaMicros: 150000, PeriodMicros: 100000}},
		{name: "empty", in: "\n", wantErr: []string{"cpu.max", "empty"}},
		{name: "lone quota", in: "50000\n", wantErr: []string{"cpu.max", `"period"`, "missing value"}},
		{name: "zero period", in: "max 0\n", wantErr: []string{`"period"`, "out of range"}},
		{name: "zero quota", in: "0 100000\n", wantErr: []string{`"quota"`, "out of range"}},
		{name: "bad quota", in: "-1 100000\n", wantErr: []string{`"quota"`, `"-1"`}, wantIs: strconv.ErrSyntax},
		{name: "three fields", in: "max 100000 7\n", wantErr: []string{`"period"`}, wantIs: strconv.ErrSyntax},
	})
}

func TestParseCPUWeight(t *testing.T) {
	runParse(t, ParseCPUWeight, []parseCase[uint64]{
		{name: "fixture", file: "v2/throttled/cpu.weight", want: 10},
		{name: "idle", in: "0\n", want: 0},
		{name: "max", in: "10000\n", want: 10000},
		{name: "too big", in: "10001\n", wantErr: []string{"cpu.weight", `"10001"`, "out of range"}},
		{name: "empty", in: "", wantErr: []string{"cpu.weight", "empty"}},
	})
}

func TestParseSingleValues(t *testing.T) {
	parsers := map[string]func(io.Reader) (uint64, error){
		"memory.current":            ParseMemoryCurrent,
		"memory.peak":               ParseMemoryPeak,
		"cpuacct.usage":             ParseCPUAcctUsage,
		"cpu.shares":                ParseCPUShares,
		"memory.usage_in_bytes":     ParseMemoryUsageInBytes,
		"memory.max_usage_in_bytes": ParseMemoryMaxUsageInBytes,
		"memory.failcnt":            ParseMemoryFailcnt,
	}
	for file, parse := range parsers {
		t.Run(file, func(t *testing.T) {
			runParse(t, parse, []parseCase[uint64]{
				{name: "plain", in: "262144000\n", want: 262144000},
				{name: "no newline", in: "7", want: 7},
				{name: "max uint64", in: "18446744073709551615\n", want: 1<<64 - 1},
				{name: "empty", in: "", wantErr: []string{file, "empty"}},
				{name: "blank", in: " \n", wantErr: []string{file, "empty"}},
				{name: "max", in: "max\n", wantErr: []string{file, `"max"`}, wantIs: strconv.ErrSyntax},
				{name: "two values", in: "1 2\n", wantErr: []string{file, `"1 2"`}, wantIs: strconv.ErrSyntax},
				{name: "overflow", in: "18446744073709551616\n", wantErr: []string{file}, wantIs: strconv.ErrRange},
			})
		})
	}
	runParse(t, ParseMemoryCurrent, []parseCase[uint64]{
		{name: "fixture", file: "v2/throttled/memory.current", want: 262144000},
	})
	runParse(t, ParseMemoryPeak, []parseCase[uint64]{
		{name: "fixture", file: "v2/throttled/memory.peak", want: 268435456},
	})
	runParse(t, ParseCPUAcctUsage, []parseCase[uint64]{
		{name: "fixture", file: "v1/busy/cpuacct.usage", want: 1508382498},
	})
	runParse(t, ParseCPUShares, []parseCase[uint64]{
		{name: "fixture", file: "v1/oom-throttled/cpu.shares", want: 512},
	})
	runParse(t, ParseMemoryUsageInBytes, []parseCase[uint64]{
		{name: "fixture", file: "v1/busy/memory.usage_in_bytes", want: 75018240},
	})
	runParse(t, ParseMemoryMaxUsageInBytes, []parseCase[uint64]{
		{name: "fixture", file: "v1/busy/memory.max_usage_in_bytes", want: 75034624},
	})
	runParse(t, ParseMemoryFailcnt, []parseCase[uint64]{
		{name: "fixture", file: "v1/oom-throttled/memory.failcnt", want: 1082},
	})
}

func TestParseMemoryMax(t *testing.T) {
	runParse(t, ParseMemoryMax, []parseCase[MemoryLimit]{
		{name: "bytes", file: "v2/throttled/memory.max", want: MemoryLimit{Bytes: 268435456}},
		{name: "max", file: "v2/unlimited/memory.max", want: MemoryLimit{Unlimited: true}},
		{name: "max no newline", in: "max", want: MemoryLimit{Unlimited: true}},
		{name: "empty", in: "", wantErr: []string{"memory.max", "empty"}},
		{name: "MAX", in: "MAX\n", wantErr: []string{"memory.max", `"MAX"`}, wantIs: strconv.ErrSyntax},
	})
}

func TestParseMemoryStatV2(t *testing.T) {
	runParse(t, ParseMemoryStatV2, []parseCase[MemoryStatV2]{
		{name: "kernel 6.x", file: "v2/throttled/memory.stat", want: MemoryStatV2{
			AnonBytes: 241172480, FileBytes: 16777216, KernelBytes: 4194304,
			FileMappedBytes: 4194304, InactiveAnonBytes: 241037312, ActiveAnonBytes: 135168,
			InactiveFileBytes: 8388608, ActiveFileBytes: 8388608, SlabBytes: 2359296,
			WorkingsetRefaultFile: 1024, PgFault: 120034, PgMajFault: 210, PgScan: 40960, PgSteal: 38912,
		}},
		{name: "kernel 5.10", file: "v2/unlimited/memory.stat", want: MemoryStatV2{
			AnonBytes: 20971520, FileBytes: 50331648, FileMappedBytes: 7340032,
			InactiveAnonBytes: 20840448, ActiveAnonBytes: 131072, InactiveFileBytes: 41943040,
			ActiveFileBytes: 8388608, SlabBytes: 1957888, PgFault: 30712, PgMajFault: 12,
		}},
		{name: "odd spacing, no inactive_file", file: "v2/odd/memory.stat", want: MemoryStatV2{FileBytes: 8192}},
		{name: "empty", in: "", want: MemoryStatV2{}},
		{name: "malformed", in: "anon 1\ninactive_file 12k\n",
			wantErr: []string{"memory.stat", `"inactive_file"`, `"12k"`}, wantIs: strconv.ErrSyntax},
	})
}

func TestParseMemoryEvents(t *testing.T) {
	runParse(t, ParseMemoryEvents, []parseCase[MemoryEvents]{
		{name: "oom kills", file: "v2/throttled/memory.events", want: MemoryEvents{Max: 412, OOM: 3, OOMKill: 2}},
		{name: "kernel 5.10", file: "v2/unlimited/memory.events", want: MemoryEvents{}},
		{name: "only oom_kill", in: "oom_kill 4\nsock_throttled 9\n", want: MemoryEvents{OOMKill: 4}},
		{name: "malformed", in: "oom_kill x\n", wantErr: []string{"memory.events", `"oom_kill"`}, wantIs: strconv.ErrSyntax},
	})
}

func TestParsePressure(t *testing.T) {
	parse := func(r io.Reader) (Pressure, error) { return ParsePressure("cpu.pressure", r) }
	runParse(t, parse, []parseCase[Pressure]{
		{name: "some and full", file: "v2/throttled/cpu.pressure", want: Pressure{
			Some:    PressureLine{Avg10Percent: 23.41, Avg60Percent: 18.02, Avg300Percent: 6.77, TotalMicros: 61502231},
			Full:    PressureLine{Avg10Percent: 21.90, Avg60Percent: 16.83, Avg300Percent: 6.31, TotalMicros: 57940112},
			HasFull: true,
		}},
		{name: "no full line before 5.13", file: "v2/unlimited/cpu.pressure", want: Pressure{
			Some: PressureLine{Avg10Percent: 0.52, Avg60Percent: 0.31, Avg300Percent: 0.07, TotalMicros: 402113},
		}},
		{name: "empty", file: "v2/odd/memory.pressure", want: Pressure{}},
		{name: "saturated", in: "some avg10=100.00 avg60=99.99 avg300=0.01 total=18446744073709551615\n", want: Pressure{
			Some: PressureLine{Avg10Percent: 100, Avg60Percent: 99.99, Avg300Percent: 0.01, TotalMicros: 1<<64 - 1},
		}},
		{name: "unknown field and line", in: "some avg10=1.5 avg5=9 total=3\nburst avg10=x\n", want: Pressure{
			Some: PressureLine{Avg10Percent: 1.5, TotalMicros: 3},
		}},
		{name: "bad avg", in: "some avg10=1.2.3 avg60=0.00 avg300=0.00 total=0\n",
			wantErr: []string{"cpu.pressure", `"some avg10"`, `"1.2.3"`}, wantIs: strconv.ErrSyntax},
		{name: "nan", in: "full avg10=NaN\n", wantErr: []string{`"full avg10"`}, wantIs: strconv.ErrSyntax},
		{name: "negative", in: "some avg10=-1.00\n", wantErr: []string{`"some avg10"`}, wantIs: strconv.ErrSyntax},
		{name: "bad total", in: "some total=1.5\n", wantErr: []string{`"some total"`}, wantIs: strconv.ErrSyntax},
		{name: "field without =", in: "some avg10\n", wantErr: []string{`"some"`, `"avg10"`}, wantIs: strconv.ErrSyntax},
	})
}

func TestParseCPUStatV1(t *testing.T) {
	runParse(t, ParseCPUStatV1, []parseCase[CPUStatV1]{
		{name: "busy", file: "v1/busy/cpu.stat", want: CPUStatV1{Periods: 33, ThrottledPeriods: 29, ThrottledNanos: 962398923}},
		{name: "oom-throttled", file: "v1/oom-throttled/cpu.stat", want: CPUStatV1{Periods: 62, ThrottledPeriods: 53, ThrottledNanos: 2956978587}},
		{name: "root", file: "v1/root/cpu.stat", want: CPUStatV1{}},
		{name: "old kernel without bursts", in: "nr_periods 1\nnr_throttled 0\nthrottled_time 0\n", want: CPUStatV1{Periods: 1}},
		{name: "malformed", in: "throttled_time 0x10\n", wantErr: []string{"cpu.stat", `"throttled_time"`}, wantIs: strconv.ErrSyntax},
	})
}

func TestParseCFSQuota(t *testing.T) {
	type quota struct {
		Micros    uint64
		Unlimited bool
	}
	parse := func(r io.Reader) (quota, error) {
		q, u, err := ParseCFSQuota(r)
		return quota{q, u}, err
	}
	runParse(t, parse, []parseCase[quota]{
		{name: "busy", file: "v1/busy/cpu.cfs_quota_us", want: quota{Micros: 50000}},
		{name: "unlimited", file: "v1/root/cpu.cfs_quota_us", want: quota{Unlimited: true}},
		{name: "other negative", in: "-2\n", wantErr: []string{"cpu.cfs_quota_us", `"-2"`}, wantIs: strconv.ErrSyntax},
		{name: "zero", in: "0\n", wantErr: []string{"cpu.cfs_quota_us", "out of range"}},
		{name: "empty", in: "", wantErr: []string{"cpu.cfs_quota_us", "empty"}},
	})
}

func TestParseCFSPeriod(t *testing.T) {
	runParse(t, ParseCFSPeriod, []parseCase[uint64]{
		{name: "fixture", file: "v1/busy/cpu.cfs_period_us", want: 100000},
		{name: "zero", in: "0\n", wantErr: []string{"cpu.cfs_period_us", "out of range"}},
	})
}

func TestParseMemoryLimitInBytes(t *testing.T) {
	runParse(t, ParseMemoryLimitInBytes, []parseCase[MemoryLimit]{
		{name: "limited", file: "v1/busy/memory.limit_in_bytes", want: MemoryLimit{Bytes: 134217728}},
		{name: "unlimited 4k pages", file: "v1/root/memory.limit_in_bytes", want: MemoryLimit{Unlimited: true}},
		{name: "unlimited 64k pages", in: "9223372036854710272\n", want: MemoryLimit{Unlimited: true}},
		{name: "1 TiB", in: "1099511627776\n", want: MemoryLimit{Bytes: 1 << 40}},
		{name: "minus one", in: "-1\n", wantErr: []string{"memory.limit_in_bytes"}, wantIs: strconv.ErrSyntax},
	})
}

func TestParseMemoryStatV1(t *testing.T) {
	runParse(t, ParseMemoryStatV1, []parseCase[MemoryStatV1]{
		{name: "busy", file: "v1/busy/memory.stat", want: MemoryStatV1{
			CacheBytes: 25456640, RSSBytes: 48984064, MappedFileBytes: 221184,
			InactiveAnonBytes: 48979968, ActiveAnonBytes: 4096, InactiveFileBytes: 25149440, ActiveFileBytes: 307200,
			HierarchicalMemoryLimitBytes: 134217728,
			TotalCacheBytes:              25456640, TotalRSSBytes: 48984064, TotalMappedFileBytes: 221184,
			TotalInactiveAnonBytes: 48979968, TotalActiveAnonBytes: 4096,
			TotalInactiveFileBytes: 25149440, TotalActiveFileBytes: 307200,
			TotalPgMajFault: 4, TotalWorkingsetRefaultFile: 6219,
			HasTotalInactiveFile: true, HasTotalRSS: true, HasTotalCache: true,
		}},
		{name: "no totals", in: "cache 10\nrss 20\ninactive_file 5\n", want: MemoryStatV1{
			CacheBytes: 10, RSSBytes: 20, InactiveFileBytes: 5,
		}},
		{name: "malformed", in: "total_inactive_file 1,024\n",
			wantErr: []string{"memory.stat", `"total_inactive_file"`, `"1,024"`}, wantIs: strconv.ErrSyntax},
	})
}

func TestMemoryStatV1Fallbacks(t *testing.T) {
	b := fixture(t, "v1/root/memory.stat")
	s, err := parseMemoryStatV1(b)
	if err != nil {
		t.Fatal(err)
	}
	// The root's totals include every descendant; the local keys do not.
	got := [3]uint64{s.inactiveFileBytes(), s.anonBytes(), s.fileBytes()}
	want := [3]uint64{1322979328, 190074880, 2802462720}
	if got != want {
		t.Errorf("hierarchical: got %v, want %v", got, want)
	}
	s, err = parseMemoryStatV1([]byte("cache 10\nrss 20\ninactive_file 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	got = [3]uint64{s.inactiveFileBytes(), s.anonBytes(), s.fileBytes()}
	if want := [3]uint64{5, 20, 10}; got != want {
		t.Errorf("local: got %v, want %v", got, want)
	}
}

func TestParseMemoryOOMControl(t *testing.T) {
	runParse(t, ParseMemoryOOMControl, []parseCase[OOMControl]{
		{name: "killed", file: "v1/oom-throttled/memory.oom_control", want: OOMControl{Kills: 1}},
		{name: "quiet", file: "v1/busy/memory.oom_control", want: OOMControl{}},
		{name: "under oom, killer off", in: "oom_kill_disable 1\nunder_oom 1\n", want: OOMControl{KillDisable: true, UnderOOM: true}},
		{name: "flag out of range", in: "under_oom 2\n", wantErr: []string{"memory.oom_control", `"under_oom"`, "out of range"}},
		{name: "malformed", in: "oom_kill -\n", wantErr: []string{`"oom_kill"`}, wantIs: strconv.ErrSyntax},
	})
}

func TestParseDecimalExact(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{
		{"0", 0}, {"0.00", 0}, {"23.41", 23.41}, {"100.00", 100}, {"6.77", 6.77},
		{"0.01", 0.01}, {"99.99", 99.99}, {"1.5", 1.5}, {"007.50", 7.5},
	} {
		got, err := parseDecimal([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("parseDecimal(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", ".", "1.", ".5", "1e3", "+1", "-0", "inf", "1.2.3", "1 .2"} {
		if got, err := parseDecimal([]byte(in)); err == nil {
			t.Errorf("parseDecimal(%q) = %v, want error", in, got)
		}
	}
}

func TestParseErrorMessage(t *testing.T) {
	_, err := ParseMemoryStatV2(strings.NewReader("anon " + strings.Repeat("z", 200) + "\n"))
	want := `parsing memory.stat: key "anon": value "` + strings.Repeat("z", 64) + `": invalid syntax`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestParseTooLarge(t *testing.T) {
	_, err := ParseMemoryStatV2(strings.NewReader(strings.Repeat("a", maxFileBytes+1)))
	if !errors.Is(err, errTooLarge) {
		t.Errorf("got %v, want %v", err, errTooLarge)
	}
}

func TestParseReaderError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ParseCPUStatV2(iotest.ErrReader(boom))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "cpu.stat") {
		t.Errorf("got %v, want wrapped %v naming cpu.stat", err, boom)
	}
}
