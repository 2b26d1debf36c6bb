package recommend

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Scale is the bucket layout of a Histogram: which unit its values are in and
// how its buckets grow. Histograms merge only with histograms of the same
// Scale and half-life.
type Scale uint8

// The scales. Both are exponential: bucket i starts at
// first * (ratio^i - 1) / (ratio - 1), so a bucket is first wide near zero and
// about 5% of its value wide further up, as in VPA's histograms.
const (
	// ScaleCPUMillis holds millicores: first bucket 1m wide, ratio 1.05,
	// up to 1000 cores, 223 buckets.
	ScaleCPUMillis Scale = 1
	// ScaleMemBytes holds bytes: first bucket 1 MiB wide, ratio 1.05, up to
	// 1 TiB, 224 buckets.
	ScaleMemBytes Scale = 2
)

const bucketRatio = 1.05

type layout struct {
	first, max float64
	buckets    int
}

var layouts = [...]layout{
	ScaleCPUMillis: newLayout(1, 1e6),
	ScaleMemBytes:  newLayout(1<<20, 1<<40),
}

func newLayout(first, max float64) layout {
	n := int(math.Ceil(math.Log(1+max*(bucketRatio-1)/first)/math.Log(bucketRatio))) + 1
	return layout{first: first, max: max, buckets: n}
}

func (s Scale) valid() bool { return s == ScaleCPUMillis || s == ScaleMemBytes }

// String returns "cpu" or "memory".
func (s Scale) String() string {
	switch s {
	case ScaleCPUMillis:
		return "cpu"
	case ScaleMemBytes:
		return "memory"
	}
	return fmt.Sprintf("Scale(%d)", uint8(s))
}

func (l layout) bucket(v float64) int {
	if !(v > 0) { // also NaN
		return 0
	}
	i := int(math.Log(1+v*(bucketRatio-1)/l.first) / math.Log(bucketRatio))
	return min(max(i, 0), l.buckets-1)
}

func (l layout) start(i int) float64 {
	return l.first * (math.Pow(bucketRatio, float64(i)) - 1) / (bucketRatio - 1)
}

// maxDecayExponent bounds the growth of stored weights: once a new sample
// would be weighted 2^maxDecayExponent relative to the reference time, the
// histogram moves its reference time forward and rescales.
const maxDecayExponent = 50

// Histogram is an exponentially decaying histogram of samples, like VPA's
// DecayingHistogram: a sample's weight halves every half-life, so a
// percentile describes the recent past, with the half-life as its memory.
//
// Weights are stored relative to a reference time: a sample at time t is
// added with weight w * 2^((t - ref) / halfLife), so decay costs nothing per
// sample and ratios between buckets (all a percentile needs) never change as
// time passes. When the factor grows past 2^50 the reference moves forward
// and every weight is rescaled once.
//
// Histograms with the same Scale and half-life merge by adding weights, so
// per-pod histograms add up to a workload's. MarshalBinary gives a compact
// checkpoint (a few hundred bytes at most).
//
// The zero value is not usable; use NewHistogram. A Histogram is not safe for
// concurrent use.
type Histogram struct {
	scale       Scale
	halfLife    time.Duration
	ref         time.Time
	weights     []float64
	total       float64
	first, last int // lowest and highest non-empty bucket; first > last when empty
}

// NewHistogram returns an empty histogram of the given scale whose weights
// halve every halfLife. It panics if scale is unknown or halfLife is not
// positive: both are programming errors.
func NewHistogram(scale Scale, halfLife time.Duration) *Histogram {
	if !scale.valid() || halfLife <= 0 {
		panic(fmt.Sprintf("recommend: bad histogram scale %d or half-life %v", scale, halfLife))
	}
	return &Histogram{
		scale:    scale,
		halfLife: halfLife,
		weights:  make([]float64, layouts[scale].buckets),
		first:    layouts[scale].buckets,
		last:     -1,
	}
}

// Scale returns the histogram's scale.
func (h *Histogram) Scale() Scale { return h.scale }

// HalfLife returns the time in which a sample's weight halves.
func (h *Histogram) HalfLife() time.Duration { return h.halfLife }

// Empty reports whether the histogram holds no weight.
func (h *Histogram) Empty() bool { return h.total <= 0 }

// Add records value (millicores or bytes, per the Scale) with the given
// weight at time now. Non-positive weights are ignored; negative and NaN
// values count as 0, values beyond the scale's maximum go to the last bucket.
func (h *Histogram) Add(value, weight float64, now time.Time) {
	if !(weight > 0) || math.IsInf(weight, 0) {
		return
	}
	if h.total <= 0 || h.ref.IsZero() {
		h.ref = now
	}
	exp := h.exponent(now)
	if exp > maxDecayExponent {
		h.shift(now)
		exp = 0
	}
	w := weight * math.Exp2(exp)
	i := layouts[h.scale].bucket(value)
	h.weights[i] += w
	h.total += w
	h.first = min(h.first, i)
	h.last = max(h.last, i)
}

// exponent is (now - ref) in half-lives, bounded below so that stale
// samples cannot underflow to zero by accident.
func (h *Histogram) exponent(now time.Time) float64 {
	return max(float64(now.Sub(h.ref))/float64(h.halfLife), -maxDecayExponent)
}

// shift moves the reference time to now and rescales every weight.
func (h *Histogram) shift(now time.Time) {
	f := math.Exp2(-h.exponent(now))
	h.total = 0
	for i := h.first; i <= h.last; i++ {
		h.weights[i] *= f
		h.total += h.weights[i]
	}
	h.ref = now
	h.trim()
}

// trim drops buckets whose weight is a negligible part of the total, so that
// long-decayed history does not linger in first/last or in checkpoints.
func (h *Histogram) trim() {
	eps := h.total * 1e-12
	for h.first <= h.last && h.weights[h.first] <= eps {
		h.total -= h.weights[h.first]
		h.weights[h.first] = 0
		h.first++
	}
	for h.last >= h.first && h.weights[h.last] <= eps {
		h.total -= h.weights[h.last]
		h.weights[h.last] = 0
		h.last--
	}
	if h.first > h.last {
		h.reset()
	}
}

func (h *Histogram) reset() {
	clear(h.weights)
	h.total = 0
	h.first, h.last = len(h.weights), -1
	h.ref = time.Time{}
}

// Weight returns the total decayed weight at time now: with one sample of
// weight 1 per second it tends to halfLife/ln 2 seconds' worth.
func (h *Histogram) Weight(now time.Time) float64 {
	if h.total <= 0 {
		return 0
	}
	return h.total * math.Exp2(-h.exponent(now))
}

// Percentile returns the smallest bucket end below which at least the
// fraction p (0-1) of the weight lies: an upper estimate of the p-quantile,
// within one bucket (about 5%). It returns 0 for an empty histogram.
func (h *Histogram) Percentile(p float64) float64 {
	return percentile(h, nil, 0, p)
}

// percentile computes a percentile of a + scaleB*b (b may be nil). a and b
// must share a scale.
func percentile(a, b *Histogram, scaleB float64, p float64) float64 {
	total := a.total
	first, last := a.first, a.last
	if b != nil && b.total > 0 {
		total += b.total * scaleB
		first, last = min(first, b.first), max(last, b.last)
	}
	if total <= 0 || first > last {
		return 0
	}
	p = min(max(p, 0), 1)
	want := p * total
	l := layouts[a.scale]
	sum := 0.0
	for i := first; i <= last; i++ {
		sum += a.weights[i]
		if b != nil {
			sum += b.weights[i] * scaleB
		}
		// The tolerance keeps rounding in the running sum from moving p=1
		// (or a p landing on a bucket edge) one bucket too far.
		if sum >= want*(1-1e-12) && sum > 0 {
			if i == l.buckets-1 {
				return l.max
			}
			return l.start(i + 1)
		}
	}
	if last == l.buckets-1 {
		return l.max
	}
	return l.start(last + 1)
}

// relativeScale returns the factor by which b's stored weights must be
// multiplied to be on a's scale (same reference time).
func relativeScale(a, b *Histogram) float64 {
	if a.total <= 0 || b.total <= 0 {
		return 1
	}
	return math.Exp2(float64(b.ref.Sub(a.ref)) / float64(a.halfLife))
}

// errIncompatible is returned by Merge for histograms of different layouts.
var errIncompatible = errors.New("histograms differ in scale or half-life")

// Merge adds other's weights into h. Both must have the same Scale and
// half-life. Merging is exact up to floating point: it commutes, and the
// percentiles of the merge are those of one histogram fed all the samples.
func (h *Histogram) Merge(other *Histogram) error {
	if other.scale != h.scale || other.halfLife != h.halfLife {
		return fmt.Errorf("merging a %v histogram (half-life %v) into a %v one (half-life %v): %w",
			other.scale, other.halfLife, h.scale, h.halfLife, errIncompatible)
	}
	if other.total <= 0 {
		return nil
	}
	if h.total <= 0 {
		h.ref = other.ref
	}
	if other.ref.After(h.ref) {
		h.shift(other.ref)
		if h.total <= 0 {
			h.ref = other.ref
		}
	}
	f := relativeScale(h, other)
	for i := other.first; i <= other.last; i++ {
		h.weights[i] += other.weights[i] * f
	}
	h.total += other.total * f
	h.first = min(h.first, other.first)
	h.last = max(h.last, other.last)
	return nil
}

// Clone returns a deep copy of h.
func (h *Histogram) Clone() *Histogram {
	c := *h
	c.weights = append([]float64(nil), h.weights...)
	return &c
}

// Equal reports whether h and other have the same layout and, at equal
// reference times, the same weights within a relative tolerance tol. It is
// meant for tests and round-trip checks.
func (h *Histogram) Equal(other *Histogram, tol float64) bool {
	if h.scale != other.scale || h.halfLife != other.halfLife {
		return false
	}
	if h.total <= 0 || other.total <= 0 {
		return h.total <= 0 && other.total <= 0
	}
	f := relativeScale(h, other)
	for i := range h.weights {
		a, b := h.weights[i], other.weights[i]*f
		if math.Abs(a-b) > tol*h.total {
			return false
		}
	}
	return true
}
