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
	"time"

	"github.com/snug-dev/snug/lab/internal/loadgen"
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
	if len(args) > 0 && args[0] == "mirror-cgroups" {
		return mirrorCgroups(ctx, args[1:], stderr)
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
		fmt.Fprintf(stderr, "snug-load: unexpected arguments %q (the subcommands are pause and mirror-cgroups)\n", fs.Args())
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

// mirrorCgroups is "snug-load mirror-cgroups --to DIR": the lab's
// cgroup-v2 node runs it to copy its pods' cgroup files into the directory
// it shares with the host (loadgen.MirrorCgroups).
func mirrorCgroups(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("snug-load mirror-cgroups", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "/sys/fs/cgroup", "the cgroup v2 mount")
	sub := fs.String("sub", "kubepods.slice", "the subtree below --from to copy (with the root's own files)")
	to := fs.String("to", "", "where to copy to (required)")
	interval := fs.Duration("interval", 100*time.Millisecond, "how often to copy")
	heartbeat := fs.String("heartbeat", "", "a file to write the time to, at most once a second, while it copies")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *to == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "snug-load mirror-cgroups: --to is required and there are no arguments")
		return 2
	}
	if err := loadgen.MirrorCgroups(ctx, *from, *sub, *to, *interval, *heartbeat); err != nil {
		fmt.Fprintf(stderr, "snug-load mirror-cgroups: %v\n", err)
		return 1
	}
	return 0
}
