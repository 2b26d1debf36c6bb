package policy

import (
	"time"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// DefaultBoostMax is how long at most the startup boost of a container with
// neither a readiness nor a startup probe lasts when its policy sets no
// durationSeconds: such a container is Ready as it starts, so its boost
// ends when its CPU use is back within what it had before, and this bounds
// a start-up that never calms down.
const DefaultBoostMax = 10 * time.Minute

// Boost is a container's startupBoost.cpu, read.
type Boost struct {
	// Factor multiplies the CPU request (type Factor); 0 for type
	// Quantity.
	Factor int64
	// AddMillis is added to the CPU request (type Quantity).
	AddMillis int64
	// After is durationSeconds: how long the boost lasts after the
	// container is Ready.
	After time.Duration
	// Max is how long the boost of a container without probes lasts at
	// most: durationSeconds when set, else DefaultBoostMax.
	Max time.Duration
}

// BoostOf reads a container policy's startupBoost; ok is false when it
// gives the container none (absent, factor 1, an unknown type).
func BoostOf(cp v1alpha1.ContainerResourcePolicy) (b Boost, ok bool) {
	sb := cp.StartupBoost
	if sb == nil {
		return Boost{}, false
	}
	c := sb.CPU
	switch c.Type {
	case v1alpha1.CPUBoostFactor:
		if c.Factor == nil || *c.Factor <= 1 {
			return Boost{}, false
		}
		b.Factor = int64(*c.Factor)
	case v1alpha1.CPUBoostQuantity:
		if c.Quantity == nil || c.Quantity.MilliValue() <= 0 {
			return Boost{}, false
		}
		b.AddMillis = c.Quantity.MilliValue()
	default:
		// As VPA: a type this version does not know gives no boost.
		return Boost{}, false
	}
	b.Max = DefaultBoostMax
	if c.DurationSeconds != nil {
		b.After = time.Duration(*c.DurationSeconds) * time.Second
		if b.After > 0 {
			b.Max = b.After
		}
	}
	return b, true
}

// RequestMillis is the CPU request, in millicores, of a container whose
// request is reqMillis while the boost lasts.
func (b Boost) RequestMillis(reqMillis int64) int64 {
	if b.Factor > 0 {
		return reqMillis * b.Factor
	}
	return reqMillis + b.AddMillis
}
