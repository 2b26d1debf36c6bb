package labcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/snug-dev/snug/internal/cli"
	"github.com/snug-dev/snug/internal/version"
	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/lab/kwok"
	"github.com/snug-dev/snug/lab/internal/quality"
	"github.com/snug-dev/snug/lab/internal/quality/trace"
	"github.com/snug-dev/snug/lab/internal/scale"
)

// benchScaleOptions configures `snug-lab bench scale`.
type benchScaleOptions struct {
	lab                        *lab.Options
	Nodes                      []int
	PodsPerNode, PodsPerPolicy int
	Warmup, Steady             time.Duration
	StepFraction               float64
	StepTimeout                time.Duration
	PodAge                     time.Duration
	CreateRates                []int
	CreateFor                  time.Duration
	RolloutWindow              time.Duration
	LeaderKill                 bool
	// Trace is a directory (or file) of Google cluster-data 2019 rows
	// whose tasks' loads the pods play; GoogleMode and Google read it.
	Trace      string
	GoogleMode string
	Google     trace.GoogleOptions
	// MaxLoad is the 1-minute load average per core above which the bench
	// refuses to start.
	MaxLoad float64
	KeepLab bool
}

func newBenchScaleOptions() *benchScaleOptions {
	return &benchScaleOptions{
		lab: lab.NewOptions(), Nodes: []int{50, 100, 200}, PodsPerNode: 30, PodsPerPolicy: 30,
		Warmup: 2 * time.Minute, Steady: 2 * time.Minute, StepFraction: 0.1, StepTimeout: 3 * time.Minute, PodAge: 24 * time.Hour, MaxLoad: 0.5,
		CreateRates: []int{10, 50, 100}, CreateFor: 10 * time.Second, RolloutWindow: time.Minute, LeaderKill: true,
		GoogleMode: "drawn", Google: trace.GoogleOptions{CPUMillis: 64000, MemBytes: 256 << 30, Seed: 1, Hours: 72},
	}
}

func (o *benchScaleOptions) AddFlags(fs *pflag.FlagSet) {
	o.lab.AddFlags(fs)
	fs.IntSliceVar(&o.Nodes, "nodes", o.Nodes, "node counts to run, in order")
	fs.IntVar(&o.PodsPerNode, "pods-per-node", o.PodsPerNode, "pods on each kwok node")
	fs.IntVar(&o.PodsPerPolicy, "pods-per-policy", o.PodsPerPolicy, "pods under each SnugPolicy")
	fs.DurationVar(&o.Warmup, "warmup", o.Warmup, "time before the steady window (first snapshots, first folds)")
	fs.DurationVar(&o.Steady, "steady", o.Steady, "the steady window measured")
	fs.Float64Var(&o.StepFraction, "step-fraction", o.StepFraction, "share of the pods given a 4x CPU step after the steady window")
	fs.DurationVar(&o.StepTimeout, "step-timeout", o.StepTimeout, "longest wait for the stepped pods' resizes")
	fs.DurationVar(&o.PodAge, "pod-age", o.PodAge, "history each pod starts with (a snapshot annotation at its steady load), so that the steady window measures pods that have aged; 0 for new pods")
	fs.IntSliceVar(&o.CreateRates, "create-rates", o.CreateRates, "pod creation rates (per second) through snug's admission webhook, each held for --create-for, after the step")
	fs.DurationVar(&o.CreateFor, "create-for", o.CreateFor, "how long each --create-rates rate is held; 0 skips the creation phase")
	fs.DurationVar(&o.RolloutWindow, "rollout-window", o.RolloutWindow, "after the creations, restart every hollow agent at once and count their writes over this window; 0 skips the rollout")
	fs.BoolVar(&o.LeaderKill, "leader-kill", o.LeaderKill, "end each count with a leader kill: SIGKILL the leading controller (no Lease release), delete its pod, and time the takeover and a policy's status")
	fs.StringVar(&o.Trace, "trace", o.Trace, "play real loads: Google cluster-data 2019 instance_usage rows as cloud-traces-comparison publishes them (a CSV file or a directory of them, docs/quality.md); each policy's pods play one task from a seeded offset, with its resources and, with --pod-age, its own history before it (default: a flat 50m and 48Mi)")
	fs.StringVar(&o.GoogleMode, "google-mode", o.GoogleMode, "--trace: drawn (each second's cpu drawn from its window's percentiles) or hold (each window's mean cpu and peak memory held for its 5 minutes)")
	fs.Float64Var(&o.Google.CPUMillis, "google-cpu-millis", o.Google.CPUMillis, "--trace: millicores a normalised cpu of 1.0 (the largest machine) stands for")
	fs.Float64Var(&o.Google.MemBytes, "google-mem-bytes", o.Google.MemBytes, "--trace: bytes a normalised memory of 1.0 stands for")
	fs.Uint64Var(&o.Google.Seed, "google-seed", o.Google.Seed, "--trace: seeds each policy's task and offset, and the drawn seconds")
	fs.Float64Var(&o.MaxLoad, "max-load", o.MaxLoad, "refuse to start when the 1-minute load average per core is above this")
	fs.BoolVar(&o.KeepLab, "keep-lab", o.KeepLab, "leave the lab up afterwards (a lab that was already up is always left up)")
}

func (o *benchScaleOptions) Validate() error {
	var errs []error
	if len(o.Nodes) == 0 {
		errs = append(errs, errors.New("--nodes names no node count"))
	}
	for i, n := range o.Nodes {
		if n < 1 || n > 5000 {
			errs = append(errs, fmt.Errorf("--nodes %d is out of range [1, 5000]", n))
		}
		// Each count's namespace and kwok nodes are its own; a second
		// run of a count would meet the first's, still going.
		if slices.Contains(o.Nodes[:i], n) {
			errs = append(errs, fmt.Errorf("--nodes %d is named twice", n))
		}
	}
	if o.PodsPerNode < 1 || o.PodsPerNode > 110 {
		errs = append(errs, fmt.Errorf("--pods-per-node %d is out of range [1, 110]", o.PodsPerNode))
	}
	if o.PodsPerPolicy < 1 || o.PodsPerPolicy > 10000 {
		errs = append(errs, fmt.Errorf("--pods-per-policy %d is out of range [1, 10000]", o.PodsPerPolicy))
	}
	if o.Warmup < 0 || o.Steady < 10*time.Second || o.StepTimeout < 10*time.Second {
		errs = append(errs, fmt.Errorf("--warmup %s, --steady %s, --step-timeout %s: the warm-up must not be negative, the others at least 10s", o.Warmup, o.Steady, o.StepTimeout))
	}
	if o.StepFraction <= 0 || o.StepFraction > 1 {
		errs = append(errs, fmt.Errorf("--step-fraction %v is out of range (0, 1]", o.StepFraction))
	}
	for _, r := range o.CreateRates {
		if r < 1 || r > 1000 {
			errs = append(errs, fmt.Errorf("--create-rates %d is out of range [1, 1000]", r))
		}
	}
	switch {
	case o.CreateFor == 0:
		o.CreateRates = nil
	case o.CreateFor < time.Second || o.CreateFor > 10*time.Minute:
		errs = append(errs, fmt.Errorf("--create-for %s is out of range [1s, 10m], or 0 to skip the creations", o.CreateFor))
	}
	if o.GoogleMode != "drawn" && o.GoogleMode != "hold" {
		errs = append(errs, fmt.Errorf("--google-mode %q: want drawn or hold", o.GoogleMode))
	}
	o.Google.Hold = o.GoogleMode == "hold"
	if o.RolloutWindow < 0 {
		errs = append(errs, fmt.Errorf("--rollout-window %s must not be negative", o.RolloutWindow))
	}
	if o.PodAge < 0 {
		errs = append(errs, fmt.Errorf("--pod-age %s must not be negative", o.PodAge))
	}
	if o.MaxLoad <= 0 {
		errs = append(errs, fmt.Errorf("--max-load %v must be positive", o.MaxLoad))
	}
	if err := o.lab.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func newBenchScaleCommand(stdout io.Writer) *cobra.Command {
	o := newBenchScaleOptions()
	cmd := &cobra.Command{
		Use:   "scale [--nodes 50,100,200]",
		Short: "Measure snug's API traffic, controller cost and resize latency at 50-400 kwok nodes, extrapolated to 1,000 and 5,000",
		Long: `Brings the lab up (or uses the one that is up), installs snug in-cluster with
its chart (the controller's two replicas on the lab's node), starts kwok
(built into the cache) to play the kubelets of kwok nodes, with snug's pod
stages for the kubelet's part of an in-place resize, and for each --nodes
count: creates the nodes, one SnugPolicy per --pods-per-policy pods and
--pods-per-node pods per node, runs a hollow agent per node in this process
(real agent loops sampled from a steady load), waits --warmup, measures a
--steady window (snug's writes by kind from the agents' and the controller's
own counters, the API server's requests and write p99 from its metrics, the
controller's CPU and RSS, etcd's growth), then steps --step-fraction of the
pods to 4x their CPU and times each grow until applied. Then, as
configured: pods created through snug's admission webhook at each
--create-rates rate (the webhook's latency as the API server timed it),
every hollow agent restarted at once (--rollout-window: time to ready,
writes), and a leader kill (--leader-kill: the takeover, and a policy's
status after a change of its spec). It prints a row per count and each
linear figure extrapolated to 1,000 and 5,000 nodes.

It refuses to start on a busy machine (--max-load), since its figures would
be the other work's. docs/scale.md has the method and what kwok does not
model.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return cli.WithExitCode(2, err)
			}
			return runBenchScale(cmd.Context(), o, stdout)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// loadPerCore is the 1-minute load average over the cores.
func loadPerCore() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/loadavg: %q", b)
	}
	l, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/loadavg: %w", err)
	}
	return l / float64(runtime.NumCPU()), nil
}

// benchLab is a load bench's start: it refuses a busy machine (the 1-minute
// load average per core above maxLoad: the figures would be the other
// work's), then brings the lab up or reuses the one that is up, and
// returns its client and what releases it.
func benchLab(ctx context.Context, o *lab.Options, keep bool, maxLoad float64, lw *prefixWriter) (kubernetes.Interface, func(context.Context) error, error) {
	if l, err := loadPerCore(); err != nil {
		return nil, nil, err
	} else if l > maxLoad {
		return nil, nil, fmt.Errorf("the machine is busy: load average %.2f per core, above --max-load %.2f; the bench's figures would be the other work's", l, maxLoad)
	}
	release, _, err := lab.UpOrReuse(ctx, o, keep, lw)
	lw.Flush()
	if err != nil {
		return nil, nil, err
	}
	client, err := o.Client()
	if err != nil {
		return nil, nil, errors.Join(err, release(context.WithoutCancel(ctx)))
	}
	return client, release, nil
}

func runBenchScale(ctx context.Context, o *benchScaleOptions, out io.Writer) (err error) {
	var traces []*trace.Trace
	if o.Trace != "" {
		// Read first: a bad trace changes nothing.
		if traces, err = quality.ReadGoogleFiles(o.Trace, o.Google); err != nil {
			return cli.WithExitCode(2, err)
		}
	}
	lw := &prefixWriter{w: out, prefix: "   "}
	defer lw.Flush()
	client, release, err := benchLab(ctx, o.lab, o.KeepLab, o.MaxLoad, lw)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release(context.WithoutCancel(ctx))) }()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the snug binary: %w", err)
	}
	logDir, err := os.MkdirTemp("", "snug-bench-scale-")
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
	if err := kwok.Up(ctx, o.lab, lw); err != nil {
		return err
	}
	lw.Flush()
	defer func() { err = errors.Join(err, kwok.Down(o.lab)) }()
	server := "?"
	if v, verr := client.Discovery().ServerVersion(); verr == nil {
		server = v.GitVersion
	}
	loads := "a flat 50m and 48Mi"
	if len(traces) > 0 {
		n := 0
		for _, t := range traces {
			n += len(t.Pods)
		}
		loads = fmt.Sprintf("%d tasks of %d jobs of %s (%s mode, 1.0 = %.0fm and %.0f GiB, seed %d)", n, len(traces), o.Trace, o.GoogleMode, o.Google.CPUMillis, o.Google.MemBytes/(1<<30), o.Google.Seed)
	}
	fmt.Fprintf(out, "snug-lab bench scale: snug %s on Kubernetes %s, kwok v%s, %d cores; nodes %v, %d pods per node, %d per policy; loads: %s; warm-up %s, steady %s, step %.0f%% of the pods to 4x CPU; pods start with %s of history; creations at %v pods/s for %s each, rollout window %s, leader kill %v\n",
		version.Version, server, kwok.Version, runtime.NumCPU(), o.Nodes, o.PodsPerNode, o.PodsPerPolicy, loads, o.Warmup, o.Steady, o.StepFraction*100, o.PodAge, o.CreateRates, o.CreateFor, o.RolloutWindow, o.LeaderKill)
	cfg, err := clientcmd.BuildConfigFromFlags("", o.lab.Kubeconfig())
	if err != nil {
		return err
	}
	scrape := func(ctx context.Context) (scale.Scrape, error) {
		sc := scale.Scrape{At: time.Now()}
		api, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return sc, fmt.Errorf("reading the API server's metrics: %w", err)
		}
		sc.APIServer = string(api)
		sc.Etcd, _ = httpText(ctx, http.DefaultClient, "http://"+o.lab.NodeIP+":2381/metrics", "")
		sc.Controller, err = httpText(ctx, s.HTTP, s.ControllerMetricsURL, s.Token)
		if err != nil {
			return sc, fmt.Errorf("reading the controller's metrics: %w", err)
		}
		// The webhook's replicas are read for its handling time only: one
		// that does not answer is left out of that figure (and said so),
		// not the end of the run.
		urls, err := s.ControllerMetricsURLs(ctx)
		if err != nil {
			fmt.Fprintf(lw, "the webhook's handling time leaves out every replica: %v\n", err)
			return sc, nil
		}
		sc.Webhooks = map[string]string{}
		for pod, u := range urls {
			text, err := httpText(ctx, s.HTTP, u, s.Token)
			if err != nil {
				fmt.Fprintf(lw, "the webhook's handling time leaves out controller %s: %v\n", pod, err)
				continue
			}
			sc.Webhooks[pod] = text
		}
		return sc, nil
	}
	var kill func(context.Context) (string, error)
	var waitLeader func(context.Context, string) (string, error)
	if o.LeaderKill {
		kill = func(ctx context.Context) (string, error) { return s.KillLeader(ctx, labCgroupRoot) }
		waitLeader = s.WaitLeader
	}
	var runs []scale.Figures
	for _, n := range o.Nodes {
		fmt.Fprintf(out, "== %d nodes\n", n)
		f, err := scale.Bench(ctx, scale.BenchOptions{
			Nodes: n, PodsPerNode: o.PodsPerNode, PodsPerPolicy: o.PodsPerPolicy,
			Warmup: o.Warmup, Steady: o.Steady, StepFraction: o.StepFraction, StepTimeout: o.StepTimeout, PodAge: o.PodAge,
			CreateRates: o.CreateRates, CreateFor: o.CreateFor, RolloutWindow: o.RolloutWindow, KillLeader: kill, WaitLeader: waitLeader,
			Traces: traces, TraceSeed: o.Google.Seed,
			Config: cfg, Scrape: scrape, Log: lw,
		})
		lw.Flush()
		if ce := (*scale.CleanupError)(nil); errors.As(err, &ce) {
			fmt.Fprintf(out, "   at %d nodes, after the figures: %v\n", n, err)
			err = nil
		}
		if err != nil {
			if len(runs) > 0 {
				scale.PrintTable(out, runs)
			}
			return fmt.Errorf("at %d nodes: %w", n, err)
		}
		runs = append(runs, f)
	}
	scale.PrintTable(out, runs)
	return nil
}

// httpText GETs url (with a bearer token, if given) and returns the body.
func httpText(ctx context.Context, hc *http.Client, url, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}
