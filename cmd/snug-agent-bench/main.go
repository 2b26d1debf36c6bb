// Command snug-agent-bench runs the agent's loop over a generated node and
// prints its CPU and memory cost (internal/agent/agentbench). It links what
// snug-agent links plus the generated node, so the RSS it prints is the
// agent's; snug-lab bench agent starts it (use that).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/snug-dev/snug/internal/agent/agentbench"
)

func main() {
	o := agentbench.NewOptions()
	fs := pflag.NewFlagSet("snug-agent-bench", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "snug-agent-bench: %v\n", err)
		os.Exit(2)
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "snug-agent-bench: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := agentbench.Run(ctx, o, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "snug-agent-bench: %v\n", err)
		os.Exit(1)
	}
}
