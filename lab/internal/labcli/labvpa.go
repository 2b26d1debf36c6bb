package labcli

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/snug-dev/snug/internal/cli"
	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/lab/vpa"
)

// newLabVPACommand is 'snug-lab vpa': upstream VPA and metrics-server
// against the lab whose options the parent command holds.
func newLabVPACommand(labOpts *lab.Options, stdout io.Writer) *cobra.Command {
	opts := vpa.NewOptions(labOpts)
	cmd := &cobra.Command{
		Use:   "vpa",
		Short: "Upstream VPA (recommender, updater, admission controller) and metrics-server on the lab",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return opts.Validate()
		},
	}
	labOpts.AddFlags(cmd.PersistentFlags())
	opts.AddFlags(cmd.PersistentFlags())
	up := &cobra.Command{
		Use:   "up",
		Short: "Build (once) and start metrics-server and VPA against the running lab",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			err := vpa.Up(cmd.Context(), opts, stdout)
			if errors.Is(err, vpa.ErrAlreadyUp) {
				fmt.Fprintln(stdout, "VPA and metrics-server are already up; nothing changed")
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "took %.1fs\n", time.Since(start).Seconds())
			return nil
		},
	}
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop VPA and metrics-server and remove their APIService and webhook (CRDs stay)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := vpa.Down(cmd.Context(), opts, stdout); err != nil {
				return err
			}
			fmt.Fprintln(stdout, "vpa down")
			return nil
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show each VPA and metrics-server process, its PID and health",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "COMPONENT\tPID\tRUNNING\tHEALTHY\tDETAIL")
			allOK := true
			for _, h := range vpa.Status(cmd.Context(), opts) {
				pid := "-"
				if h.PID > 0 {
					pid = fmt.Sprint(h.PID)
				}
				allOK = allOK && h.Healthy
				fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%s\n", h.Name, pid, h.Running, h.Healthy, truncate(h.Detail, 60))
			}
			tw.Flush()
			if !allOK {
				return cli.WithExitCode(3, errors.New("VPA is not (fully) up"))
			}
			return nil
		},
	}
	build := &cobra.Command{
		Use:   "build",
		Short: "Build (or find cached) VPA and metrics-server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := vpa.EnsureBinaries(cmd.Context(), opts, stdout); err != nil {
				return err
			}
			fmt.Fprintln(stdout, opts.VPABinDir())
			fmt.Fprintln(stdout, opts.MetricsServerBinDir())
			return nil
		},
	}
	cmd.AddCommand(up, down, status, build)
	return cmd
}
