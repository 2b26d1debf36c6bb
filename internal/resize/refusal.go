package resize

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Reason says, in one word, why a plan was refused. Reasons are stable
// strings, fit for event reasons and metric labels.
type Reason string

// The reasons for a Refusal.
const (
	// ReasonInvalidWish: the wish or the options are malformed (no pod, a
	// container named twice, a non-positive quantity, a resource other than
	// cpu or memory, explicit values and a target at once).
	ReasonInvalidWish Reason = "InvalidWish"
	// ReasonUnsupportedPod: the pod cannot be resized in place at all
	// (finished, terminating, static, Windows, pod-level resources without
	// Options.PodLevelResize, or its node does not report container
	// resources).
	ReasonUnsupportedPod Reason = "UnsupportedPod"
	// ReasonUnknownContainer: the pod has no container of that name.
	ReasonUnknownContainer Reason = "UnknownContainer"
	// ReasonNotResizable: the container exists but the API forbids resizing
	// it (a non-sidecar init container, an ephemeral container).
	ReasonNotResizable Reason = "NotResizable"
	// ReasonQoSChange: the wish would change the pod's QoS class, which the
	// API server rejects ("Pod QOS Class may not change as a result of
	// resizing").
	ReasonQoSChange Reason = "QoSChange"
	// ReasonKeyChange: the wish would remove a request or limit (forbidden),
	// or add a limit without a request (the API server would default the
	// request to the limit, a change nobody asked for).
	ReasonKeyChange Reason = "KeyChange"
	// ReasonRequestAboveLimit: an explicit request is above its limit.
	ReasonRequestAboveLimit Reason = "RequestAboveLimit"
	// ReasonUsageUnknown: a memory limit would be lowered or added, but the
	// container's memory usage is unknown, so an OOM kill cannot be ruled out.
	ReasonUsageUnknown Reason = "UsageUnknown"
	// ReasonRestartRequired: a changed resource has resizePolicy
	// RestartContainer and Options.AllowRestart is false.
	ReasonRestartRequired Reason = "RestartRequired"
	// ReasonRestartImpossible: a changed resource has resizePolicy
	// RestartContainer in a pod with restartPolicy Never.
	ReasonRestartImpossible Reason = "RestartImpossible"
	// ReasonWouldDefer: the new requests do not fit beside the other pods and
	// Options.NoRoom is NoRoomRefuse.
	ReasonWouldDefer Reason = "WouldDefer"
	// ReasonWouldBeInfeasible: the pod's new requests exceed the node's
	// allocatable and Options.NoRoom is NoRoomRefuse.
	ReasonWouldBeInfeasible Reason = "WouldBeInfeasible"
	// ReasonQuotaFull: the namespace's ResourceQuotas (or its LimitRanges'
	// pod max) leave no room for any of the increase the plan wants.
	ReasonQuotaFull Reason = "QuotaFull"
	// ReasonPodLevelConflict: the new values break the API server's rules
	// for pod-level resources: pod-level requests at least the containers'
	// aggregate requests, each container's limit at most the pod-level one.
	ReasonPodLevelConflict Reason = "PodLevelConflict"
)

// Refusal is the error NewPlan returns when it will not plan a resize. It
// carries one reason a person understands. Use errors.As to get it.
type Refusal struct {
	// Reason classifies the refusal.
	Reason Reason
	// Container names the container the refusal is about; empty when it is
	// about the whole pod.
	Container string
	// Message is a lowercase sentence for people, naming the container and
	// the values involved.
	Message string
}

// Error returns the message.
func (r *Refusal) Error() string { return r.Message }

func refuse(reason Reason, container, format string, args ...any) *Refusal {
	msg := fmt.Sprintf(format, args...)
	if container != "" {
		msg = fmt.Sprintf("container %q: %s", container, msg)
	}
	return &Refusal{Reason: reason, Container: container, Message: msg}
}

// Adjustment names a change the planner made to a wish to keep it safe.
type Adjustment string

// The adjustments a Note can report.
const (
	// CappedToLimit: under RequestsOnly a request was lowered to its
	// unchanged limit (never in a Guaranteed pod; see LimitFollowsRequest).
	CappedToLimit Adjustment = "CappedToLimit"
	// LimitFollowsRequest: under RequestsOnly the limit of a container in a
	// Guaranteed pod was moved with its request, so the pod stays
	// Guaranteed.
	LimitFollowsRequest Adjustment = "LimitFollowsRequest"
	// RaisedToMinAllowed: a target was raised to the policy's minAllowed.
	RaisedToMinAllowed Adjustment = "RaisedToMinAllowed"
	// CappedToMaxAllowed: a target was lowered to the policy's maxAllowed.
	CappedToMaxAllowed Adjustment = "CappedToMaxAllowed"
	// KeptAboveUsage: a memory decrease stopped at usage * (1 + headroom).
	KeptAboveUsage Adjustment = "KeptAboveUsage"
	// KeptAtLimitFloor: a memory limit decrease stopped at the container's
	// Usage.MemoryLimitFloorBytes.
	KeptAtLimitFloor Adjustment = "KeptAtLimitFloor"
	// DecreaseStepLimited: a memory decrease stopped at one step
	// (Options.MaxMemoryDecreaseFraction of the current value).
	DecreaseStepLimited Adjustment = "DecreaseStepLimited"
	// LoweredWithoutUsage: a memory request was lowered (by at most one step)
	// although the container's usage is unknown.
	LoweredWithoutUsage Adjustment = "LoweredWithoutUsage"
	// KeptBurstable: a request was kept one unit (1m cpu or 1 byte) below its
	// limit so that a Burstable pod does not become Guaranteed.
	KeptBurstable Adjustment = "KeptBurstable"
	// CappedToNamespace: an increase was cut to fit the namespace's
	// ResourceQuotas or LimitRanges.
	CappedToNamespace Adjustment = "CappedToNamespace"
	// RaisedToNamespace: a decrease stopped at a LimitRange's min, or a
	// request was raised to keep a LimitRange's maxLimitRequestRatio.
	RaisedToNamespace Adjustment = "RaisedToNamespace"
	// CappedToNodeRoom: an increase was cut so the pod fits on its node.
	CappedToNodeRoom Adjustment = "CappedToNodeRoom"
	// NotControlled: a target named a resource outside controlledResources;
	// it was ignored.
	NotControlled Adjustment = "NotControlled"
	// NodeRoomUnchecked: no node allocatable was given, so node room was not
	// checked.
	NodeRoomUnchecked Adjustment = "NodeRoomUnchecked"
	// NoRoomSentAnyway: the plan does not fit on the node and
	// Options.NoRoom is NoRoomSend; see Plan.Predicted.
	NoRoomSentAnyway Adjustment = "NoRoomSentAnyway"
	// KeptAboveContainers: a pod-level value was kept at what the pod's
	// containers ask for: the API server requires pod-level requests at
	// least the containers' aggregate requests, and pod-level limits at
	// least each container's limit.
	KeptAboveContainers Adjustment = "KeptAboveContainers"
)

// Note records one adjustment the planner made, for logs, events and
// `snug status`.
type Note struct {
	// Container is the container adjusted; empty for the whole pod.
	Container string
	// Resource is cpu or memory; empty for the whole pod.
	Resource corev1.ResourceName
	// Adjustment classifies the note.
	Adjustment Adjustment
	// Message is a lowercase sentence with the values involved.
	Message string
}

// String returns the message.
func (n Note) String() string { return n.Message }
