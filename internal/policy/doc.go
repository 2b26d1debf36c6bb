// Package policy says which SnugPolicy covers a pod and what the policy
// means for each of its containers: the update mode, the container's rules
// for the recommender and the planner, the behavior as recommender and
// planner settings, what to do about a Deferred resize, and the policy
// defaults. The agent and the controller both read policies through it, so
// they agree on which policy governs a pod and on every default.
//
// It is pure: it imports no client-go and reads no clock (callers pass the
// time). It does not resolve a targetRef to a workload: that is the
// controller's, which publishes the result as status.selector; here a
// targetRef policy covers the pods that selector matches, and nothing
// before it is published.
package policy
