package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/cgroup"
	"github.com/snug-dev/snug/internal/recommend"
)

// agentOptions configures `snug agent`.
type agentOptions struct {
	// Node is the node whose pods the agent samples; required.
	Node string
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, then
	// ~/.kube/config, then the in-cluster service account.
	Kubeconfig string
	// Interval is the time between sampling passes.
	Interval time.Duration
	// History is how many points each container keeps.
	History int
	// Listen is the address of /metrics, /healthz, /readyz and the JSON API.
	Listen string
	// CgroupRoot is where cgroups are mounted.
	CgroupRoot string
	// Verbosity is the log level; 1 adds per-container events.
	Verbosity int
	// APITimeout bounds the start-up checks against the API server.
	APITimeout time.Duration
	// Autoscale turns the decision step on: pods under a SnugPolicy are
	// resized in place.
	Autoscale bool
	// DryRun decides and logs, but never patches a pod.
	DryRun bool
	// CPUHalfLife is the half-life of the CPU usage percentiles
	// (cluster-wide tuning; the policy's behavior tunes the rest).
	CPUHalfLife time.Duration
	// SnapshotInterval is the least time between two publications of a
	// pod's learnt history; 0 publishes none and seeds from no checkpoint.
	SnapshotInterval time.Duration
}

func newAgentOptions() *agentOptions {
	c := agent.NewConfig()
	return &agentOptions{
		Interval:    c.Interval,
		History:     c.HistorySize,
		Listen:      "127.0.0.1:9464",
		CgroupRoot:  c.CgroupRoot,
		APITimeout:  15 * time.Second,
		Autoscale:   true,
		CPUHalfLife: recommend.DefaultConfig().CPUHalfLife,

		SnapshotInterval: agent.DefaultPublishInterval,
	}
}

func (o *agentOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Node, "node", o.Node, "name of the node whose pods to sample (required; usually this machine's node)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
	fs.DurationVar(&o.Interval, "interval", o.Interval, fmt.Sprintf("time between sampling passes, %v to %v", agent.MinInterval, agent.MaxInterval))
	fs.IntVar(&o.History, "history", o.History, fmt.Sprintf("points kept per container, 1 to %d (264 bytes each)", agent.MaxHistorySize))
	fs.StringVar(&o.Listen, "listen", o.Listen, "address for /metrics, /healthz, /readyz and /api/v1/")
	fs.StringVar(&o.CgroupRoot, "cgroup-root", o.CgroupRoot, "where the cgroup hierarchies are mounted")
	fs.IntVarP(&o.Verbosity, "v", "v", o.Verbosity, "log verbosity; 1 logs each container tracked, gone or not found")
	fs.DurationVar(&o.APITimeout, "api-timeout", o.APITimeout, "how long to wait for the API server at start-up")
	fs.BoolVar(&o.Autoscale, "autoscale", o.Autoscale, "decide and resize in place the pods that a SnugPolicy covers (false: only sample)")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "decide and log resizes, but never patch a pod")
	fs.DurationVar(&o.CPUHalfLife, "cpu-half-life", o.CPUHalfLife, "half-life of the CPU usage percentiles behind grows and shrinks that are not starvation (1s to 24h)")
	fs.DurationVar(&o.SnapshotInterval, "snapshot-interval", o.SnapshotInterval, "least time between two publications of a pod's learnt history in its annotation (1s to 1h; 0: neither publish nor start pods from their policy's checkpoint)")
}

func (o *agentOptions) config() agent.Config {
	c := agent.NewConfig()
	c.Node, c.Interval, c.HistorySize, c.CgroupRoot = o.Node, o.Interval, o.History, o.CgroupRoot
	return c
}

func (o *agentOptions) Validate() error {
	var errs []error
	if o.Node == "" {
		errs = append(errs, errors.New("--node is required"))
	}
	if err := o.config().Validate(); err != nil {
		// Name the flags, not the config fields.
		msg := strings.NewReplacer("interval", "--interval", "history size", "--history", "cgroup root", "--cgroup-root").Replace(err.Error())
		errs = append(errs, errors.New(msg))
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		errs = append(errs, fmt.Errorf("--listen %q: %w", o.Listen, err))
	}
	if o.Verbosity < 0 {
		errs = append(errs, errors.New("--v must not be negative"))
	}
	if o.APITimeout <= 0 {
		errs = append(errs, errors.New("--api-timeout must be positive"))
	}
	if o.CPUHalfLife < time.Second || o.CPUHalfLife > 24*time.Hour {
		errs = append(errs, fmt.Errorf("--cpu-half-life %v is out of range [1s, 24h]", o.CPUHalfLife))
	}
	if o.SnapshotInterval != 0 && (o.SnapshotInterval < time.Second || o.SnapshotInterval > time.Hour) {
		errs = append(errs, fmt.Errorf("--snapshot-interval %v is out of range [1s, 1h] (or 0)", o.SnapshotInterval))
	}
	if o.DryRun && !o.Autoscale {
		errs = append(errs, errors.New("--dry-run needs --autoscale"))
	}
	return errors.Join(errs...)
}

func newAgentCommand(stdout, stderr io.Writer) *cobra.Command {
	o := newAgentOptions()
	cmd := &cobra.Command{
		Use:   "agent --node NAME",
		Short: "Sample every container of one node from its cgroups every second, resize in place the pods a SnugPolicy covers; serve /metrics and a JSON API",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return withExitCode(2, err)
			}
			return runAgent(cmd.Context(), o, stdout, stderr)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// newLogger logs one line per message to w, up to verbosity v.
func newLogger(w io.Writer, v int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		if prefix != "" {
			fmt.Fprintf(w, "%s %s: %s\n", time.Now().UTC().Format(time.RFC3339Nano), prefix, args)
			return
		}
		fmt.Fprintf(w, "%s %s\n", time.Now().UTC().Format(time.RFC3339Nano), args)
	}, funcr.Options{Verbosity: v})
}

func runAgent(ctx context.Context, o *agentOptions, stdout, stderr io.Writer) error {
	log := newLogger(stderr, o.Verbosity)
	ctx = logr.NewContext(ctx, log)

	layout, err := cgroup.Reader{Root: o.CgroupRoot}.Layout()
	if err != nil {
		return fmt.Errorf("reading cgroups at %s: %w", o.CgroupRoot, err)
	}
	client, err := newClient(o.Kubeconfig)
	if err != nil {
		return err
	}
	checkCtx, cancel := context.WithTimeout(ctx, o.APITimeout)
	err = agent.CheckNode(checkCtx, client, o.Node)
	cancel()
	if err != nil {
		return fmt.Errorf("checking the node with the API server: %w", err)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listening for the API: %w", err)
	}
	defer ln.Close()

	a, err := agent.New(o.config(), clock.RealClock{})
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	pods, err := agent.WatchPods(ctx, client, o.Node, a, o.APITimeout)
	if err != nil {
		return err
	}
	autoscale := "off"
	if o.Autoscale {
		d, stopEvents, err := startDecider(ctx, log, o, a, client, pods)
		if err != nil {
			return err
		}
		defer stopEvents()
		defer d.Wait()
		autoscale = "on"
		if o.DryRun {
			autoscale = "dry run"
		}
	}
	fmt.Fprintf(stdout, "snug agent: node %s, cgroups %s at %s, every %v, %d points per container, autoscale %s, serving http://%s\n",
		o.Node, layout, o.CgroupRoot, o.Interval, o.History, autoscale, ln.Addr())
	loopErr := make(chan error, 1)
	go func() { loopErr <- a.Run(ctx) }()
	select {
	case err = <-srvErr:
		stop()
		<-loopErr
		return fmt.Errorf("serving the API: %w", err)
	case err = <-loopErr:
		if err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, "snug agent: stopped")
	return nil
}

// startDecider watches the node and the SnugPolicies and installs the
// decision step. The returned function stops the event broadcaster.
func startDecider(ctx context.Context, log logr.Logger, o *agentOptions, a *agent.Agent, client *kubernetes.Clientset, pods corelisters.PodLister) (*agent.Decider, func(), error) {
	node, err := agent.WatchNode(ctx, client, o.Node, o.APITimeout)
	if err != nil {
		return nil, nil, err
	}
	rc, err := restConfig(o.Kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	pc, err := policyclient.NewForConfig(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("making a policy client: %w", err)
	}
	policies, err := agent.WatchPolicies(ctx, pc, o.APITimeout)
	if err != nil {
		// Not fatal: the CRD may be installed later.
		log.Error(err, "no SnugPolicies yet; retrying in the background")
	}
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	cfg := recommend.DefaultConfig()
	cfg.CPUHalfLife = o.CPUHalfLife
	d, err := a.Decide(agent.DeciderConfig{
		Pods: pods, Node: node, Policies: policies,
		ResizeClient: client.CoreV1(), DryRun: o.DryRun,
		Recorder:  b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "snug-agent", Host: o.Node}),
		Recommend: cfg,
	})
	if err == nil && o.SnapshotInterval > 0 {
		err = d.UseCheckpoints(agent.CheckpointConfig{Client: client, PublishInterval: o.SnapshotInterval})
		if cfg.CPUHalfLife != recommend.DefaultConfig().CPUHalfLife {
			log.Info("the controller folds only snapshots at the default half-lives; with --cpu-half-life " + cfg.CPUHalfLife.String() + " this agent's are skipped, and checkpoints do not seed it")
		}
	}
	if err != nil {
		b.Shutdown()
		return nil, nil, err
	}
	return d, b.Shutdown, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = "snug-agent"
	return cfg, nil
}

// newClient builds a clientset from kubeconfig, or from the default rules
// when it is empty.
func newClient(kubeconfig string) (*kubernetes.Clientset, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("making a client: %w", err)
	}
	return c, nil
}
