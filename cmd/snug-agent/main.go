// Command snug-agent is snug's node agent, run as a DaemonSet: it samples
// every container of its node from the cgroups every second, resizes in
// place the pods a SnugPolicy covers, and serves /metrics and a JSON API.
// Its flags are internal/agent's Options.
package main

import (
	"context"
	"os"

	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/daemon"
)

func main() {
	o := agent.NewOptions()
	os.Exit(daemon.Main("snug-agent", "snug-agent --node NAME [flags]", os.Args[1:], os.Stderr, o,
		func(ctx context.Context) error { return agent.Run(ctx, o, os.Stdout) }))
}
