package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/snug-dev/snug/internal/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "pause" {
		loadgen.Pause(ctx)
		return 0
	}
	fs := flag.NewFlagSet("snug-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := loadgen.NewOptions()
	o.PodName = os.Getenv("POD_NAME")
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "snug-load: unexpected arguments %q (the only subcommand is pause)\n", fs.Args())
		return 2
	}
	// Go sizes GOMAXPROCS from the cgroup's CPU limit and follows it; the
	// burner must not be capped by its own runtime, only by the kernel, so
	// that throttling shows in the cgroup the way it would for any workload.
	runtime.GOMAXPROCS(runtime.NumCPU())
	if err := loadgen.Run(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "snug-load: %v\n", err)
		return 1
	}
	return 0
}
