// Package resize plans in-place pod resizes that the API server accepts and
// the kubelet can grant without harm: pod + wish -> safe plan -> JSON patch.
// Every resize snug sends goes through it.
//
// It owns:
//
//   - NewPlan: turns a pod, its node's room and a wish (explicit values, or
//     a target under a VPA-like policy) into a Plan, or a *Refusal with one
//     Reason. The rules, and the API-server and kubelet behaviour they guard
//     against, are listed on NewPlan and in docs/resize.md.
//   - The patch: an RFC 6902 JSON patch for the pods/resize subresource that
//     starts with test operations, so a concurrent change fails the patch
//     instead of being overwritten. Revert builds the patch that clears an
//     Infeasible resize.
//   - The vocabulary: Outcome (Applied, Deferred, Infeasible, InProgress,
//     Error, Rejected, Conflict, Timeout) for the whole pipeline, Prediction
//     for a plan, Reason and Adjustment for refusals and notes.
//   - Pure views of a pod: ComputeQoS (the API server's QoS rule), Claimed
//     (what pods claim on a node, as the scheduler counts it) and State
//     (desired, allocated and actual resources and the resize conditions).
//
// It does not talk to the cluster, read cgroups, recommend sizes, or decide
// when to resize: internal/recommend, internal/agent and internal/controller
// do, and send the patches. It imports neither client-go nor
// controller-runtime and never reads the clock: State takes now.
//
// What the package implements of the API server is Kubernetes 1.35's
// ValidatePodResize and pod defaulting: the QoS class may not change;
// requests and limits may not be removed (adding them is allowed, but a limit
// added without a request is defaulted to a request equal to it, so NewPlan
// never does that); only cpu and memory of regular and sidecar containers may
// change; static and Windows pods, and pods with pod-level resources, are
// refused. resizePolicy RestartContainer is invalid in a pod with
// restartPolicy Never. Since 1.36 the PodResizeValidator admission plugin
// also rejects requests above node allocatable (403), which 1.35 kubelets
// report as Infeasible.
//
// All functions are safe for concurrent use; none keeps state between calls.
package resize
