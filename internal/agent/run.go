package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/cgroup"
	"github.com/snug-dev/snug/internal/httpauth"
	"github.com/snug-dev/snug/internal/kube"
	"github.com/snug-dev/snug/internal/recommend"
)

// clients are the agent's connections to the API server: the core/v1
// client of internal/kube (pods, nodes, configmaps, events) and the
// SnugPolicy client.
type clients struct {
	config   *rest.Config
	core     *kube.Client
	policies *policyclient.Client
	// requests counts what they ask of the API server (registered with
	// the agent's metrics once it exists).
	requests *prometheus.CounterVec
}

func newClients(kubeconfig, contentType string) (*clients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return clientsFor(cfg, contentType, nil)
}

// clientsFor makes the agent's clients for a copy of cfg, with the user
// agent snug-agent, the core/v1 one speaking contentType ("" keeps
// cfg's); count, if set, also sees every request (verb, resource),
// besides the agent's own metric.
func clientsFor(base *rest.Config, contentType string, count func(verb, resource string)) (*clients, error) {
	cfg := rest.CopyConfig(base)
	cfg.UserAgent = "snug-agent"
	requests := newRequestsCounter()
	kube.CountRequests(cfg, func(verb, resource string) {
		requests.WithLabelValues(verb, resource).Inc()
		if count != nil {
			count(verb, resource)
		}
	})
	coreCfg := cfg
	if contentType != "" {
		coreCfg = kube.WithContentType(cfg, contentType)
	}
	core, err := kube.NewForConfig(coreCfg)
	if err != nil {
		return nil, fmt.Errorf("making a client: %w", err)
	}
	pc, err := policyclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("making a policy client: %w", err)
	}
	return &clients{config: cfg, core: core, policies: pc, requests: requests}, nil
}

// eventScheme knows only core/v1: the agent records events on pods, and a
// scheme of every API group (client-go's kubernetes/scheme) would cost
// every node's agent memory for nothing.
func eventScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("registering core/v1: %v", err)) // a programming error
	}
	return s
}

// Run runs the agent with validated options until ctx is done (nil) or it
// fails: it checks the node with the API server, serves the HTTP API on
// o.Listen, watches the node's pods and, with o.Autoscale, decides and
// resizes. It prints one line on stdout when it runs and one when it
// stops, and logs through klog.Background() (daemon.Main applies the
// logging flags).
func Run(ctx context.Context, o *Options, stdout io.Writer) error {
	log := klog.Background()
	ctx = logr.NewContext(ctx, log)

	layout, err := cgroup.Reader{Root: o.CgroupRoot}.Layout()
	if err != nil {
		return fmt.Errorf("reading cgroups at %s: %w", o.CgroupRoot, err)
	}
	cs, err := newClients(o.Kubeconfig, o.KubeAPIContentType)
	if err != nil {
		return err
	}
	checkCtx, cancel := context.WithTimeout(ctx, o.APITimeout)
	err = CheckNode(checkCtx, cs.core, o.Node)
	cancel()
	if err != nil {
		return fmt.Errorf("checking the node with the API server: %w", err)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listening for the API: %w", err)
	}
	defer ln.Close()
	sl, err := o.Serving.Listener(ln)
	if err != nil {
		return err
	}

	a, err := New(o.Config(), clock.RealClock{})
	if err != nil {
		return err
	}
	a.metrics.reg.MustRegister(cs.requests)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	handler, auth := a.Handler(), "off"
	if o.Serving.Auth {
		rev, err := httpauth.ForConfig(cs.config)
		if err != nil {
			return err
		}
		handler = httpauth.New(httpauth.Config{
			Reviewer: rev, Open: []string{"/healthz", "/readyz"},
			Metrics: httpauth.NewMetrics(a.metrics.reg), Log: log.WithName("auth"),
		}).Wrap(handler)
		auth = "TokenReview and SubjectAccessReview"
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(sl) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	pods, err := WatchPods(ctx, cs.core, o.Node, a, o.APITimeout)
	if err != nil {
		return err
	}
	autoscale := "off"
	if o.Autoscale {
		d, stopEvents, err := startDecider(ctx, log, o, a, cs, pods)
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
	fmt.Fprintf(stdout, "snug-agent: node %s, cgroups %s at %s, every %v, %d points per container, autoscale %s, serving %s://%s (auth: %s)\n",
		o.Node, layout, o.CgroupRoot, o.Interval, o.History, autoscale, o.Serving.Scheme(), ln.Addr(), auth)
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
	fmt.Fprintln(stdout, "snug-agent: stopped")
	return nil
}

// RunHollow runs an agent for o.Node until ctx is done (nil) or it fails:
// Run's pod watch, loop and, with o.Autoscale, decider, on cfg (whose
// Sampler stands in for the node's cgroups), without the cgroup and node
// checks or the HTTP server. The scale bench (lab) runs many in one
// process, one per node kwok plays, against a real API server at base;
// count, if set, sees each agent's every request to it (verb, resource).
// ready, if set, is called once the agent's watches have synced.
func RunHollow(ctx context.Context, o *Options, cfg Config, base *rest.Config, clk clock.WithTicker, count func(verb, resource string), ready func()) error {
	if cfg.Sampler == nil {
		return errors.New("a hollow agent needs a Sampler")
	}
	log := klog.Background().WithValues("node", o.Node)
	ctx = logr.NewContext(ctx, log)
	cs, err := clientsFor(base, o.KubeAPIContentType, count)
	if err != nil {
		return err
	}
	a, err := New(cfg, clk)
	if err != nil {
		return err
	}
	a.metrics.reg.MustRegister(cs.requests)
	pods, err := WatchPods(ctx, cs.core, o.Node, a, o.APITimeout)
	if err != nil {
		return err
	}
	if o.Autoscale {
		d, stopEvents, err := startDecider(ctx, log, o, a, cs, pods)
		if err != nil {
			return err
		}
		defer stopEvents()
		defer d.Wait()
	}
	if ready != nil {
		ready()
	}
	return a.Run(ctx)
}

// startDecider watches the node and the SnugPolicies and installs the
// decision step. The returned function stops the event broadcaster.
func startDecider(ctx context.Context, log logr.Logger, o *Options, a *Agent, cs *clients, pods corelisters.PodLister) (*Decider, func(), error) {
	node, err := WatchNode(ctx, cs.core, o.Node, o.APITimeout)
	if err != nil {
		return nil, nil, err
	}
	policies, err := WatchPolicies(ctx, cs.policies, o.APITimeout)
	if err != nil {
		// Not fatal: the CRD may be installed later.
		log.Error(err, "no SnugPolicies yet; retrying in the background")
	}
	limitRanges, err := WatchLimitRanges(ctx, cs.core, o.APITimeout)
	if err != nil {
		// Not fatal: the API server checks LimitRanges anyway.
		log.Error(err, "planning without the namespaces' LimitRanges until they are listed")
	}
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(kube.EventSink{Client: cs.core})
	cfg := recommend.DefaultConfig()
	cfg.CPUHalfLife = o.CPUHalfLife
	cfg.RegrowWindow = o.RegrowWindow
	d, err := a.Decide(DeciderConfig{
		Pods: pods, Node: node, Policies: policies,
		LimitRanges: limitRanges, ListQuotas: ListQuotas(cs.core),
		ResizeClient: cs.core, DryRun: o.DryRun,
		Recorder:  b.NewRecorder(eventScheme(), corev1.EventSource{Component: "snug-agent", Host: o.Node}),
		Recommend: cfg,
	})
	if err == nil && o.SnapshotInterval > 0 {
		err = d.UseCheckpoints(CheckpointConfig{Client: cs.core, PublishInterval: o.SnapshotInterval})
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
