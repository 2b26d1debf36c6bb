package resize

import (
	"errors"
	"fmt"
)

// NoRoomAction says what NewPlan does when the new requests do not fit on
// the node.
type NoRoomAction string

// The actions on a plan that does not fit.
const (
	// NoRoomRefuse refuses with ReasonWouldDefer or ReasonWouldBeInfeasible.
	// It is the default (also for "").
	NoRoomRefuse NoRoomAction = "Refuse"
	// NoRoomCap cuts each increase so the pod fits beside the other pods,
	// keeping the QoS class and the limit:request ratios (note
	// CappedToNodeRoom). Decreases are kept whole.
	NoRoomCap NoRoomAction = "Cap"
	// NoRoomSend plans the resize anyway; Plan.Predicted says WouldDefer or
	// WouldBeInfeasible. Useful when room is about to appear: the kubelet
	// retries a Deferred resize by itself.
	NoRoomSend NoRoomAction = "Send"
)

// Defaults for Options.
const (
	// DefaultMemoryHeadroom keeps memory at least 20% above measured usage.
	DefaultMemoryHeadroom = 0.20
	// DefaultMaxMemoryDecreaseFraction lowers memory by at most a quarter of
	// its current value per plan.
	DefaultMaxMemoryDecreaseFraction = 0.25
)

// Options tune the planner. The zero value means DefaultOptions().
type Options struct {
	// AllowRestart permits plans that restart containers whose resizePolicy
	// is RestartContainer for a changed resource. Default false.
	AllowRestart bool
	// PodLevelResize says that the cluster resizes pod-level resources
	// (spec.resources) in place: the InPlacePodLevelResourcesVerticalScaling
	// feature, beta and on by default from Kubernetes 1.36, alpha and off
	// in 1.35. When false, a pod with pod-level resources is refused
	// (ReasonUnsupportedPod): with the feature off the API server forbids
	// any resize of such a pod, even of its containers alone.
	PodLevelResize bool
	// NoRoom says what to do when the pod would not fit on its node.
	// Default NoRoomRefuse.
	NoRoom NoRoomAction
	// MemoryHeadroom is the fraction above measured memory usage below which
	// memory is never lowered. 0 means DefaultMemoryHeadroom; to ask for
	// (almost) none, give a tiny positive value. At most 10.
	MemoryHeadroom float64
	// MaxMemoryDecreaseFraction is the largest fraction of its current value
	// a memory request or limit may drop in one plan, in (0, 1]. 0 means
	// DefaultMaxMemoryDecreaseFraction.
	MaxMemoryDecreaseFraction float64
}

// DefaultOptions returns the options snug uses unless told otherwise.
func DefaultOptions() Options {
	return Options{
		NoRoom:                    NoRoomRefuse,
		MemoryHeadroom:            DefaultMemoryHeadroom,
		MaxMemoryDecreaseFraction: DefaultMaxMemoryDecreaseFraction,
	}
}

// Validate reports options that are out of range. Zero values are valid:
// they stand for the defaults.
func (o Options) Validate() error {
	var errs []error
	switch o.NoRoom {
	case "", NoRoomRefuse, NoRoomCap, NoRoomSend:
	default:
		errs = append(errs, fmt.Errorf("unknown no-room action %q", o.NoRoom))
	}
	if !(o.MemoryHeadroom >= 0 && o.MemoryHeadroom <= 10) {
		errs = append(errs, fmt.Errorf("memory headroom %v is outside [0, 10]", o.MemoryHeadroom))
	}
	if !(o.MaxMemoryDecreaseFraction >= 0 && o.MaxMemoryDecreaseFraction <= 1) {
		errs = append(errs, fmt.Errorf("max memory decrease fraction %v is outside [0, 1]", o.MaxMemoryDecreaseFraction))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.NoRoom == "" {
		o.NoRoom = NoRoomRefuse
	}
	if o.MemoryHeadroom == 0 {
		o.MemoryHeadroom = DefaultMemoryHeadroom
	}
	if o.MaxMemoryDecreaseFraction == 0 {
		o.MaxMemoryDecreaseFraction = DefaultMaxMemoryDecreaseFraction
	}
	return o
}
