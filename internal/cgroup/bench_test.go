package cgroup

import (
	"bytes"
	"testing"
)

// BenchmarkReadSample reads one container from fixture trees: v2 (11
// files), v1 (11 files), and v1 on the lab's hybrid layout (plus 3 PSI
// files), each through Reader.Read and through a Handle.
// Fixture files sit on the test's temporary filesystem, so this measures
// the package's own cost (syscalls, parsing, allocations) and not the
// kernel's cost of producing memory.stat. BenchmarkReadSampleLive covers
// that part.
func BenchmarkReadSample(b *testing.B) {
	rel := "kubepods/burstable/pod" + testUID + "/" + testID
	for _, bc := range []struct {
		name    string
		layout  hostLayout
		fixture string
	}{
		{"v2", hostUnified, "v2/throttled"},
		{"v1", hostV1, "v1/busy"},
		{"hybrid", hostHybrid, "v1/busy"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHost(b, bc.layout)
			h.fill(rel, bc.fixture)
			if bc.layout == hostHybrid {
				for _, f := range []string{"cpu.pressure", "memory.pressure", "io.pressure"} {
					h.write("unified/"+rel+"/"+f, string(fixture(b, "v2/throttled/"+f)))
				}
			}
			r := Reader{Root: h.root}
			p, err := r.Find(testUID, "Burstable", "containerd://"+testID)
			if err != nil {
				b.Fatal(err)
			}
			benchReaders(b, r, p)
		})
	}
}

// benchReaders measures the stateless Reader.Read and a kept-open Handle.
func benchReaders(b *testing.B, r Reader, p Path) {
	b.Run("Reader.Read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Read(p, t0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Handle.Read", func(b *testing.B) {
		h, err := r.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.Read(t0); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadSampleLive reads this machine's root v1 cgroups (the
// kernel generates every file, and the root's memory.stat sums the whole
// hierarchy, so this is an upper bound for one container). It skips on hosts
// without v1.
func BenchmarkReadSampleLive(b *testing.B) {
	r := Reader{Root: "/sys/fs/cgroup"}
	layout, err := r.Layout()
	if err != nil || (layout != LayoutV1 && layout != LayoutHybrid) {
		b.Skipf("no v1 cgroups here (layout %v, %v)", layout, err)
	}
	p := Path{Version: V1, CPU: "/sys/fs/cgroup/cpu", CPUAcct: "/sys/fs/cgroup/cpuacct", Memory: "/sys/fs/cgroup/memory"}
	if layout == LayoutHybrid {
		p.Unified = "/sys/fs/cgroup/unified"
	}
	benchReaders(b, r, p)
}

// BenchmarkParse measures the parsers alone on the largest files.
func BenchmarkParse(b *testing.B) {
	for _, bc := range []struct {
		name  string
		file  string
		parse func([]byte) error
	}{
		{"memory.stat/v2", "v2/throttled/memory.stat", func(d []byte) error { _, err := parseMemoryStatV2(d); return err }},
		{"memory.stat/v1", "v1/busy/memory.stat", func(d []byte) error { _, err := parseMemoryStatV1(d); return err }},
		{"cpu.pressure", "v2/throttled/cpu.pressure", func(d []byte) error { _, err := parsePressure("cpu.pressure", d); return err }},
		{"cpu.stat/v2", "v2/throttled/cpu.stat", func(d []byte) error { _, err := parseCPUStatV2(d); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d := bytes.Clone(fixture(b, bc.file))
			b.SetBytes(int64(len(d)))
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.parse(d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
