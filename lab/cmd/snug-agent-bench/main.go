// Command snug-agent-bench runs the agent's loop over a generated node and
// prints its CPU and memory cost (lab/internal/agentbench). It links what
// snug-agent links plus the generated node, so the RSS it prints is the
// agent's; snug-lab bench agent starts it (use that).
package main

import (
	"context"
	"os"

	"github.com/snug-dev/snug/internal/daemon"
	"github.com/snug-dev/snug/lab/internal/agentbench"
)

func main() {
	o := agentbench.NewOptions()
	os.Exit(daemon.Main("snug-agent-bench", "snug-agent-bench [flags]", os.Args[1:], os.Stderr, o,
		func(ctx context.Context) error { return agentbench.Run(ctx, o, os.Stdout) }))
}
