// Package actuate sends resize plans to the cluster and reports what became
// of them. It is the edge between the pure planner (internal/resize) and the
// API server:
//
//   - Gather reads what resize.NewPlan needs for one pod: the pod, its node's
//     allocatable and what the other pods on that node claim.
//   - Actuator.Send patches the pod's resize subresource with a plan's JSON
//     patch and classifies the API server's answer (accepted, Rejected,
//     Conflict, or an error when the server could not be asked).
//   - Actuator.Wait watches the pod until the kubelet's answer is one
//     resize.Outcome (Applied, Deferred, Infeasible, Error) or the deadline
//     passes (Timeout), recording when the allocated and the actual resources
//     were first seen to match the plan.
//   - Actuator.Revert sends resize.Revert's patch, to clear an Infeasible
//     resize.
//
// It does not plan (internal/resize does), decide when to resize
// (internal/agent, internal/controller) or print anything (internal/cli).
// Outcomes are results, not errors: an error means the question could not
// be asked or answered (API server unreachable, pod not found or deleted
// while waiting).
package actuate
