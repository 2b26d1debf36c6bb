// Command snug-controller is snug's controller, run as a Deployment: it
// reconciles SnugPolicies (targets, status, conditions, learnt history,
// eviction fallback), with leader election. Its flags are
// internal/controller's Options.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/snug-dev/snug/internal/controller"
)

func main() {
	o := controller.NewOptions()
	fs := pflag.NewFlagSet("snug-controller", pflag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: snug-controller [flags]\n\n%s", fs.FlagUsages())
	}
	o.AddFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "snug-controller: %v\n", err)
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "snug-controller: unexpected arguments %q\n", fs.Args())
		os.Exit(2)
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "snug-controller: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := controller.Run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "snug-controller: %v\n", err)
		os.Exit(1)
	}
}
