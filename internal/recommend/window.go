package recommend

import "time"

// peakSlots is how many slots windowMax divides its window into.
const peakSlots = 12

// windowMax is the maximum of the values added in roughly the last window
// (between 11/12 and 12/12 of it), kept in a fixed array of per-slot maxima,
// so adding costs no allocation. The zero value is unusable; set width.
type windowMax struct {
	width time.Duration
	slots [peakSlots]struct {
		idx int64
		max float64
		set bool
	}
}

func newWindowMax(window time.Duration) windowMax {
	return windowMax{width: max(window/peakSlots, time.Nanosecond)}
}

func (w *windowMax) index(t time.Time) int64 { return t.UnixNano() / int64(w.width) }

func (w *windowMax) add(t time.Time, v float64) {
	idx := w.index(t)
	s := &w.slots[((idx%peakSlots)+peakSlots)%peakSlots]
	switch {
	case !s.set || idx > s.idx:
		s.idx, s.max, s.set = idx, v, true
	case idx == s.idx:
		s.max = max(s.max, v)
	}
}

// max returns the maximum over the slots still in the window at now, or 0.
func (w *windowMax) max(now time.Time) float64 {
	cur := w.index(now)
	m := 0.0
	for _, s := range w.slots {
		if s.set && s.idx > cur-peakSlots && s.idx <= cur {
			m = max(m, s.max)
		}
	}
	return m
}

// peakTime returns the time of the newest slot at or before now holding the
// maximum, for checkpoints; zero if none.
func (w *windowMax) peakTime(now time.Time) time.Time {
	cur := w.index(now)
	m, at := 0.0, int64(-1)
	for _, s := range w.slots {
		if s.set && s.idx > cur-peakSlots && s.idx <= cur && s.max >= m {
			if s.max > m || s.idx > at {
				m, at = s.max, s.idx
			}
		}
	}
	if at < 0 {
		return time.Time{}
	}
	return time.Unix(0, at*int64(w.width))
}
