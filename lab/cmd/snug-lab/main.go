// Command snug-lab runs snug's lab (a real single-node Kubernetes on this
// machine, and upstream VPA on it), the demo and the benches. It is a
// developer's tool, no part of what runs in a cluster.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/snug-dev/snug/lab/internal/labcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := labcli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
