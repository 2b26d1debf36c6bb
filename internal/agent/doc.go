// Package agent is snug's node loop. It keeps the set of containers running
// on one node (fed from a watch of that node's pods, or directly), finds each
// container's cgroup, samples it every interval through a kept-open
// cgroup.Handle, derives cgroup.Signals and keeps a bounded ring of recent
// points per container. It serves what it knows as Prometheus metrics and a
// small JSON API (Handler).
//
// Its decision step (Decider, installed by Agent.Decide as the loop's
// Observer) decides and actuates for the pods on its node that a SnugPolicy
// covers (matched by internal/policy, bound on informer events): every
// sample goes through a pure decide step to internal/recommend, every
// resizing decision is planned by internal/resize against the node's room
// and sent as one of the decider's effects (effects.go, actuation.go),
// which sends, waits and reverts through internal/actuate off the loop
// goroutine; the outcome goes back to the recommender on the loop
// goroutine. Each pod's place in that work is an explicit phase (phase.go).
// With Decider.UseCheckpoints it also keeps the workload's learnt history
// (checkpoint.go): it publishes what each covered pod learnt in the pod's
// snapshot annotation and starts each new container from its policy's
// checkpoint ConfigMap (names and encodings in internal/history).
//
// It owns the sampling loop, the container set, the per-container history,
// the per-pod recommender state, the agent's metrics, events and HTTP API.
// It does not parse cgroup files (internal/cgroup), compute
// recommendations (internal/recommend), build patches (internal/resize), or
// write policy status (the controller).
//
// A container whose cgroup vanishes while it is being read has exited; that
// is normal, counted in snug_agent_cgroups_gone_total and logged at V(1).
package agent
