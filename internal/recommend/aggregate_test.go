package recommend

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func feedContainer(t *testing.T, cfg Config, cpuMillis float64, wsBytes uint64, seconds int) *Container {
	t.Helper()
	_, c := newContainer(t, cfg, Bounds{})
	cur := Resources{CPURequestMillis: 1000, CPULimitMillis: 2000, MemRequestBytes: 1 << 30, MemLimitBytes: 2 << 30}
	for i := range seconds {
		c.Observe(t0.Add(time.Duration(i)*time.Second), sig{cpuMillis: cpuMillis, cpuLimit: 2000, wsBytes: wsBytes, memLimit: 2 << 30}.at(i), cur)
	}
	return c
}

func TestAggregateMergeAndSeed(t *testing.T) {
	cfg := DefaultConfig()
	now := t0.Add(time.Hour)
	a := feedContainer(t, cfg, 100, 100<<20, 3600).Snapshot(now)
	b := feedContainer(t, cfg, 300, 300<<20, 3600).Snapshot(now)
	w := NewAggregate(cfg)
	for _, s := range []*Aggregate{a, b} {
		if err := w.Merge(s); err != nil {
			t.Fatal(err)
		}
	}
	if w.MemoryPeakBytes != 300<<20 {
		t.Errorf("peak = %s, want 300Mi", formatBytes(w.MemoryPeakBytes))
	}
	if w.CPUSeconds < 7000 {
		t.Errorf("cpu seconds = %v, want both pods' hours", w.CPUSeconds)
	}
	r, err := w.Recommendation(cfg, Bounds{}, now)
	if err != nil {
		t.Fatal(err)
	}
	// Half the weight at 100m, half at 300m: p90 is 300m's bucket.
	within(t, "workload cpu target", float64(r.CPU.Target), 302.4*1.15, 0.01)
	within(t, "workload memory target", float64(r.Memory.Target), 300<<20*1.2, 0.02)

	// A new pod seeded from it starts from the same recommendation, and its
	// own snapshot does not carry the seed.
	p, _ := NewPod(cfg)
	c, err := p.AddContainer("app", Bounds{}, w)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Recommendation(now); got != r {
		t.Errorf("seeded recommendation %+v, want the workload's %+v", got, r)
	}
	if s := c.Snapshot(now); !s.CPU.Empty() || s.CPUSeconds != 0 {
		t.Errorf("a fresh seeded container's snapshot holds weight %v", s.CPU.total)
	}
}

func TestAggregateRoundTrip(t *testing.T) {
	cfg := DefaultConfig()
	now := t0.Add(time.Hour)
	a := feedContainer(t, cfg, 250, 200<<20, 3600).Snapshot(now)
	b, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("aggregate checkpoint: %d bytes", len(b))
	var got Aggregate
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !got.CPU.Equal(a.CPU, 1e-5) || !got.Memory.Equal(a.Memory, 1e-5) {
		t.Error("histograms changed")
	}
	want := *a
	want.CPU, want.Memory, got.CPU, got.Memory = nil, nil, nil, nil
	want.MemoryPeakTime = want.MemoryPeakTime.Truncate(time.Millisecond)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("aggregate (-want +got):\n%s", diff)
	}
	text, _ := a.MarshalText()
	var fromText Aggregate
	if err := fromText.UnmarshalText(text); err != nil {
		t.Fatal(err)
	}
	if err := fromText.UnmarshalText([]byte("@@")); !errors.Is(err, ErrBadCheckpoint) {
		t.Errorf("bad text: %v", err)
	}
}

func FuzzAggregateDecode(f *testing.F) {
	a := NewAggregate(DefaultConfig())
	a.CPU.Add(100, 1, t0)
	a.Memory.Add(1<<30, 1, t0)
	a.MemoryPeakBytes, a.MemoryPeakTime = 1<<30, t0
	b, _ := a.MarshalBinary()
	f.Add(b)
	e, _ := NewAggregate(DefaultConfig()).MarshalBinary()
	f.Add(e)
	f.Fuzz(func(t *testing.T, data []byte) {
		var a Aggregate
		if err := a.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrBadCheckpoint) {
				t.Fatalf("error %v does not match ErrBadCheckpoint", err)
			}
			return
		}
		b, _ := a.MarshalBinary()
		var again Aggregate
		if err := again.UnmarshalBinary(b); err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
	})
}
