// Package agent is snug's node loop. It keeps the set of containers running
// on one node (fed from a watch of that node's pods, or directly), finds each
// container's cgroup, samples it every interval through a kept-open
// cgroup.Handle, derives cgroup.Signals and keeps a bounded ring of recent
// points per container. It serves what it knows as Prometheus metrics and a
// small JSON API (Handler), and lets a later decision step see every new
// point (Observer).
//
// It owns the sampling loop, the container set, the per-container history,
// the agent's metrics and HTTP API. It does not parse cgroup files (that is
// internal/cgroup), decide what a signal means, or resize anything: issue 5's
// decision step plugs in as an Observer and acts elsewhere.
//
// A container whose cgroup vanishes while it is being read has exited; that
// is normal, counted in snug_agent_cgroups_gone_total and logged at V(1).
package agent
