package labcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/cli"
	"github.com/snug-dev/snug/internal/trace"
	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/lab/vpa"
)

// The autoscalers `snug-lab bench reaction` knows.
const (
	autoscalerSnug = "snug"
	autoscalerVPA  = "vpa"
)

// The goals issue 5 sets for snug's T3, and issue 16 for its T4
// ("starvation ended within 4 s (p50) of a 4x CPU step on the lab": the
// step's 400m is 4x the 100m limit).
const (
	goalMedianT3Seconds = 2
	goalP95T3Seconds    = 5
	goalMedianT4Seconds = 4
)

// benchReactionOptions configures `snug-lab bench reaction`.
type benchReactionOptions struct {
	lab *lab.Options
	// Autoscalers run one after the other, in this order.
	Autoscalers []string
	// Runs is the number of runs per autoscaler.
	Runs int
	// KeepLab leaves a lab (and VPA) this command brought up running.
	KeepLab bool
	// TraceDir, when set, receives an SVG and a CSV per run.
	TraceDir string
	// Timeout bounds each run's settling and, separately, its wait for
	// the resize.
	Timeout time.Duration
}

func newBenchReactionOptions() *benchReactionOptions {
	return &benchReactionOptions{lab: lab.NewOptions(), Autoscalers: []string{autoscalerSnug}, Runs: 3, Timeout: 6 * time.Minute}
}

func (o *benchReactionOptions) AddFlags(fs *pflag.FlagSet) {
	o.lab.AddFlags(fs)
	fs.StringSliceVar(&o.Autoscalers, "autoscaler", o.Autoscalers, "autoscalers to measure, one after the other: snug, vpa or snug,vpa")
	fs.IntVar(&o.Runs, "runs", o.Runs, "runs per autoscaler")
	fs.BoolVar(&o.KeepLab, "keep-lab", false, "leave the lab (and VPA) up if this command brought them up (a lab that was up is always left up)")
	fs.StringVar(&o.TraceDir, "trace-dir", "", "write each run's trace here as AUTOSCALER-runN.svg and .csv")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "per run: how long to wait for the pods to settle, and for the resize after the load step")
}

func (o *benchReactionOptions) Validate() error {
	var errs []error
	if len(o.Autoscalers) == 0 {
		errs = append(errs, errors.New("--autoscaler: name at least one of snug, vpa"))
	}
	seen := map[string]bool{}
	for _, a := range o.Autoscalers {
		switch {
		case a != autoscalerSnug && a != autoscalerVPA:
			errs = append(errs, fmt.Errorf("--autoscaler %q: want snug, vpa or snug,vpa", a))
		case seen[a]:
			errs = append(errs, fmt.Errorf("--autoscaler names %s twice", a))
		}
		seen[a] = true
	}
	if o.Runs < 1 {
		errs = append(errs, fmt.Errorf("--runs %d: want at least 1", o.Runs))
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s: want a positive duration", o.Timeout))
	}
	if o.TraceDir != "" {
		if st, err := os.Stat(o.TraceDir); err == nil && !st.IsDir() {
			errs = append(errs, fmt.Errorf("--trace-dir %s is not a directory", o.TraceDir))
		}
	}
	errs = append(errs, o.lab.Validate())
	return errors.Join(errs...)
}

func newBenchReactionCommand(stdout io.Writer) *cobra.Command {
	o := newBenchReactionOptions()
	cmd := &cobra.Command{
		Use:   "reaction [--autoscaler snug,vpa] [--runs N] [--trace-dir DIR]",
		Short: "Measure on the lab how fast snug (and upstream VPA) resize a Deployment after a load step",
		Long: `Runs the field report's wall-3 experiment on the lab (brought up if it is not
up, and taken down again unless it was up or --keep-lab): a Deployment of two
snug-load replicas at cpu 50m (limit 100m, memory 64Mi/128Mi) under an
InPlaceOrRecreate SnugPolicy (snug) or VerticalPodAutoscaler (vpa); once the
pods have settled, their load steps to 400m. Each run prints the seconds from
the step to:

  T1       snug's decision to grow (the agent's sample; VPA has none)
  T2       snug's patch (the API server's answer), or VPA's first change of
           its recommended cpu target
  T3       a replica's status.containerStatuses[].resources showing the resize
           (or, if VPA evicts, a new replica running with new requests)
  T4       starvation ended: the end of the first 2 s in which every
           replica's container ran throttled under 5 % of its CFS periods,
           read from their cgroup files on this machine (nr_periods,
           nr_throttled) every second, the definition snug-lab bench
           quality uses; "never" when it had not 30 s after T3
  KUBELET  the kubelet's part of T3: from allocatedResources moving (or
           PodResizeInProgress) to the status showing the resize

and T3-T2, then the median and p95 of each column, and with both autoscalers the ratio of
their medians. See docs/benchmarks.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return cli.WithExitCode(2, err)
			}
			return runBenchReaction(cmd.Context(), o, stdout)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runBenchReaction(ctx context.Context, o *benchReactionOptions, out io.Writer) (err error) {
	if o.TraceDir != "" {
		if err := os.MkdirAll(o.TraceDir, 0o755); err != nil {
			return fmt.Errorf("--trace-dir: %w", err)
		}
	}
	lw := &prefixWriter{w: out, prefix: "   "}
	defer lw.Flush()
	release, reused, err := lab.UpOrReuse(ctx, o.lab, o.KeepLab, lw)
	if err != nil {
		return err
	}
	if reused {
		fmt.Fprintln(out, "using the lab that is up (and leaving it up)")
	}
	defer func() { err = errors.Join(err, release(context.WithoutCancel(ctx))) }()
	client, err := o.lab.Client()
	if err != nil {
		return err
	}
	version := "unknown"
	if v, verr := client.Discovery().ServerVersion(); verr == nil {
		version = v.GitVersion
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.lab.Kubeconfig())
	if err != nil {
		return fmt.Errorf("loading the lab's kubeconfig: %w", err)
	}
	cfg.Timeout = requestTimeout
	env := experiment.ReactionEnv{Client: client, LoadDir: o.lab.LoadDir(), CgroupRoot: labCgroupRoot, Timeout: o.Timeout, Log: out}
	fmt.Fprintf(out, "snug-lab bench reaction: Kubernetes %s, %d run(s) each of %s\n", version, o.Runs, strings.Join(o.Autoscalers, ", "))
	fmt.Fprintf(out, "workload: 2 replicas of snug-load at cpu 50m/100m, memory 64Mi/128Mi; load step to %s\n\n", experiment.ReactionStep)

	results := map[string][]*experiment.ReactionRun{}
	for _, a := range o.Autoscalers {
		var runs []*experiment.ReactionRun
		switch a {
		case autoscalerSnug:
			runs, err = benchSnugRuns(ctx, o, env, cfg)
		case autoscalerVPA:
			runs, err = benchVPARuns(ctx, o, env, cfg, lw)
		}
		results[a] = runs
		if len(runs) > 0 {
			fmt.Fprintln(out)
			writeReactionTable(out, a, version, reactionRows(runs))
			fmt.Fprintln(out)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	if len(results[autoscalerSnug]) > 0 && len(results[autoscalerVPA]) > 0 {
		writeReactionComparison(out, version, reactionRows(results[autoscalerSnug]), reactionRows(results[autoscalerVPA]))
	}
	return nil
}

// benchSnugRuns starts snug's agent and controller, runs the experiment
// o.Runs times and stops them.
func benchSnugRuns(ctx context.Context, o *benchReactionOptions, env experiment.ReactionEnv, cfg *rest.Config) (runs []*experiment.ReactionRun, err error) {
	pc, err := policyclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the snug binary: %w", err)
	}
	logDir, err := os.MkdirTemp("", "snug-bench-reaction-")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(env.Log, "snug: installing it in-cluster with its chart (pods' logs in %s at the end)\n", logDir)
	s, err := installInLab(ctx, env.Client, labInstall{
		lab: o.lab, binDir: filepath.Dir(exe), logDir: logDir, timeout: o.Timeout, out: env.Log,
	})
	if err != nil {
		if s != nil {
			err = errors.Join(err, s.Stop())
		}
		return nil, err
	}
	defer func() {
		err = errors.Join(err, s.Stop())
		if err == nil {
			os.RemoveAll(logDir)
		}
	}()
	env.Policies, env.AgentURL, env.AgentToken, env.AgentHTTP = pc, s.AgentURL, s.Token, s.HTTP
	return benchRuns(ctx, o, env, autoscalerSnug, experiment.SnugReaction)
}

// benchVPARuns starts VPA and metrics-server (or uses them), runs the
// experiment o.Runs times and stops what it started.
func benchVPARuns(ctx context.Context, o *benchReactionOptions, env experiment.ReactionEnv, cfg *rest.Config, log io.Writer) (runs []*experiment.ReactionRun, err error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	vo := vpa.NewOptions(o.lab)
	fmt.Fprintf(env.Log, "vpa: VPA %s and metrics-server %s (metric resolution %s)\n", vo.VPAVersion, vo.MetricsServerVersion, vo.MetricResolution)
	release, reused, err := vpa.UpOrReuse(ctx, vo, o.KeepLab, log)
	if err != nil {
		return nil, err
	}
	if reused {
		fmt.Fprintln(env.Log, "vpa: using the VPA that is up (and leaving it up)")
	}
	defer func() { err = errors.Join(err, release(context.WithoutCancel(ctx))) }()
	env.Dynamic = dyn
	return benchRuns(ctx, o, env, autoscalerVPA, experiment.VPAReaction)
}

func benchRuns(ctx context.Context, o *benchReactionOptions, env experiment.ReactionEnv, name string,
	one func(context.Context, experiment.ReactionEnv) (*experiment.ReactionRun, error),
) ([]*experiment.ReactionRun, error) {
	var runs []*experiment.ReactionRun
	for i := 1; i <= o.Runs; i++ {
		fmt.Fprintf(env.Log, "%s run %d/%d\n", name, i, o.Runs)
		run, err := one(ctx, env)
		if run.Recording != nil && o.TraceDir != "" {
			if werr := writeRunTrace(o.TraceDir, fmt.Sprintf("%s-run%d", name, i), run.Recording); werr != nil {
				err = errors.Join(err, werr)
			}
		}
		if err != nil {
			return runs, fmt.Errorf("run %d: %w", i, err)
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// writeRunTrace writes base.svg and base.csv into dir, t counted from the
// load step.
func writeRunTrace(dir, base string, rec *trace.Recording) error {
	origin, err := rec.Origin(experiment.ReactionMark)
	if err != nil {
		origin = rec.Started
	}
	if err := trace.WriteFile(filepath.Join(dir, base+".svg"), func(w io.Writer) error {
		return trace.WriteSVG(w, rec, trace.SVGOptions{Origin: origin, OriginName: experiment.ReactionMark})
	}); err != nil {
		return err
	}
	return trace.WriteFile(filepath.Join(dir, base+".csv"), func(w io.Writer) error { return trace.WriteCSV(w, rec, origin) })
}

// reactionRow is one run in seconds from the load step; NaN is "not
// seen", and a T4 of +Inf "never" (starvation had not ended within
// experiment.ReactionEndedWindow of T3; StillThrottled says how much).
type reactionRow struct {
	T1, T2, T3, T4, Kubelet float64
	StillThrottled          float64
	How, CPU                string
}

func (r reactionRow) t3MinusT2() float64 { return r.T3 - r.T2 }

func reactionRows(runs []*experiment.ReactionRun) []reactionRow {
	rows := make([]reactionRow, 0, len(runs))
	for _, run := range runs {
		since := func(t time.Time) float64 {
			if t.IsZero() {
				return math.NaN()
			}
			return t.Sub(run.Step).Seconds()
		}
		r := reactionRow{
			T1: since(run.Decision), T2: since(run.Change), T3: math.NaN(), T4: math.NaN(), Kubelet: math.NaN(),
			StillThrottled: run.StillThrottled, How: "timed out", CPU: "-",
		}
		if run.EndedMeasured {
			r.T4 = math.Inf(1)
			if !run.Ended.IsZero() {
				r.T4 = since(run.Ended)
			}
		}
		if !run.TimedOut {
			re := run.Reaction
			r.T3 = since(re.At)
			r.How = "in place"
			if re.Recreated {
				r.How = "recreated"
			}
			if d, ok := re.Kubelet(); ok {
				r.Kubelet = d.Seconds()
			}
			r.CPU = cpuPair(re.From) + " -> " + cpuPair(re.To)
		}
		rows = append(rows, r)
	}
	return rows
}

func cpuPair(r trace.Resources) string {
	return fmt.Sprintf("%dm/%dm", r.CPURequestMillis, r.CPULimitMillis)
}

// median of the values that are not NaN; NaN when there are none.
func median(xs []float64) float64 {
	s := seen(xs)
	switch n := len(s); {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return s[n/2]
	default:
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// p95 is the nearest-rank 95th percentile of the values that are not NaN
// (with fewer than 20 values, the largest); NaN when there are none.
func p95(xs []float64) float64 {
	s := seen(xs)
	if len(s) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(0.95 * float64(len(s))))
	return s[rank-1]
}

func seen(xs []float64) []float64 {
	var s []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	slices.Sort(s)
	return s
}

func column(rows []reactionRow, f func(reactionRow) float64) []float64 {
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

func secs(x float64) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case math.IsInf(x, 1):
		return "never"
	}
	return fmt.Sprintf("%.2f", x)
}

// reactionColumns are the table's figures, in order.
var reactionColumns = []struct {
	name string
	get  func(reactionRow) float64
}{
	{"T1", func(r reactionRow) float64 { return r.T1 }},
	{"T2", func(r reactionRow) float64 { return r.T2 }},
	{"T3", func(r reactionRow) float64 { return r.T3 }},
	{"T4", func(r reactionRow) float64 { return r.T4 }},
	{"T3-T2", reactionRow.t3MinusT2},
	{"KUBELET", func(r reactionRow) float64 { return r.Kubelet }},
}

// writeReactionTable prints one autoscaler's runs, their median and p95,
// and, for snug, the goal.
func writeReactionTable(w io.Writer, name, version string, rows []reactionRow) {
	fmt.Fprintf(w, "%s on Kubernetes %s: seconds from the load step (%d runs)\n", name, version, len(rows))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{"RUN"}
	for _, c := range reactionColumns {
		head = append(head, c.name)
	}
	fmt.Fprintln(tw, strings.Join(append(head, "HOW", "CPU request/limit"), "\t"))
	for i, r := range rows {
		cells := []string{fmt.Sprint(i + 1)}
		for _, c := range reactionColumns {
			cells = append(cells, secs(c.get(r)))
		}
		fmt.Fprintln(tw, strings.Join(append(cells, r.How, r.CPU), "\t"))
	}
	for _, stat := range []struct {
		name string
		f    func([]float64) float64
	}{{"median", median}, {"p95", p95}} {
		cells := []string{stat.name}
		for _, c := range reactionColumns {
			cells = append(cells, secs(stat.f(column(rows, c.get))))
		}
		fmt.Fprintln(tw, strings.Join(append(cells, "", ""), "\t"))
	}
	tw.Flush()
	for i, r := range rows {
		if math.IsInf(r.T4, 1) {
			still := "an unknown share of periods"
			if !math.IsNaN(r.StillThrottled) {
				still = fmt.Sprintf("%.0f%% of periods", 100*r.StillThrottled)
			}
			fmt.Fprintf(w, "run %d: starvation had not ended %s after T3: still throttled, %s in the last 2 s\n",
				i+1, experiment.ReactionEndedWindow, still)
		}
	}
	if name == autoscalerSnug {
		t3 := column(rows, func(r reactionRow) float64 { return r.T3 })
		fmt.Fprintf(w, "goal: median T3 <= %d s (%s: %s), p95 T3 <= %d s (%s: %s)\n",
			goalMedianT3Seconds, secs(median(t3)), met(median(t3), goalMedianT3Seconds),
			goalP95T3Seconds, secs(p95(t3)), met(p95(t3), goalP95T3Seconds))
		t4 := column(rows, func(r reactionRow) float64 { return r.T4 })
		fmt.Fprintf(w, "goal: starvation ended within %d s (p50) of a 4x CPU step: median T4 %s (%s)\n",
			goalMedianT4Seconds, secs(median(t4)), met(median(t4), goalMedianT4Seconds))
	}
}

// met judges x at the resolution it is printed with (0.01 s): T4 is read on
// the starvation watch's one-second ticks, which start at the step and fall
// a few milliseconds late, so "starvation ended on the fourth tick" prints
// 4.00 and is within the 4 s goal.
func met(x float64, goal float64) string {
	if !math.IsNaN(x) && math.Round(x*100)/100 <= goal {
		return "met"
	}
	return "not met"
}

// writeReactionComparison prints the medians side by side and their ratio
// VPA/snug.
func writeReactionComparison(w io.Writer, version string, snug, vpaRows []reactionRow) {
	fmt.Fprintf(w, "side by side on Kubernetes %s: median seconds from the load step\n", version)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tsnug\tvpa\tvpa/snug")
	for _, c := range reactionColumns[1:] {
		s, v := median(column(snug, c.get)), median(column(vpaRows, c.get))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.name, secs(s), secs(v), ratio(v, s))
	}
	tw.Flush()
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) || b <= 0 {
		return "-"
	}
	if r := a / b; r < 10 {
		return fmt.Sprintf("%.1fx", r)
	}
	return fmt.Sprintf("%.0fx", a/b)
}
