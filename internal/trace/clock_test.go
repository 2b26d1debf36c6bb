package trace

import (
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// fixedClock is a clock that always says t.
func fixedClock(t time.Time) clock.WithTicker { return testingclock.NewFakeClock(t) }
