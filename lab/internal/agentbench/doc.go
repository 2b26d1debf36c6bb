// Package agentbench measures the agent's own cost: it runs the real
// agent loop over a generated node (internal/agent/agenttest) and prints
// CPU, memory and pass times. cmd/snug-agent-bench runs it in a process of
// its own, which links what snug-agent links and no more, so that the RSS
// it prints is the agent's; snug-lab bench agent starts that process.
package agentbench
