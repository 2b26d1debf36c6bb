package labcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/snug-dev/snug/internal/cli"
	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/scale"
)

// benchKubeletOptions configure `snug-lab bench kubelet`.
type benchKubeletOptions struct {
	lab     *lab.Options
	Pods    int
	Rates   []float64
	Window  time.Duration
	Rounds  int
	MaxLoad float64
	KeepLab bool
	Timeout time.Duration
}

func newBenchKubeletOptions() *benchKubeletOptions {
	return &benchKubeletOptions{lab: lab.NewOptions(), Pods: 30, Rates: []float64{1, 6}, Window: time.Minute, Rounds: 3, MaxLoad: 0.5, Timeout: 5 * time.Minute}
}

func (o *benchKubeletOptions) AddFlags(fs *pflag.FlagSet) {
	o.lab.AddFlags(fs)
	fs.IntVar(&o.Pods, "pods", o.Pods, "idle pods on the lab's node whose snapshot annotation is patched")
	fs.Float64SliceVar(&o.Rates, "rates", o.Rates, "patches per pod per minute to measure (1 is a snapshot a minute, what snug's agent sent before issue 29)")
	fs.DurationVar(&o.Window, "window", o.Window, "each measured window")
	fs.IntVar(&o.Rounds, "rounds", o.Rounds, "rounds, each a window without writes then one per rate")
	fs.Float64Var(&o.MaxLoad, "max-load", o.MaxLoad, "refuse to start when the 1-minute load average per core is above this")
	fs.BoolVar(&o.KeepLab, "keep-lab", o.KeepLab, "leave the lab up afterwards (a lab that was already up is always left up)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "longest wait for the pods to run and to go")
}

func (o *benchKubeletOptions) Validate() error {
	var errs []error
	if o.Pods < 1 || o.Pods > 100 {
		errs = append(errs, fmt.Errorf("--pods %d is out of range [1, 100]", o.Pods))
	}
	if len(o.Rates) == 0 {
		errs = append(errs, errors.New("--rates names no rate"))
	}
	for _, r := range o.Rates {
		if r <= 0 || r > 600 {
			errs = append(errs, fmt.Errorf("--rates %v is out of range (0, 600]", r))
		}
	}
	if o.Window < 10*time.Second || o.Rounds < 1 || o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--window %s, --rounds %d, --timeout %s: the window at least 10s, at least one round, a positive timeout", o.Window, o.Rounds, o.Timeout))
	}
	if o.MaxLoad <= 0 {
		errs = append(errs, fmt.Errorf("--max-load %v must be positive", o.MaxLoad))
	}
	if err := o.lab.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func newBenchKubeletCommand(stdout io.Writer) *cobra.Command {
	o := newBenchKubeletOptions()
	cmd := &cobra.Command{
		Use:   "kubelet",
		Short: "Measure the real kubelet's CPU per snapshot patch of a pod (what kwok does not model)",
		Long: `Brings the lab up (or uses the one that is up), runs --pods idle snug-load
pods on its node, and in each of --rounds rounds measures the kubelet's CPU
time (/proc/PID/stat) over a --window without any write, then over a window
per --rates rate in which the pods' snapshot annotation is patched that many
times per pod per minute with a real snapshot's value (a day of history,
the size snug's agent writes). It prints, per rate, the kubelet's cores
without and with the patches and the median over the rounds of its extra CPU
time per patch: the kubelet's own cost of each pod write snug makes, which
the scale bench's kwok nodes cannot show. snug is not installed: the writes
are the bench's, so that nothing else moves.

It refuses to start on a busy machine (--max-load).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return cli.WithExitCode(2, err)
			}
			return runBenchKubelet(cmd.Context(), o, stdout)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runBenchKubelet(ctx context.Context, o *benchKubeletOptions, out io.Writer) (err error) {
	lw := &prefixWriter{w: out, prefix: "   "}
	defer lw.Flush()
	client, release, err := benchLab(ctx, o.lab, o.KeepLab, o.MaxLoad, lw)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release(context.WithoutCancel(ctx))) }()
	pid, ok := o.lab.PID("kubelet")
	if !ok {
		return errors.New("the lab's kubelet is not running")
	}
	server := "?"
	if v, verr := client.Discovery().ServerVersion(); verr == nil {
		server = v.GitVersion
	}
	now := time.Now()
	var values []string
	for _, t := range []time.Time{now, now.Add(time.Second)} {
		v, err := scale.AgedSnapshot(scale.Steady{CPUMillis: 50, MemBytes: 48 << 20}, 24*time.Hour, t)
		if err != nil {
			return err
		}
		values = append(values, v)
	}
	ns, err := experiment.CreateNamespace(ctx, client, "snug-kubelet-", o.Timeout)
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, experiment.DeleteNamespace(context.WithoutCancel(ctx), client, ns, o.Timeout))
	}()
	node := workNodeName(o.lab)
	pods, err := experiment.LoadDeployment{
		Name: "idle", Replicas: int32(o.Pods), CPURequest: "10m", CPULimit: "50m", MemoryRequest: "32Mi", MemoryLimit: "64Mi",
		Args: []string{"--cpu=1m"}, LoadDir: o.lab.LoadDir(), Node: node,
	}.Create(ctx, client, ns, o.Timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "snug-lab bench kubelet: Kubernetes %s, kubelet pid %d on %s; %d idle pods; snapshot values of %d bytes; %d round(s) of a %s window without writes, then one per rate %v (patches per pod per minute)\n",
		server, pid, node, len(pods), len(values[0]), o.Rounds, o.Window, o.Rates)
	rows, err := experiment.KubeletCost(ctx, experiment.KubeletCostOptions{
		Client: client, Namespace: ns, Pods: pods, KubeletPID: pid, Rates: o.Rates, Window: o.Window, Rounds: o.Rounds,
		Values: values, Log: lw,
	})
	lw.Flush()
	printKubeletCost(out, rows, len(pods), o.Window)
	return err
}

// printKubeletCost prints one row per rate: medians over the rounds.
func printKubeletCost(out io.Writer, rows []experiment.KubeletCostRow, pods int, window time.Duration) {
	median := func(v []float64) float64 {
		if len(v) == 0 {
			return 0
		}
		s := slices.Sorted(slices.Values(v))
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	fmt.Fprintf(out, "%-22s %12s %16s %16s %14s %18s\n", "patches/pod/min", "patches/s", "kubelet cores,", "kubelet cores,", "ms of kubelet", "kubelet cores per")
	fmt.Fprintf(out, "%-22s %12s %16s %16s %14s %18s\n", "", "", "no writes", "with", "CPU per patch", "patch/s")
	for _, r := range rows {
		var ps []float64
		for _, p := range r.Patches {
			ps = append(ps, float64(p)/window.Seconds())
		}
		fmt.Fprintf(out, "%-22.1f %12.2f %16.4f %16.4f %14.2f %18.4f\n", r.Rate, median(ps), median(r.Base), median(r.With), r.MsPerPatch, r.MsPerPatch/1000)
	}
	fmt.Fprintf(out, "(medians over the rounds; %d pods; a patch changes the pod's snapshot annotation, as the agent's snapshot does)\n", pods)
}
