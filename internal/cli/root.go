// Package cli holds the subcommands of snug, the user's CLI and kubectl
// plugin (status, resize, trace, convert), one file each. It parses flags into each
// subcommand's Options, validates them and calls into the packages that do
// the work; it never exits the process (only main does). The in-cluster
// components (snug-agent, snug-controller) and the lab (snug-lab) are
// binaries of their own.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// exitError carries a specific exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// WithExitCode wraps err so that Run returns code instead of 1. snug-lab's
// commands (internal/labcli) use it too.
func WithExitCode(code int, err error) error { return &exitError{code: code, err: err} }

// ExitCode is the process exit code for a command's error: 0 for nil, the
// code WithExitCode gave it, else 1.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

// Run executes snug with args and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return RunAs(ctx, "snug", args, stdout, stderr)
}

// RunAs is Run for a process started as argv0. Started as kubectl-snug (the
// name kubectl looks for on PATH), snug presents itself as the kubectl
// plugin "kubectl snug" in its usage lines and messages.
func RunAs(ctx context.Context, argv0 string, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	display := "snug"
	if name := filepath.Base(argv0); strings.HasPrefix(name, "kubectl-") {
		display = "kubectl " + strings.TrimPrefix(name, "kubectl-")
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: display}
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", display, err)
	}
	return ExitCode(err)
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "snug",
		Short:         "Real-time, in-place vertical pod autoscaler for Kubernetes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newResizeCommand(stdout), newStatusCommand(stdout), newTraceCommand(stdout, stderr), newConvertCommand(stdout, stderr))
	return root
}
