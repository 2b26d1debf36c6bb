package quality

import "math"

// endedSlackSeconds forgives a sampling clock's jitter: two intervals a
// ticker meant as 1 s each may add up to 1.998 s. It is well under the
// CFS period (100 ms), the finest step throttling has.
const endedSlackSeconds = 0.05

// Calm reports whether an interval in which a container ran with this
// throttled fraction (throttled CFS periods over runnable ones) counts
// toward the end of its starvation. NaN, a container not running or not
// read, is not calm.
func Calm(throttledFraction float64) bool { return throttledFraction < ThrottledSecond }

// Ending says when starvation ended after a load step, by the definition
// the replay (Metrics.Ended) and the lab's benches (snug-lab bench
// reaction, the demo) share: at the end of the first EndedSeconds in which
// every container ran Calm. It is fed one interval at a time, the same
// interval for every container, the first starting at the step. The zero
// value is not usable; NewEnding makes one. Not safe for concurrent use.
type Ending struct {
	// calm is the seconds each container has been calm, to the end of the
	// last interval.
	calm []float64
	// elapsed is the seconds from the step to the end of the last
	// interval; ended is elapsed when starvation ended, NaN before.
	elapsed, ended float64
}

// NewEnding follows n containers from a load step.
func NewEnding(n int) *Ending {
	return &Ending{calm: make([]float64, n), ended: math.NaN()}
}

// Observe takes in the next interval, seconds long: throttled[i] is
// container i's throttled fraction over it (NaN when not running or not
// read). It reports whether starvation has ended, now or before; once
// ended, further intervals change nothing. A throttled slice of the wrong
// length or a non-positive interval counts as not calm.
func (e *Ending) Observe(seconds float64, throttled []float64) bool {
	if !math.IsNaN(e.ended) {
		return true
	}
	if seconds > 0 {
		e.elapsed += seconds
	}
	all := len(e.calm) > 0
	for i := range e.calm {
		if seconds > 0 && len(throttled) == len(e.calm) && Calm(throttled[i]) {
			e.calm[i] += seconds
		} else {
			e.calm[i] = 0
		}
		all = all && e.calm[i] >= EndedSeconds-endedSlackSeconds
	}
	if all {
		e.ended = e.elapsed
	}
	return all
}

// Ended is the seconds from the step at which starvation ended; ok is
// false while it has not.
func (e *Ending) Ended() (seconds float64, ok bool) {
	return e.ended, !math.IsNaN(e.ended)
}

// Elapsed is the seconds from the step to the end of the last interval
// observed.
func (e *Ending) Elapsed() float64 { return e.elapsed }
