package quality

import (
	"math"
	"testing"
)

// TestEnding holds the one definition of "starvation ended" to cases:
// every container calm (throttled under 5 %) for 2 s, counted from the end
// of the first interval.
func TestEnding(t *testing.T) {
	nan := math.NaN()
	type interval struct {
		seconds   float64
		throttled []float64
	}
	for _, tc := range []struct {
		name       string
		containers int
		intervals  []interval
		want       float64 // NaN: not ended
	}{
		{"calm from the step", 1, []interval{{1, []float64{0}}, {1, []float64{0.01}}}, 2},
		{"throttled, then calm", 1, []interval{{1, []float64{0.6}}, {1, []float64{0.3}}, {1, []float64{0}}, {1, []float64{0.049}}}, 4},
		{"5 % is throttled", 1, []interval{{1, []float64{0}}, {1, []float64{0.05}}, {1, []float64{0}}}, nan},
		{"one calm second is not enough", 1, []interval{{1, []float64{0.5}}, {1, []float64{0}}, {1, []float64{0.5}}, {1, []float64{0}}}, nan},
		{"every container", 2, []interval{{1, []float64{0, 0.2}}, {1, []float64{0, 0}}, {1, []float64{0, 0}}}, 3},
		{"a container not running is not calm", 2, []interval{{1, []float64{0, nan}}, {1, []float64{0, 0}}, {1, []float64{0, 0}}}, 3},
		{"uneven intervals add up", 1, []interval{{0.5, []float64{0.5}}, {0.999, []float64{0}}, {0.998, []float64{0}}}, 2.497},
		{"1.9 s calm is not 2 s", 1, []interval{{1, []float64{0}}, {0.9, []float64{0}}, {0.5, []float64{0}}}, 2.4},
		{"wrong length is not calm", 2, []interval{{1, []float64{0}}, {1, []float64{0}}, {1, []float64{0, 0}}}, nan},
		{"no containers never end", 0, []interval{{1, nil}, {1, nil}, {1, nil}}, nan},
		{"ended stays ended", 1, []interval{{1, []float64{0}}, {1, []float64{0}}, {1, []float64{1}}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEnding(tc.containers)
			for _, iv := range tc.intervals {
				e.Observe(iv.seconds, iv.throttled)
			}
			got, ok := e.Ended()
			if math.IsNaN(tc.want) {
				if ok {
					t.Errorf("ended at %v s, want not ended", got)
				}
				return
			}
			if !ok || math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("ended %v at %v s, want ended at %v s", ok, got, tc.want)
			}
		})
	}
}

func TestCalm(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want bool
	}{{0, true}, {0.0499, true}, {0.05, false}, {1, false}, {math.NaN(), false}} {
		if got := Calm(tc.f); got != tc.want {
			t.Errorf("Calm(%v) = %v, want %v", tc.f, got, tc.want)
		}
	}
}
