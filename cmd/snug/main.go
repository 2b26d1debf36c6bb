// Command snug is the real-time, in-place vertical pod autoscaler for
// Kubernetes: the lab cluster, the resize engine, the node agent and the
// controller are subcommands of this one binary.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/snug-dev/snug/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.RunAs(ctx, os.Args[0], os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
