// Command snug is the user's CLI for snug, the real-time, in-place vertical
// pod autoscaler for Kubernetes, and, linked as kubectl-snug, its kubectl
// plugin: status, resize and trace against the user's cluster. The
// in-cluster components are snug-agent and snug-controller; the lab, demo
// and benches are snug-lab.
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
