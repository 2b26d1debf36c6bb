// Command snug-controller is snug's controller, run as a Deployment: it
// reconciles SnugPolicies (targets, status, conditions, learnt history,
// eviction fallback), with leader election. Its flags are
// internal/controller's Options.
package main

import (
	"context"
	"os"

	"github.com/snug-dev/snug/internal/controller"
	"github.com/snug-dev/snug/internal/daemon"
)

func main() {
	o := controller.NewOptions()
	os.Exit(daemon.Main("snug-controller", "snug-controller [flags]", os.Args[1:], os.Stderr, o,
		func(ctx context.Context) error { return controller.Run(ctx, o) }))
}
