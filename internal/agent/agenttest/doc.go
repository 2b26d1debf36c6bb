// Package agenttest writes generated nodes for the agent's tests and for
// snug-lab's bench agent: a cgroup tree of n single-container pods, and the
// pods as a watch would deliver them. It is no part of the agent binary
// (cmd/snug-agent's dependency test keeps it out).
package agenttest
