package labcli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/snug-dev/snug/internal/cli"
)

// Run executes snug-lab with args and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "snug-lab: %v\n", err)
	}
	return cli.ExitCode(err)
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "snug-lab",
		Short:         "snug's lab (a real single-node Kubernetes on this machine), its demo and its benches",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newLabCommands(stdout, stderr)...)
	root.AddCommand(newDemoCommand(stdout, stderr), newBenchCommand(stdout, stderr), newHelmCommand(stdout, stderr))
	root.AddCommand(newImagesCommand(stdout))
	root.AddCommand(newInstallCommands(stdout)...)
	return root
}
