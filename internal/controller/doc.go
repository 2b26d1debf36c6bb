// Package controller is snug's cluster-wide part: it reconciles SnugPolicy
// objects. For each policy it resolves the target to a pod selector, finds
// the pods, spots policies that select the same pods and HorizontalPodAutoscalers
// that scale the same workload on cpu or memory, keeps the workload's learnt
// history (the recommend.Aggregate per container) in a checkpoint ConfigMap,
// writes status (selector, conditions, uncontrolledResources,
// recommendation) and events, and evicts pods whose resize stays Deferred
// when the policy says so (InPlaceOrRecreate, deferred action Evict), through
// the Eviction API and never below minReplicas ready pods.
//
// Its three reconcilers (checkpoints, status, disruption), each with its
// own workqueue, are thin: they read from shared informer caches, call
// small pure functions (resolve.go, status.go, hpa.go, overlap.go,
// history.go, evict.go) and write what differs. Event handlers only
// enqueue.
//
// It does not size pods or send resizes (the node agent does, per node).
// Run (run.go) starts the informers, elects a leader (lead.go: the Lease is
// released only after the leader's work has returned), serves metrics and
// runs the reconcilers only while it leads. docs/controller.md describes
// the checkpoint and snapshot contract with the agent.
package controller
