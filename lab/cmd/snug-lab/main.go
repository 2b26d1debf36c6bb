// Command snug-lab runs snug's lab (a real single-node Kubernetes on this
// machine, and upstream VPA on it), the demo and the benches. It is a
// developer's tool, no part of what runs in a cluster.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/snug-dev/snug/lab/internal/labcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var finished atomic.Bool
	go func() {
		<-ctx.Done()
		if finished.Load() {
			return
		}
		// The first signal ends the work and starts the clean-up (a
		// bench deletes thousands of pods, the lab stops its processes);
		// a second one ends the process at once, as a signal does.
		stop()
		fmt.Fprintln(os.Stderr, "snug-lab: stopping: cleaning up (a second interrupt quits at once, leaving what was made)")
	}()
	code := labcli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	finished.Store(true)
	stop()
	os.Exit(code)
}
