package labcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/snug-dev/snug/internal/cli"
	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab"
)

// benchAdmissionOptions configures `snug-lab bench admission`.
type benchAdmissionOptions struct {
	lab         *lab.Options
	Pods        int
	Concurrency int
	KeepLab     bool
}

func newBenchAdmissionOptions() *benchAdmissionOptions {
	return &benchAdmissionOptions{lab: lab.NewOptions(), Pods: 1000, Concurrency: 8}
}

func (o *benchAdmissionOptions) AddFlags(fs *pflag.FlagSet) {
	o.lab.AddFlags(fs)
	fs.IntVar(&o.Pods, "pods", o.Pods, "pod creates per run")
	fs.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "creates in flight at once")
	fs.BoolVar(&o.KeepLab, "keep-lab", o.KeepLab, "leave the lab up afterwards (a lab that was already up is always left up)")
}

func (o *benchAdmissionOptions) Validate() error {
	var errs []error
	if o.Pods < 1 || o.Pods > 100000 {
		errs = append(errs, fmt.Errorf("--pods %d is out of range [1, 100000]", o.Pods))
	}
	if o.Concurrency < 1 || o.Concurrency > 256 {
		errs = append(errs, fmt.Errorf("--concurrency %d is out of range [1, 256]", o.Concurrency))
	}
	if err := o.lab.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func newBenchAdmissionCommand(stdout io.Writer) *cobra.Command {
	o := newBenchAdmissionOptions()
	cmd := &cobra.Command{
		Use:   "admission [--pods N] [--concurrency N]",
		Short: "Measure pod creation through snug's admission webhook: pods/s and latency, against the same pods opted out",
		Long: `Brings the lab up (or uses the one that is up), installs snug in-cluster
with its chart (the webhook on), and sends --pods dry-run pod creates
(dryRun=All: admission runs, nothing is stored) of a workload with learnt
history, --concurrency at once, first through the webhook (each pod sized)
and then opted out (autoscaling.snug.dev/admission=disabled, never sent to
it). It prints pods/s and p50/p99/max latency of each, and the webhook's
share.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return cli.WithExitCode(2, err)
			}
			return runBenchAdmission(cmd.Context(), o, stdout)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runBenchAdmission(ctx context.Context, o *benchAdmissionOptions, out io.Writer) (err error) {
	lw := &prefixWriter{w: out, prefix: "   "}
	defer lw.Flush()
	release, _, err := lab.UpOrReuse(ctx, o.lab, o.KeepLab, lw)
	lw.Flush()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release(context.WithoutCancel(ctx))) }()
	client, err := o.lab.Client()
	if err != nil {
		return err
	}
	pc, err := qosPolicyClient(o.lab)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the snug binary: %w", err)
	}
	logDir, err := os.MkdirTemp("", "snug-bench-admission-")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "snug: installing it in-cluster with its chart (pods' logs in %s at the end)\n", logDir)
	s, err := installInLab(ctx, client, labInstall{lab: o.lab, binDir: filepath.Dir(exe), logDir: logDir, out: lw})
	lw.Flush()
	if err != nil {
		if s != nil {
			err = errors.Join(err, s.Stop())
		}
		return err
	}
	defer func() { err = errors.Join(err, s.Stop()) }()
	server := "?"
	if v, verr := client.Discovery().ServerVersion(); verr == nil {
		server = v.GitVersion
	}
	fmt.Fprintf(out, "snug-lab bench admission on Kubernetes %s\n", server)
	cfg, err := clientcmd.BuildConfigFromFlags("", o.lab.Kubeconfig())
	if err != nil {
		return err
	}
	bo := experiment.AdmissionBenchOptions{Pods: o.Pods, Concurrency: o.Concurrency, Config: cfg}
	b, err := experiment.BenchAdmission(ctx, client, pc, bo)
	if err != nil {
		return err
	}
	b.Print(out, bo)
	return nil
}
