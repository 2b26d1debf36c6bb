// Command snug-agent is snug's node agent, run as a DaemonSet: it samples
// every container of its node from the cgroups every second, resizes in
// place the pods a SnugPolicy covers, and serves /metrics and a JSON API.
// Its flags are internal/agent's Options.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/snug-dev/snug/internal/agent"
)

func main() {
	o := agent.NewOptions()
	fs := pflag.NewFlagSet("snug-agent", pflag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: snug-agent --node NAME [flags]\n\n%s", fs.FlagUsages())
	}
	o.AddFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "snug-agent: %v\n", err)
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "snug-agent: unexpected arguments %q\n", fs.Args())
		os.Exit(2)
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "snug-agent: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := agent.Run(ctx, o, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "snug-agent: %v\n", err)
		os.Exit(1)
	}
}
