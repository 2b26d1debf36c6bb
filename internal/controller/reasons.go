package controller

// Event reasons: only what a user can act on. Each names what happened;
// the message says what to do.
const (
	// EventTargetNotFound: the policy's targetRef names no workload.
	EventTargetNotFound = "TargetNotFound"
	// EventTargetUnsupported: the target has no usable pod selector.
	EventTargetUnsupported = "TargetUnsupported"
	// EventConfigUnsupported: part of the spec is not acted on.
	EventConfigUnsupported = "ConfigUnsupported"
	// EventOverlapping: another policy selects some of the same pods.
	EventOverlapping = "Overlapping"
	// EventHPAConflict: an HPA scales the target on cpu or memory, which
	// snug then leaves alone.
	EventHPAConflict = "HPAConflict"
	// EventVPAConflict: a VerticalPodAutoscaler that is not Off sizes the
	// same pods; snug yields to it and changes none of them.
	EventVPAConflict = "VPAConflict"
	// EventEvicted: a pod whose resize stayed Deferred was evicted, so that
	// it is recreated where its size fits.
	EventEvicted = "EvictedForDeferredResize"
	// EventEvictionBlocked: the API server refused such an eviction,
	// normally for a PodDisruptionBudget.
	EventEvictionBlocked = "EvictionBlocked"
	// EventCheckpointFailed: the learnt history could not be read or
	// written.
	EventCheckpointFailed = "CheckpointFailed"
	// EventRestartWindow: a pod was granted a restart window (Normal), or
	// one was refused for a PodDisruptionBudget (Warning, once per
	// window asked for).
	EventRestartWindow = "RestartWindow"
)
