package recommend

import (
	"testing"
	"time"
)

// BenchmarkObserve measures one sample of one container: learning, both
// fast paths, the baseline and the gates. It must not allocate.
func BenchmarkObserve(b *testing.B) {
	for _, bc := range []struct {
		name string
		s    sig
	}{
		{"calm", sig{cpuMillis: 150, cpuLimit: 400, wsBytes: 100 << 20, memLimit: 256 << 20}},
		{"throttled", sig{cpuMillis: 400, throttled: 1, cpuLimit: 400, wsBytes: 100 << 20, memLimit: 256 << 20}},
		{"near memory limit", sig{cpuMillis: 150, cpuLimit: 400, wsBytes: 250 << 20, memLimit: 256 << 20, psiMemory: 0.3}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			_, c := newContainer(b, DefaultConfig(), Bounds{})
			cur := Resources{CPURequestMillis: 200, CPULimitMillis: 400, MemRequestBytes: 128 << 20, MemLimitBytes: 256 << 20}
			for i := range 600 { // warm up: histograms filled, past warm-up
				c.Observe(t0.Add(time.Duration(i)*time.Second), bc.s.at(i), cur)
			}
			b.ReportAllocs()
			i := 600
			for b.Loop() {
				c.Observe(t0.Add(time.Duration(i)*time.Second), bc.s.at(i), cur)
				i++
			}
		})
	}
}

func TestObserveDoesNotAllocate(t *testing.T) {
	_, c := newContainer(t, DefaultConfig(), Bounds{})
	cur := Resources{CPURequestMillis: 200, CPULimitMillis: 400, MemRequestBytes: 128 << 20, MemLimitBytes: 256 << 20}
	i := 0
	for _, s := range []sig{
		{cpuMillis: 150, cpuLimit: 400, wsBytes: 100 << 20, memLimit: 256 << 20},
		{cpuMillis: 400, throttled: 1, cpuLimit: 400, wsBytes: 250 << 20, memLimit: 256 << 20, psiMemory: 0.3},
	} {
		allocs := testing.AllocsPerRun(500, func() {
			c.Observe(t0.Add(time.Duration(i)*time.Second), s.at(i), cur)
			i++
		})
		if allocs != 0 {
			t.Errorf("Observe allocates %v times per sample", allocs)
		}
	}
}

func BenchmarkHistogramAdd(b *testing.B) {
	h := NewHistogram(ScaleCPUMillis, 5*time.Minute)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Add(float64(100+i%300), 1, t0.Add(time.Duration(i)*time.Second))
		i++
	}
}

func BenchmarkPercentile(b *testing.B) {
	h := NewHistogram(ScaleCPUMillis, 5*time.Minute)
	for i := range 3600 {
		h.Add(float64(10+i%2000), 1, t0.Add(time.Duration(i)*time.Second))
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = h.Percentile(0.9)
	}
}

func BenchmarkMarshalBinary(b *testing.B) {
	h := NewHistogram(ScaleCPUMillis, 5*time.Minute)
	for i := range 3600 {
		h.Add(float64(10+i%2000), 1, t0.Add(time.Duration(i)*time.Second))
	}
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		out, _ = h.MarshalBinary()
	}
	b.ReportMetric(float64(len(out)), "checkpoint-bytes")
}
