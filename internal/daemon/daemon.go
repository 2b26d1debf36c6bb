// Package daemon is the main of snug's in-cluster binaries (snug-agent,
// snug-controller) and of the agent's bench: it parses the command line
// into the component's Options, validates them, runs the component until
// SIGINT or SIGTERM, and turns the outcome into the exit code. Logging is
// k8s.io/component-base/logs', as in every Kubernetes component: klog text
// (the default) or JSON (--logging-format=json), -v and --vmodule.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/klog/v2"

	"github.com/snug-dev/snug/internal/version"
)

// Options are a component's flags: registered on a flag set, then checked.
type Options interface {
	AddFlags(fs *pflag.FlagSet)
	Validate() error
}

// Exit codes of Main.
const (
	// ExitFailed: the component ran and failed.
	ExitFailed = 1
	// ExitUsage: bad flags or arguments; nothing was started.
	ExitUsage = 2
)

// Flags is the flag set Main parses for o: o's own flags, the logging
// flags and --version. The chart's tests parse its arguments with it.
func Flags(name string, o Options) *pflag.FlagSet {
	fs, _, _ := flags(name, o)
	return fs
}

func flags(name string, o Options) (*pflag.FlagSet, *logsapi.LoggingConfiguration, *bool) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	o.AddFlags(fs)
	logging := logsapi.NewLoggingConfiguration()
	logsapi.AddFlags(logging, fs)
	return fs, logging, fs.Bool("version", false, "print the version and exit")
}

// Main parses args (without the program name) into o, validates them and
// calls run with a context that ends on SIGINT or SIGTERM. Besides o's
// flags it takes component-base's logging flags (--logging-format, -v,
// --vmodule, --log-flush-frequency, ...) and applies them before o is
// validated, so run logs through klog.Background(). --version
// prints name and version.Version to standard output and runs nothing. It returns
// the exit code: 0 for success, --help and --version, ExitUsage for bad flags,
// arguments or options (nothing was run), ExitFailed when run failed. name
// prefixes every message; usage is the synopsis --help prints above the
// flags.
func Main(name, usage string, args []string, stderr io.Writer, o Options, run func(context.Context) error) int {
	fs, logging, showVersion := flags(name, o)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(stderr, "Usage: %s\n\n%s", usage, fs.FlagUsages()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitUsage
	}
	if *showVersion {
		fmt.Fprintf(os.Stdout, "%s %s\n", name, version.Version)
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", name, fs.Args())
		return ExitUsage
	}
	if errs := logsapi.Validate(logging, nil, nil); len(errs) > 0 {
		fmt.Fprintf(stderr, "%s: logging flags: %v\n", name, errs.ToAggregate())
		return ExitUsage
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitUsage
	}
	if err := logsapi.ValidateAndApply(logging, nil); err != nil {
		fmt.Fprintf(stderr, "%s: logging flags: %v\n", name, err)
		return ExitFailed
	}
	defer klog.Flush()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitFailed
	}
	return 0
}
