package labcli

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/snug-dev/snug/internal/cli"
	"github.com/snug-dev/snug/lab/internal/agentbench"
)

// newBenchCommand groups the commands that measure snug's own cost and print
// figures. Each component adds a subcommand.
func newBenchCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure snug's own cost and reaction time and print the figures",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchAgentCommand(stdout, stderr), newBenchReactionCommand(stdout), newBenchQoSCommand(stdout), newBenchQualityCommand(stdout, stderr), newBenchAdmissionCommand(stdout), newBenchScaleCommand(stdout), newBenchKubeletCommand(stdout))
	return cmd
}

func newBenchAgentCommand(stdout, stderr io.Writer) *cobra.Command {
	o := agentbench.NewOptions()
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the agent's sampling loop over a generated node and print its CPU and memory cost",
		Long: `Writes a cgroup tree for --containers single-container pods to a temporary
directory, feeds the pods to the real agent (no API server), runs its loop
for --duration and prints CPU (getrusage delta over wall time, in percent of
one core), RSS (VmRSS) and Go heap, and the median and p99 of the passes.

The loop runs in its own process, snug-agent-bench from this binary's
directory, which links what snug-agent links (and the generated node): the
figures are the agent binary's, not this one's.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return cli.WithExitCode(2, err)
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding snug-agent-bench: %w", err)
			}
			c := exec.CommandContext(cmd.Context(), filepath.Join(filepath.Dir(exe), "snug-agent-bench"), o.Args()...)
			c.Stdout, c.Stderr = stdout, stderr
			if err := c.Run(); err != nil {
				return fmt.Errorf("running snug-agent-bench (make build puts it next to snug-lab): %w", err)
			}
			return nil
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}
