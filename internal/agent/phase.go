package agent

import "fmt"

// A pod under a policy is in one phase of the agent's work on it at a
// time, and moves between phases only through podPhase.on, which holds
// every transition:
//
//	Unusable                    its policy's generation cannot be used; left
//	                            until the policy changes (a new podState)
//	Idle     --Wish-->          Wanted
//	Idle     --Sent-->          InFlight       (a deferred fit, a startup boost or its end)
//	Wanted   --Wish-->          Wanted         (the earliest decision's time is kept)
//	Wanted   --Hold-->          Idle           (planned to nothing, refused, not allowed)
//	Wanted   --AwaitQuota-->    AwaitingQuota  (a grow needs the namespace's quotas)
//	Wanted   --Sent-->          InFlight
//	AwaitingQuota --QuotaRead--> Wanted        (planned at once)
//	AwaitingQuota --Hold-->     Idle           (the policy stopped resizing)
//	AwaitingQuota --Sent-->     InFlight       (a deferred fit or a boost went first)
//	InFlight --Settled-->       Idle           (the outcome was taken in)
//
// Any other event leaves the phase as it is: a Wish while a resize is in
// flight, for one, is decided again after its outcome. Which policy
// allows what (its mode, yielding to a VerticalPodAutoscaler) and the
// kubelet's own state of the pod (a Deferred resize, deferred.go) are
// inputs to these steps, not phases.
type podPhase uint8

const (
	phaseUnusable podPhase = iota
	phaseIdle
	phaseWanted
	phaseAwaitingQuota
	phaseInFlight
	numPhases
)

var phaseNames = [numPhases]string{"Unusable", "Idle", "Wanted", "AwaitingQuota", "InFlight"}

func (p podPhase) String() string {
	if p < numPhases {
		return phaseNames[p]
	}
	return fmt.Sprintf("podPhase(%d)", uint8(p))
}

// podEvent is what moves a pod between phases.
type podEvent uint8

const (
	// evWish: a container's decision in this pass resizes.
	evWish podEvent = iota
	// evHold: the pass's plan sends nothing.
	evHold
	// evAwaitQuota: the plan grows and the namespace's quotas are not
	// known; they are being read.
	evAwaitQuota
	// evQuotaRead: the read of the namespace's quotas came in.
	evQuotaRead
	// evSent: a resize (or a deferred fit) was handed to the executor.
	evSent
	// evSettled: the outcome of the resize in flight was taken in.
	evSettled
	numEvents
)

var eventNames = [numEvents]string{"Wish", "Hold", "AwaitQuota", "QuotaRead", "Sent", "Settled"}

func (e podEvent) String() string {
	if e < numEvents {
		return eventNames[e]
	}
	return fmt.Sprintf("podEvent(%d)", uint8(e))
}

// on is the phase after e in phase p, and whether p takes e at all (when
// not, the phase stays p).
func (p podPhase) on(e podEvent) (podPhase, bool) {
	switch p {
	case phaseIdle:
		switch e {
		case evWish:
			return phaseWanted, true
		case evSent:
			return phaseInFlight, true
		}
	case phaseWanted:
		switch e {
		case evWish:
			return phaseWanted, true
		case evHold:
			return phaseIdle, true
		case evAwaitQuota:
			return phaseAwaitingQuota, true
		case evSent:
			return phaseInFlight, true
		}
	case phaseAwaitingQuota:
		switch e {
		case evQuotaRead:
			return phaseWanted, true
		case evHold:
			return phaseIdle, true
		case evSent:
			return phaseInFlight, true
		}
	case phaseInFlight:
		if e == evSettled {
			return phaseIdle, true
		}
	}
	return p, false
}

// fire moves the pod by e and reports whether its phase took e.
func (st *podState) fire(e podEvent) bool {
	next, ok := st.phase.on(e)
	st.phase = next
	return ok
}
