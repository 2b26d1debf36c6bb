package agent

// Event reasons the agent records on pods. They name what a user can act on
// or should know: a resize that landed, and one that did not.
const (
	// ReasonResized: a resize was sent and the kubelet applied it.
	ReasonResized = "Resized"
	// ReasonResizeRefused: the planner refused the decision, the API server
	// rejected the patch, or the kubelet deferred, found infeasible (then
	// the spec is reverted) or failed the resize.
	ReasonResizeRefused = "ResizeRefused"
	// ReasonResizeDeferred: the kubelet deferred a resize and the policy's
	// behavior.deferred.action is Wait, so it stays pending (once per
	// deferral).
	ReasonResizeDeferred = "ResizeDeferred"
	// ReasonFittedToNode: a resize deferred for behavior.deferred.afterSeconds
	// was lowered to what the node has room for (FitToNode), or set back to
	// the actual resources when nothing fitted, and the kubelet applied it.
	ReasonFittedToNode = "FittedToNode"
	// ReasonFittedToNamespace: a grow was cut to what the namespace's
	// ResourceQuotas have left, or brought within its LimitRanges, and the
	// kubelet applied it; the recommender asks for no more for a while.
	ReasonFittedToNamespace = "FittedToNamespace"
	// ReasonNamespaceFull: a grow was not sent because the namespace's
	// ResourceQuotas (or a LimitRange's pod max) leave no room for any of
	// it.
	ReasonNamespaceFull = "NamespaceFull"
	// ReasonNotSizedAtAdmission: a new pod under a policy that sizes pods
	// at creation started at its template's size although the workload has
	// learnt history (the admission webhook was down, off, or the pod opted
	// out); the agent sizes it from the history instead (once per pod).
	ReasonNotSizedAtAdmission = "NotSizedAtAdmission"
	// ReasonStartupBoost: a container's startup boost was applied or ended
	// (Normal), or none could be given (Warning: nothing fitted).
	ReasonStartupBoost = "StartupBoost"
	// ReasonRestartRequired: a change snug wanted was held because the
	// container's resizePolicy for that resource is RestartContainer (once
	// per container instance; Warning when a grow was held).
	ReasonRestartRequired = "RestartRequired"
	// ReasonRestartWindow: in a restart window the controller granted, the
	// agent sent a resize that the kubelet applies by restarting the
	// container (policy updatePolicy.restartWindow).
	ReasonRestartWindow = "RestartWindow"
	// ReasonPodLevelResources: the pod sets pod-level resources
	// (spec.resources), which snug does not resize yet (once per pod).
	ReasonPodLevelResources = "PodLevelResources"
)
