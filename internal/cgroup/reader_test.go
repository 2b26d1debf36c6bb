package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	testUID = "0e6a5b9c-1d2e-4f3a-8b7c-6d5e4f3a2b1c"
	testID  = "4f1c2b9e8d7a6c5b4a3928171605f4e3d2c1b0a99887766554433221100ffeed"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Samples the fixtures must read as. The numbers are checked against the
// fixture files by hand. Working sets are usage minus inactive file.
var (
	wantV2Throttled = Sample{
		Time: t0, Version: V2,
		CPUUsageMicros: 183492011, CPUPeriods: 3667, CPUThrottledPeriods: 1208, CPUThrottledMicros: 58120443,
		CPULimit:         CPULimit{QuotaMicros: 50000, PeriodMicros: 100000},
		CPUWeight:        10,
		MemoryUsageBytes: 262144000, MemoryWorkingSetBytes: 262144000 - 8388608,
		MemoryInactiveFileBytes: 8388608, MemoryAnonBytes: 241172480, MemoryFileBytes: 16777216,
		MemoryLimit: MemoryLimit{Bytes: 268435456}, MemoryPeakBytes: 268435456,
		MemoryLimitHits: 412, OOMKills: 2,
		PSI: PSI{
			Present: true,
			CPU: Pressure{
				Some:    PressureLine{Avg10Percent: 23.41, Avg60Percent: 18.02, Avg300Percent: 6.77, TotalMicros: 61502231},
				Full:    PressureLine{Avg10Percent: 21.90, Avg60Percent: 16.83, Avg300Percent: 6.31, TotalMicros: 57940112},
				HasFull: true,
			},
			Memory: Pressure{
				Some:    PressureLine{Avg10Percent: 4.12, Avg60Percent: 1.37, Avg300Percent: 0.31, TotalMicros: 1830457},
				Full:    PressureLine{Avg10Percent: 3.98, Avg60Percent: 1.30, Avg300Percent: 0.29, TotalMicros: 1741130},
				HasFull: true,
			},
			IO: Pressure{
				Some:    PressureLine{Avg60Percent: 0.05, Avg300Percent: 0.02, TotalMicros: 90231},
				Full:    PressureLine{Avg60Percent: 0.05, Avg300Percent: 0.02, TotalMicros: 88890},
				HasFull: true,
			},
		},
	}
	wantV2Unlimited = Sample{
		Time: t0, Version: V2,
		CPUUsageMicros:   9021554,
		CPULimit:         CPULimit{Unlimited: true, PeriodMicros: 100000},
		CPUWeight:        1,
		MemoryUsageBytes: 73400320, MemoryWorkingSetBytes: 73400320 - 41943040,
		MemoryInactiveFileBytes: 41943040, MemoryAnonBytes: 20971520, MemoryFileBytes: 50331648,
		MemoryLimit: MemoryLimit{Unlimited: true},
		PSI: PSI{
			Present: true,
			CPU:     Pressure{Some: PressureLine{Avg10Percent: 0.52, Avg60Percent: 0.31, Avg300Percent: 0.07, TotalMicros: 402113}},
			Memory:  Pressure{HasFull: true},
			IO:      Pressure{Some: PressureLine{TotalMicros: 1201}, Full: PressureLine{TotalMicros: 1187}, HasFull: true},
		},
	}
	wantV2Odd = Sample{
		Time: t0, Version: V2,
		CPUUsageMicros:   5000,
		CPULimit:         CPULimit{Unlimited: true}, // no cpu controller, no cpu.max
		MemoryUsageBytes: 4096, MemoryWorkingSetBytes: 4096, MemoryFileBytes: 8192,
		MemoryLimit: MemoryLimit{Unlimited: true},
		PSI:         PSI{Present: true},
	}
	wantV1Busy = Sample{
		Time: t0, Version: V1,
		CPUUsageMicros: 1508382, CPUPeriods: 33, CPUThrottledPeriods: 29, CPUThrottledMicros: 962398,
		CPULimit:         CPULimit{QuotaMicros: 50000, PeriodMicros: 100000},
		CPUShares:        1024,
		MemoryUsageBytes: 75018240, MemoryWorkingSetBytes: 75018240 - 25149440,
		MemoryInactiveFileBytes: 25149440, MemoryAnonBytes: 48984064, MemoryFileBytes: 25456640,
		MemoryLimit: MemoryLimit{Bytes: 134217728}, MemoryPeakBytes: 75034624,
	}
	wantV1OOM = Sample{
		Time: t0, Version: V1,
		CPUUsageMicros: 1398451, CPUPeriods: 62, CPUThrottledPeriods: 53, CPUThrottledMicros: 2956978,
		CPULimit:         CPULimit{QuotaMicros: 25000, PeriodMicros: 100000},
		CPUShares:        512,
		MemoryUsageBytes: 438272, MemoryWorkingSetBytes: 438272 - 40960,
		MemoryInactiveFileBytes: 40960, MemoryFileBytes: 45056,
		MemoryLimit: MemoryLimit{Bytes: 67108864}, MemoryPeakBytes: 67108864,
		MemoryLimitHits: 1082, OOMKills: 1,
	}
	wantV1Root = Sample{
		Time: t0, Version: V1,
		CPUUsageMicros:   768142684,
		CPULimit:         CPULimit{Unlimited: true, PeriodMicros: 100000},
		CPUShares:        1024,
		MemoryUsageBytes: 2965557248, MemoryWorkingSetBytes: 2965557248 - 1322979328,
		MemoryInactiveFileBytes: 1322979328, MemoryAnonBytes: 190074880, MemoryFileBytes: 2802462720,
		MemoryLimit: MemoryLimit{Unlimited: true}, MemoryPeakBytes: 3545710592,
	}
)

func TestReadFixtures(t *testing.T) {
	rel := "kubepods/burstable/pod" + testUID + "/" + testID
	for _, tc := range []struct {
		layout  hostLayout
		fixture string
		psi     string // v2 fixture whose PSI files the hybrid mount holds
		want    Sample
	}{
		{layout: hostUnified, fixture: "v2/throttled", want: wantV2Throttled},
		{layout: hostUnified, fixture: "v2/unlimited", want: wantV2Unlimited},
		{layout: hostUnified, fixture: "v2/odd", want: wantV2Odd},
		{layout: hostV1, fixture: "v1/busy", want: wantV1Busy},
		{layout: hostV1, fixture: "v1/oom-throttled", want: wantV1OOM},
		{layout: hostV1, fixture: "v1/root", want: wantV1Root},
		{layout: hostV1CoMounted, fixture: "v1/busy", want: wantV1Busy},
		{layout: hostV1CoMountedNoLinks, fixture: "v1/oom-throttled", want: wantV1OOM},
		// Hybrid: cpu and memory from v1, and no PSI files in the unified
		// mount's cgroup...
		{layout: hostHybrid, fixture: "v1/busy", want: wantV1Busy},
		// ...or PSI from there, when the kernel has it.
		{layout: hostHybrid, fixture: "v1/busy", psi: "v2/throttled", want: withPSI(wantV1Busy, wantV2Throttled.PSI)},
	} {
		t.Run(string(tc.layout)+"/"+tc.fixture+"+"+tc.psi, func(t *testing.T) {
			h := newHost(t, tc.layout)
			h.fill(rel, tc.fixture)
			if tc.psi != "" {
				for _, f := range []string{"cpu.pressure", "memory.pressure", "io.pressure"} {
					h.write(filepath.Join("unified", rel, f), string(fixture(t, filepath.Join(tc.psi, f))))
				}
			}
			r := Reader{Root: h.root}
			p, err := r.Find(testUID, "Burstable", "containerd://"+testID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Read(p, t0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Reader.Read mismatch (-want +got):\n%s", diff)
			}

			hd, err := r.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer hd.Close()
			for range 2 { // a second read must start again from offset 0
				got, err = hd.Read(t0)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Handle.Read mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func withPSI(s Sample, psi PSI) Sample {
	s.PSI = psi
	return s
}

// TestReadGone covers a container that exits before or during a read: its
// cgroup directories disappear, which is normal and must match ErrGone.
func TestReadGone(t *testing.T) {
	rel := "kubepods/besteffort/pod" + testUID + "/" + testID
	for _, tc := range []struct {
		name    string
		layout  hostLayout
		fixture string
		remove  func(p Path) []string
	}{
		{"v2 whole cgroup", hostUnified, "v2/throttled", func(p Path) []string { return []string{p.Unified} }},
		{"v1 whole cgroup", hostV1, "v1/busy", func(p Path) []string { return []string{p.CPU, p.CPUAcct, p.Memory, p.Unified} }},
		// cpu and cpuacct read fine, then memory is gone.
		{"v1 memory removed first", hostV1, "v1/busy", func(p Path) []string { return []string{p.Memory} }},
		{"v1 cpu removed", hostV1CoMounted, "v1/busy", func(p Path) []string { return []string{p.CPU} }},
		// An optional file's directory vanishing is not "old kernel".
		{"hybrid unified removed", hostHybrid, "v1/busy", func(p Path) []string { return []string{p.Unified} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, tc.layout)
			h.fill(rel, tc.fixture)
			r := Reader{Root: h.root}
			p, err := r.Find(testUID, "BestEffort", "containerd://"+testID)
			if err != nil {
				t.Fatal(err)
			}
			for _, dir := range tc.remove(p) {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
			}
			_, err = r.Read(p, t0)
			if !errors.Is(err, ErrGone) || !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("got %v, want an error matching ErrGone and fs.ErrNotExist", err)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "cgroup gone: ") {
				t.Errorf("error %q does not start with %q", err, "cgroup gone: ")
			}
		})
	}
}

// TestReadBroken covers problems that are not a container exiting and
// must not match ErrGone.
func TestReadBroken(t *testing.T) {
	rel := "kubepods/pod" + testUID + "/" + testID
	for _, tc := range []struct {
		name    string
		layout  hostLayout
		fixture string
		breakIt func(h *fakeHost)
		wantErr []string
		wantIs  error
	}{
		{
			name: "v2 memory controller off", layout: hostUnified, fixture: "v2/throttled",
			breakIt: func(h *fakeHost) { os.Remove(filepath.Join(h.root, rel, "memory.current")) },
			wantErr: []string{"controller file missing", "memory.current"}, wantIs: fs.ErrNotExist,
		},
		{
			name: "v2 malformed memory.stat", layout: hostUnified, fixture: "v2/throttled",
			breakIt: func(h *fakeHost) { h.write(filepath.Join(rel, "memory.stat"), "anon 1\ninactive_file ?\n") },
			wantErr: []string{"reading cgroup /" + rel + ": parsing memory.stat", `"inactive_file"`}, wantIs: strconv.ErrSyntax,
		},
		{
			name: "v2 malformed optional file", layout: hostUnified, fixture: "v2/throttled",
			breakIt: func(h *fakeHost) { h.write(filepath.Join(rel, "memory.peak"), "lots\n") },
			wantErr: []string{"memory.peak", `"lots"`}, wantIs: strconv.ErrSyntax,
		},
		{
			name: "v1 malformed limit", layout: hostV1, fixture: "v1/busy",
			breakIt: func(h *fakeHost) { h.write(filepath.Join("memory", rel, "memory.limit_in_bytes"), "-1\n") },
			wantErr: []string{"memory.limit_in_bytes"}, wantIs: strconv.ErrSyntax,
		},
		{
			name: "hybrid malformed PSI", layout: hostHybrid, fixture: "v1/busy",
			breakIt: func(h *fakeHost) {
				h.write(filepath.Join("unified", rel, "cpu.pressure"), "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
				h.write(filepath.Join("unified", rel, "io.pressure"), "some avg10=x\n")
			},
			wantErr: []string{"io.pressure", `"some avg10"`}, wantIs: strconv.ErrSyntax,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, tc.layout)
			h.fill(rel, tc.fixture)
			r := Reader{Root: h.root}
			p, err := r.Find(testUID, "guaranteed", "containerd://"+testID)
			if err != nil {
				t.Fatal(err)
			}
			tc.breakIt(h)
			_, err = r.Read(p, t0)
			if err == nil {
				t.Fatal("got no error")
			}
			if errors.Is(err, ErrGone) {
				t.Errorf("error %q matches ErrGone", err)
			}
			if !errors.Is(err, tc.wantIs) {
				t.Errorf("error %q does not match %v", err, tc.wantIs)
			}
			// Compare with the temporary root cut out of the paths.
			msg := strings.ReplaceAll(err.Error(), h.root, "")
			for _, s := range tc.wantErr {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not contain %q", msg, s)
				}
			}
		})
	}
}

func TestReadUnknownVersion(t *testing.T) {
	if _, err := (Reader{}).Read(Path{}, t0); err == nil || !strings.Contains(err.Error(), "unknown version") {
		t.Errorf("got %v, want unknown version error", err)
	}
}

func TestLayout(t *testing.T) {
	want := map[hostLayout]Layout{
		hostUnified:            LayoutUnified,
		hostV1:                 LayoutV1,
		hostV1CoMounted:        LayoutV1,
		hostV1CoMountedNoLinks: LayoutV1,
		hostHybrid:             LayoutHybrid,
	}
	for _, l := range allHostLayouts {
		got, err := Reader{Root: newHost(t, l).root}.Layout()
		if err != nil || got != want[l] {
			t.Errorf("%s: got %v, %v; want %v", l, got, err, want[l])
		}
	}
	for _, root := range []string{"", t.TempDir()} {
		if got, err := (Reader{Root: root}).Layout(); err == nil {
			t.Errorf("root %q: got %v, want error", root, got)
		}
	}
}

// TestReadLiveRoot reads the root cgroup of this machine's v1 controllers,
// to check the parsers against what the running kernel prints. It skips
// on hosts without v1 (pure v2 has no memory.current at the root).
func TestReadLiveRoot(t *testing.T) {
	r := Reader{Root: "/sys/fs/cgroup"}
	layout, err := r.Layout()
	if err != nil || (layout != LayoutV1 && layout != LayoutHybrid) {
		t.Skipf("no v1 cgroups here (layout %v, %v)", layout, err)
	}
	p := Path{Version: V1, CPU: "/sys/fs/cgroup/cpu", CPUAcct: "/sys/fs/cgroup/cpuacct", Memory: "/sys/fs/cgroup/memory"}
	if layout == LayoutHybrid {
		p.Unified = "/sys/fs/cgroup/unified"
	}
	s, err := r.Read(p, t0)
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUUsageMicros == 0 || s.MemoryUsageBytes == 0 || s.MemoryWorkingSetBytes > s.MemoryUsageBytes {
		t.Errorf("implausible root sample: %+v", s)
	}
	if !s.CPULimit.Unlimited || !s.MemoryLimit.Unlimited {
		t.Errorf("root cgroup should be unlimited: %+v %+v", s.CPULimit, s.MemoryLimit)
	}
	if layout == LayoutHybrid && !s.PSI.Present {
		t.Logf("hybrid host without PSI in the unified mount")
	}
}
