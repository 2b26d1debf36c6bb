package labcli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/lab/prom"
)

// newLabPrometheusCommand is 'snug-lab prometheus': Debian's Prometheus in
// the lab's namespace, scraping snug installed in-cluster.
func newLabPrometheusCommand(labOpts *lab.Options, stdout io.Writer) *cobra.Command {
	opts := prom.NewOptions(labOpts)
	cmd := &cobra.Command{
		Use:   "prometheus",
		Short: "Prometheus in the lab, scraping the in-cluster snug-agent and snug-controller",
		Long: `Prometheus in the lab, scraping the in-cluster snug-agent and snug-controller.

Install snug with the chart first and bind the scraper's ServiceAccount to
the metrics reader, e.g.
  --set monitoring.readerSubjects[0].kind=ServiceAccount \
  --set monitoring.readerSubjects[0].name=prometheus \
  --set monitoring.readerSubjects[0].namespace=snug-system
Debian's Prometheus has no Kubernetes service discovery: 'up' and 'sync'
write its targets from the pods the API server lists (docs/observability.md).`,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return opts.Validate()
		},
	}
	labOpts.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().IntVar(&opts.Port, "port", opts.Port, "port Prometheus listens on at the node's address")
	cmd.PersistentFlags().StringVar(&opts.Namespace, "namespace", opts.Namespace, "snug's release namespace")
	cmd.PersistentFlags().StringVar(&opts.Release, "release", opts.Release, "snug's Helm release")
	cmd.PersistentFlags().StringVar(&opts.ServiceAccount, "service-account", opts.ServiceAccount, "ServiceAccount in --namespace whose token Prometheus sends")
	cmd.PersistentFlags().DurationVar(&opts.ScrapeInterval, "scrape-interval", opts.ScrapeInterval, "scrape interval")
	up := &cobra.Command{
		Use:   "up",
		Short: "Start Prometheus and sync its targets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := labOpts.Client()
			if err != nil {
				return err
			}
			err = prom.Up(cmd.Context(), opts, c, stdout)
			if errors.Is(err, prom.ErrAlreadyUp) {
				fmt.Fprintln(stdout, "prometheus is already up; nothing changed ('sync' rewrites its targets)")
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "prometheus up at %s\n", opts.URL())
			return nil
		},
	}
	sync := &cobra.Command{
		Use:   "sync",
		Short: "Rewrite Prometheus's targets from snug's pods as they are now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := labOpts.Client()
			if err != nil {
				return err
			}
			targets, err := prom.Sync(cmd.Context(), opts, c)
			if err != nil {
				return err
			}
			for _, t := range targets {
				fmt.Fprintf(stdout, "%s\t%s\t%s\n", t.Labels["job"], t.Labels["pod"], t.Targets[0])
			}
			return nil
		},
	}
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop Prometheus (its data stays until the next up)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := prom.Down(opts); err != nil {
				return err
			}
			fmt.Fprintln(stdout, "prometheus down")
			return nil
		},
	}
	cmd.AddCommand(up, sync, down)
	return cmd
}
