package agent

import (
	"testing"

	"github.com/snug-dev/snug/internal/recommend"
)

// TestHoldBaseline: for a pod sized at admission the baseline's moves
// toward the seed are held, the fast path's are kept.
func TestHoldBaseline(t *testing.T) {
	grow := recommend.Change{Action: recommend.Grow, Request: 200, Reason: recommend.Reason{Why: recommend.WhyAboveRequest, Request: 100, Value: 200}}
	shrink := recommend.Change{Action: recommend.Shrink, Request: 50, Reason: recommend.Reason{Why: recommend.WhyBelowRequest, Memory: true, Request: 100, Value: 50}}
	fast := recommend.Change{Action: recommend.Grow, Request: 300, Fast: true, Reason: recommend.Reason{Why: recommend.WhyThrottled, Request: 100}}

	got := holdBaseline(recommend.Decision{CPU: grow, Memory: shrink})
	if got.Resize() {
		t.Errorf("baseline grow and shrink kept: %+v", got)
	}
	if got.CPU.Request != 100 || got.Memory.Request != 100 {
		t.Errorf("held requests %d, %d, want the current 100", got.CPU.Request, got.Memory.Request)
	}
	got = holdBaseline(recommend.Decision{CPU: fast, Memory: shrink})
	if got.CPU != fast || got.Memory.Action != recommend.Hold {
		t.Errorf("fast path %+v, memory %+v: want the throttled grow kept and the shrink held", got.CPU, got.Memory)
	}
}
