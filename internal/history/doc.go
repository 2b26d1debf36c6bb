// Package history is the contract between the agent and the controller
// about a workload's learnt history (docs/controller.md): the pod
// annotation in which the agent publishes what each container learnt by
// itself (Snapshot), and the name and the shared key of the per-policy
// checkpoint ConfigMap that the controller folds those snapshots into and
// the agent seeds new containers from.
//
// It is also the contract between the controller and the admission
// webhook about pods evicted for a Deferred resize (Evicted, EvictedKey):
// the size their replacements start at.
//
// It holds names, the Snapshot and Evicted types and their encodings only; it talks to
// no cluster. Folding snapshots (the controller) and publishing and seeding
// (the agent) live with their owners. The ConfigMap's other keys are the
// controller's own bookkeeping.
package history
