package recommend

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// within asserts |got-want| <= tol*|want|.
func within(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Abs(want) {
		t.Errorf("%s = %v, want %v within %.0f%%", name, got, want, tol*100)
	}
}

func TestLayouts(t *testing.T) {
	for _, s := range []Scale{ScaleCPUMillis, ScaleMemBytes} {
		l := layouts[s]
		if l.start(l.buckets-1) < l.max || l.start(l.buckets-2) >= l.max {
			t.Errorf("%v: %d buckets do not end just past %v", s, l.buckets, l.max)
		}
		for _, v := range []float64{0, 1, 50, 1234, 1 << 20, 3e8, l.max / 2} {
			i := l.bucket(v)
			if v < l.start(i)*(1-1e-12) || (i < l.buckets-1 && v >= l.start(i+1)*(1+1e-12)) {
				t.Errorf("%v: value %v in bucket %d [%v, %v)", s, v, i, l.start(i), l.start(i+1))
			}
		}
	}
	if got := layouts[ScaleCPUMillis].buckets; got != 223 {
		t.Errorf("cpu buckets = %d, want 223", got)
	}
}

func TestPercentileUniform(t *testing.T) {
	h := NewHistogram(ScaleCPUMillis, time.Hour)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 10000 {
		h.Add(100+rng.Float64()*900, 1, t0.Add(time.Duration(i)*time.Millisecond))
	}
	for _, tc := range []struct{ p, want float64 }{{0.5, 550}, {0.9, 910}, {0.95, 955}, {0.1, 190}} {
		// One bucket (5%) of resolution, plus sampling noise.
		within(t, "p"+ftoa(tc.p), h.Percentile(tc.p), tc.want, 0.06)
	}
	if got := NewHistogram(ScaleCPUMillis, time.Hour).Percentile(0.9); got != 0 {
		t.Errorf("empty percentile = %v, want 0", got)
	}
	// Percentiles return bucket ends: never below the true quantile.
	h2 := NewHistogram(ScaleCPUMillis, time.Hour)
	h2.Add(400, 1, t0)
	if got := h2.Percentile(1); got < 400 || got > 400*1.06 {
		t.Errorf("single sample p100 = %v, want in [400, 424]", got)
	}
}

func ftoa(f float64) string { return string(rune('0'+int(f*10))) + string(rune('0'+int(f*100)%10)) }

func TestDecay(t *testing.T) {
	hl := time.Minute
	h := NewHistogram(ScaleCPUMillis, hl)
	h.Add(100, 1, t0)
	within(t, "weight after one half-life", h.Weight(t0.Add(hl)), 0.5, 1e-9)
	h.Add(1000, 1, t0.Add(hl))
	// At t0+hl the 100m sample weighs 0.5 and the 1000m sample 1: 1/3 of
	// the weight is at 100m.
	if got := h.Percentile(0.3); got > 110 {
		t.Errorf("p30 = %v, want the 100m bucket", got)
	}
	if got := h.Percentile(0.4); got < 1000 {
		t.Errorf("p40 = %v, want the 1000m bucket", got)
	}

	// Many half-lives later weights are rescaled, not overflowed, and old
	// samples no longer count.
	for i := range 200 {
		h.Add(50, 1, t0.Add(time.Duration(i+2)*hl))
	}
	if math.IsInf(h.total, 0) || math.IsNaN(h.total) {
		t.Fatalf("total overflowed: %v", h.total)
	}
	if got := h.Percentile(0.999); got > 55 {
		t.Errorf("p99.9 after 200 half-lives = %v, want the 50m bucket", got)
	}
	if h.first != layouts[ScaleCPUMillis].bucket(50) {
		t.Errorf("decayed buckets were not trimmed: first = %d", h.first)
	}
}

// TestStepResponse checks the documented lag: after a long phase at one
// level, the p90 follows a step up after about 0.15 half-lives and a step
// down after about 3.3 half-lives (log2(1/(1-0.9)) and log2(1/0.9)).
func TestStepResponse(t *testing.T) {
	hl := 5 * time.Minute
	for _, tc := range []struct {
		name           string
		before, after  float64
		wantSeconds    float64
		crossedIfAbove bool
	}{
		{"up", 100, 400, hl.Seconds() * math.Log2(1/0.9), true},
		{"down", 400, 100, hl.Seconds() * math.Log2(10), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistogram(ScaleCPUMillis, hl)
			now := t0
			for range 3 * 3600 {
				h.Add(tc.before, 1, now)
				now = now.Add(time.Second)
			}
			mid := (tc.before + tc.after) / 2
			var took float64
			for s := 1; s < 3*3600; s++ {
				h.Add(tc.after, 1, now)
				now = now.Add(time.Second)
				p := h.Percentile(0.9)
				if (tc.crossedIfAbove && p > mid) || (!tc.crossedIfAbove && p < mid) {
					took = float64(s)
					break
				}
			}
			within(t, "seconds to follow", took, tc.wantSeconds, 0.05)
		})
	}
}

func TestMergeEqualsFeedingAll(t *testing.T) {
	hl := 10 * time.Minute
	all := NewHistogram(ScaleMemBytes, hl)
	a := NewHistogram(ScaleMemBytes, hl)
	b := NewHistogram(ScaleMemBytes, hl)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		at := t0.Add(time.Duration(i) * time.Second)
		v := float64(64<<20) + rng.Float64()*float64(512<<20)
		all.Add(v, 1, at)
		// b starts later, so the merge must align reference times.
		if i%3 == 0 || i < 1000 {
			a.Add(v, 1, at)
		} else {
			b.Add(v, 1, at)
		}
	}
	ab := a.Clone()
	if err := ab.Merge(b); err != nil {
		t.Fatal(err)
	}
	ba := b.Clone()
	if err := ba.Merge(a); err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*Histogram{"a+b": ab, "b+a": ba} {
		if !m.Equal(all, 1e-9) {
			t.Errorf("%s differs from one histogram fed every sample", name)
		}
		for _, p := range []float64{0.5, 0.9, 0.95} {
			if got, want := m.Percentile(p), all.Percentile(p); got != want {
				t.Errorf("%s p%v = %v, want %v", name, p, got, want)
			}
		}
		within(t, name+" weight", m.Weight(t0.Add(time.Hour)), all.Weight(t0.Add(time.Hour)), 1e-9)
	}

	// Merging an empty histogram, or into one, changes nothing.
	e := NewHistogram(ScaleMemBytes, hl)
	if err := e.Merge(a); err != nil || !e.Equal(a, 1e-12) {
		t.Errorf("merge into empty: err %v, equal %v", err, e.Equal(a, 1e-12))
	}
	if err := a.Merge(NewHistogram(ScaleMemBytes, hl)); err != nil {
		t.Error(err)
	}
}

func TestMergeIncompatible(t *testing.T) {
	a := NewHistogram(ScaleCPUMillis, time.Minute)
	for _, b := range []*Histogram{NewHistogram(ScaleMemBytes, time.Minute), NewHistogram(ScaleCPUMillis, time.Hour)} {
		if err := a.Merge(b); !errors.Is(err, errIncompatible) {
			t.Errorf("merge %v/%v: err = %v, want errIncompatible", b.Scale(), b.HalfLife(), err)
		}
	}
}

func TestAddIgnoresBadWeights(t *testing.T) {
	h := NewHistogram(ScaleCPUMillis, time.Minute)
	for _, w := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		h.Add(100, w, t0)
	}
	if !h.Empty() {
		t.Errorf("histogram took weight %v", h.total)
	}
	h.Add(math.NaN(), 1, t0)
	h.Add(-5, 1, t0)
	h.Add(1e300, 1, t0)
	if got := h.Percentile(1); got != layouts[ScaleCPUMillis].max {
		t.Errorf("p100 = %v, want the scale maximum", got)
	}
	if got := h.Percentile(0.5); got > 2 {
		t.Errorf("p50 = %v, want the first bucket", got)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	hl := 30 * time.Minute
	h := NewHistogram(ScaleMemBytes, hl)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 20000 {
		h.Add(float64(100<<20)*(1+rng.ExpFloat64()), 1, t0.Add(time.Duration(i)*time.Second))
	}
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 4*layouts[ScaleMemBytes].buckets+32 {
		t.Errorf("checkpoint is %d bytes", len(b))
	}
	var got Histogram
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !got.Equal(h, 1e-5) {
		t.Error("decoded histogram differs")
	}
	for _, p := range []float64{0.5, 0.9, 0.95, 0.99} {
		if g, w := got.Percentile(p), h.Percentile(p); g != w {
			t.Errorf("p%v = %v after round trip, want %v", p, g, w)
		}
	}
	within(t, "weight", got.Weight(t0.Add(10*time.Hour)), h.Weight(t0.Add(10*time.Hour)), 1e-6)

	text, _ := h.MarshalText()
	var fromText Histogram
	if err := fromText.UnmarshalText(text); err != nil || !fromText.Equal(h, 1e-5) {
		t.Errorf("text round trip: err %v", err)
	}

	// The empty histogram round-trips too.
	e := NewHistogram(ScaleCPUMillis, time.Minute)
	eb, _ := e.MarshalBinary()
	var ge Histogram
	if err := ge.UnmarshalBinary(eb); err != nil || !ge.Empty() || ge.HalfLife() != time.Minute {
		t.Errorf("empty round trip: err %v, %+v", err, ge)
	}
}

func TestCheckpointRejects(t *testing.T) {
	good := NewHistogram(ScaleCPUMillis, time.Minute)
	good.Add(100, 1, t0)
	gb, _ := good.MarshalBinary()
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), gb...)) }
	for name, data := range map[string][]byte{
		"empty":         nil,
		"magic":         mut(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version":       mut(func(b []byte) []byte { b[2] = 9; return b }),
		"scale":         mut(func(b []byte) []byte { b[3] = 7; return b }),
		"truncated":     gb[:len(gb)-1],
		"trailing":      append(append([]byte(nil), gb...), 0),
		"zero halflife": {'S', 'H', 1, 1, 0},
	} {
		var h Histogram
		if err := h.UnmarshalBinary(data); !errors.Is(err, ErrBadCheckpoint) {
			t.Errorf("%s: err = %v, want ErrBadCheckpoint", name, err)
		}
	}
	var h Histogram
	if err := h.UnmarshalText([]byte("!!!")); !errors.Is(err, ErrBadCheckpoint) {
		t.Errorf("bad base64: err = %v", err)
	}
}

func FuzzHistogramDecode(f *testing.F) {
	h := NewHistogram(ScaleCPUMillis, time.Minute)
	for i := range 100 {
		h.Add(float64(i*7), 1, t0.Add(time.Duration(i)*time.Second))
	}
	b, _ := h.MarshalBinary()
	f.Add(b)
	e, _ := NewHistogram(ScaleMemBytes, time.Hour).MarshalBinary()
	f.Add(e)
	f.Add([]byte{'S', 'H', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var h Histogram
		if err := h.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrBadCheckpoint) {
				t.Fatalf("error %v does not match ErrBadCheckpoint", err)
			}
			return
		}
		// A decoded histogram is usable, and one encoding reaches a fixed
		// point: the checkpoint of a decoded checkpoint decodes to the same
		// histogram. (Arbitrary input is not normalized as the encoder's
		// output is, so the first re-encoding may quantize it.)
		_ = h.Percentile(0.9)
		h2 := h.Clone()
		h2.Add(10, 1, h.ref.Add(time.Second))
		b1, _ := h.MarshalBinary()
		var g1, g2 Histogram
		if err := g1.UnmarshalBinary(b1); err != nil {
			t.Fatalf("decoding a checkpoint: %v", err)
		}
		if !g1.Equal(&h, 1e-3) {
			t.Fatal("first round trip moved more than quantization allows")
		}
		b2, _ := g1.MarshalBinary()
		if err := g2.UnmarshalBinary(b2); err != nil {
			t.Fatalf("decoding a checkpoint: %v", err)
		}
		if !g2.Equal(&g1, 1e-9) || g2.Percentile(0.9) != g1.Percentile(0.9) {
			t.Fatal("second round trip changed the histogram")
		}
	})
}
