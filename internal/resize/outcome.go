package resize

// Outcome is what became of a resize once it was sent: the one classification
// the whole pipeline (planner, actuation, status, events, metrics) uses.
// The zero value is Unknown.
type Outcome int

// The outcomes of a resize.
const (
	// Unknown means nothing is known yet, or the value was never set.
	Unknown Outcome = iota
	// Applied means the kubelet actuated the new resources: the containers'
	// actual resources (status.containerStatuses[].resources) equal the spec.
	Applied
	// Deferred means the kubelet accepted the resize as possible but not now:
	// the node lacks room beside the other pods (PodResizePending, reason
	// Deferred). The kubelet retries by itself when room appears.
	Deferred
	// Infeasible means the kubelet will never actuate this resize on this
	// node (PodResizePending, reason Infeasible). It does not retry; the spec
	// stays out of step with the actual resources until it is reverted (see
	// Revert).
	Infeasible
	// InProgress means the kubelet accepted the resize and is actuating it,
	// or has not looked at it yet.
	InProgress
	// Error means the kubelet tried to actuate the resize and failed
	// (PodResizeInProgress with reason Error), for example because a new
	// memory limit was below the container's usage.
	Error
	// Rejected means the API server refused the patch (validation, admission
	// such as the 1.36+ PodResizeValidator, RBAC).
	Rejected
	// Conflict means a test operation of the patch failed: someone changed the
	// pod's resources since the plan was made. Re-read the pod and plan again.
	Conflict
	// Timeout means no terminal outcome was observed within the caller's
	// deadline.
	Timeout
)

var outcomeNames = [...]string{
	Unknown:    "Unknown",
	Applied:    "Applied",
	Deferred:   "Deferred",
	Infeasible: "Infeasible",
	InProgress: "InProgress",
	Error:      "Error",
	Rejected:   "Rejected",
	Conflict:   "Conflict",
	Timeout:    "Timeout",
}

// String returns the outcome's name, such as "Deferred".
func (o Outcome) String() string {
	if o < 0 || int(o) >= len(outcomeNames) {
		return "Unknown"
	}
	return outcomeNames[o]
}

// Prediction is what the planner expects the kubelet to do with a plan,
// judged from the node's allocatable and the other pods' claims. The zero
// value is not a valid prediction; every Plan sets one.
type Prediction int

// The predictions a Plan can carry.
const (
	// WouldApply means the new requests fit on the node beside the other pods.
	WouldApply Prediction = iota + 1
	// WouldDefer means the new requests fit within the node's allocatable but
	// not beside the other pods' current claims.
	WouldDefer
	// WouldBeInfeasible means the pod's new requests alone exceed the node's
	// allocatable. Kubernetes 1.35 kubelets answer Infeasible; since 1.36 the
	// PodResizeValidator admission plugin rejects such a patch with 403.
	WouldBeInfeasible
)

// String returns the prediction's name, such as "WouldDefer".
func (p Prediction) String() string {
	switch p {
	case WouldApply:
		return "WouldApply"
	case WouldDefer:
		return "WouldDefer"
	case WouldBeInfeasible:
		return "WouldBeInfeasible"
	}
	return "Unknown"
}

// Outcome returns the outcome the prediction foresees: Applied, Deferred or
// Infeasible (Unknown for the zero value).
func (p Prediction) Outcome() Outcome {
	switch p {
	case WouldApply:
		return Applied
	case WouldDefer:
		return Deferred
	case WouldBeInfeasible:
		return Infeasible
	}
	return Unknown
}
