package controller

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/metrics/legacyregistry"
	// client-go's rest_client_* and workqueue_* series, in legacyregistry.
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
	"k8s.io/klog/v2"

	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/config/crd"
	"github.com/snug-dev/snug/internal/admission"
	"github.com/snug-dev/snug/internal/httpauth"
	"github.com/snug-dev/snug/internal/install"
	"github.com/snug-dev/snug/internal/kube"
)

// Leader election timings: client-go's and kube-controller-manager's usual
// ones. A new leader takes over within LeaseDuration of the old one dying.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
	// leaseName is the Lease the controllers compete for.
	leaseName = "snug-controller"
)

// Options configure the snug-controller binary: its flags.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty means in-cluster, then
	// $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string
	// LeaderElect makes the controller reconcile only while it holds the
	// Lease, so that several replicas can run.
	LeaderElect bool
	// LeaderElectionNamespace is the Lease's namespace.
	LeaderElectionNamespace string
	// OwnerDeployment, when set, is the controller's own Deployment in
	// LeaderElectionNamespace: the Lease and the admission Secret the
	// controller makes there are owned by it, so that deleting it (helm
	// uninstall) deletes them (owner.go).
	OwnerDeployment string
	// MetricsAddr serves /metrics; empty turns it off.
	MetricsAddr string
	// HealthAddr serves /healthz and /readyz; empty turns it off.
	HealthAddr string
	// Serving guards /metrics (Serving.Auth: each request's bearer token
	// checked with a TokenReview and its access with a
	// SubjectAccessReview, internal/httpauth) and says whether to serve it
	// over HTTPS. The health server stays open plain HTTP for probes.
	Serving httpauth.ServingOptions
	// InstallCRDs applies the SnugPolicy CRD and waits until it is
	// Established before starting.
	InstallCRDs bool
	// Workers is how many policies each concern (checkpoints, status,
	// disruption) reconciles at once.
	Workers int
	// KubeAPIQPS and KubeAPIBurst bound the controller's requests to the
	// API server (client-go's token bucket). client-go's own 5 and 10 are
	// sized for a kubectl: 1,000 policies write up to 17 checkpoints a
	// second, plus status and evictions (reads come from informers), so
	// the defaults are 50 and 100: three times that, and a start-up's
	// first pass in one burst.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// KubeAPIContentType is what the clients of built-in types speak:
	// protobuf (default) or JSON; SnugPolicies are always JSON.
	KubeAPIContentType string
	// CheckpointInterval is the least time between two writes of a
	// policy's checkpoint when only its snapshots changed (Config).
	CheckpointInterval time.Duration
	// Admission configures the pod admission webhook, served by every
	// replica; the leader keeps its certificate (internal/admission).
	Admission admission.Options
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		LeaderElect:             true,
		LeaderElectionNamespace: "kube-system",
		MetricsAddr:             "127.0.0.1:9465",
		HealthAddr:              "127.0.0.1:9466",
		Serving:                 httpauth.NewServingOptions(),
		Workers:                 2,
		KubeAPIQPS:              50,
		KubeAPIBurst:            100,
		KubeAPIContentType:      kube.ContentTypeProtobuf,
		CheckpointInterval:      time.Minute,
		Admission:               admission.NewOptions(),
	}
}

// AddFlags registers the options' flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "reconcile only while holding the Lease "+leaseName+", so several replicas can run")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "namespace of the leader election Lease")
	fs.StringVar(&o.OwnerDeployment, "owner-deployment", o.OwnerDeployment, "the controller's own Deployment in --leader-election-namespace; the Lease and admission Secret the controller makes are owned by it and go when it goes (empty: they stay)")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "address to serve /metrics on (empty: off)")
	fs.StringVar(&o.HealthAddr, "health-addr", o.HealthAddr, "address to serve /healthz and /readyz on (empty: off)")
	o.Serving.AddFlags(fs, "/metrics (the health server stays open)")
	fs.BoolVar(&o.InstallCRDs, "install-crds", o.InstallCRDs, "apply the SnugPolicy CRD and wait until it is established before starting")
	fs.IntVar(&o.Workers, "workers", o.Workers, "policies reconciled at once by each of the three concerns (checkpoints, status, disruption)")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "requests per second to the API server, sustained (client-go's token bucket)")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "requests to the API server in a burst above --kube-api-qps")
	fs.StringVar(&o.KubeAPIContentType, "kube-api-content-type", o.KubeAPIContentType, "content type of requests for pods, workloads, leases and the other built-in objects: "+kube.ContentTypeProtobuf+" or "+kube.ContentTypeJSON+" (SnugPolicies are always JSON)")
	fs.DurationVar(&o.CheckpointInterval, "checkpoint-interval", o.CheckpointInterval, "least time between two writes of a policy's checkpoint ConfigMap when only its snapshots changed (a pod that came or went is written at once); 1s to 1h")
	o.Admission.AddFlags(fs)
}

// Validate reports options that cannot work.
func (o *Options) Validate() error {
	var errs []error
	for flag, addr := range map[string]string{"--metrics-addr": o.MetricsAddr, "--health-addr": o.HealthAddr} {
		if addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", flag, addr, err))
		}
	}
	if err := o.Serving.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.MetricsAddr != "" && o.MetricsAddr == o.HealthAddr {
		errs = append(errs, fmt.Errorf("--metrics-addr and --health-addr must differ, both are %q", o.MetricsAddr))
	}
	if o.OwnerDeployment != "" {
		for _, msg := range validation.IsDNS1123Subdomain(o.OwnerDeployment) {
			errs = append(errs, fmt.Errorf("--owner-deployment %q: %s", o.OwnerDeployment, msg))
		}
	}
	if o.LeaderElect || o.OwnerDeployment != "" {
		for _, msg := range validation.IsDNS1123Label(o.LeaderElectionNamespace) {
			errs = append(errs, fmt.Errorf("--leader-election-namespace %q: %s", o.LeaderElectionNamespace, msg))
		}
	}
	if err := o.Admission.Validate(); err != nil {
		errs = append(errs, err)
	}
	if a := o.Admission.Addr; a != "" && (a == o.MetricsAddr || a == o.HealthAddr) {
		errs = append(errs, fmt.Errorf("--admission-addr %q must differ from --metrics-addr and --health-addr", a))
	}
	if o.Workers < 1 || o.Workers > 64 {
		errs = append(errs, fmt.Errorf("--workers %d: must be 1 to 64", o.Workers))
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIQPS > 10000 {
		errs = append(errs, fmt.Errorf("--kube-api-qps %v: must be above 0, at most 10000", o.KubeAPIQPS))
	}
	if err := kube.CheckContentType(o.KubeAPIContentType); err != nil {
		errs = append(errs, err)
	}
	if o.KubeAPIBurst < 1 || o.KubeAPIBurst > 100000 || float32(o.KubeAPIBurst) < o.KubeAPIQPS {
		errs = append(errs, fmt.Errorf("--kube-api-burst %d: must be at least 1 and --kube-api-qps, at most 100000", o.KubeAPIBurst))
	}
	if o.CheckpointInterval < time.Second || o.CheckpointInterval > time.Hour {
		errs = append(errs, fmt.Errorf("--checkpoint-interval %v: must be 1s to 1h", o.CheckpointInterval))
	}
	if o.Kubeconfig != "" {
		if _, err := os.Stat(o.Kubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("--kubeconfig: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Run runs the controller with validated options until ctx ends (nil) or
// leadership is lost (an error, so that the process restarts with a clean
// state).
func Run(ctx context.Context, o *Options) error {
	log := klog.Background().WithName("controller")
	ctx = klog.NewContext(ctx, log)

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "snug-controller"
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "snug", Subsystem: "controller", Name: "api_requests_total",
		Help: "Requests the controller (and its admission webhook) sent to the API server, by verb (get, list, watch, create, update, patch, delete) and resource[/subresource], as the API server's apiserver_request_total names them.",
	}, []string{"verb", "resource"})
	kube.CountRequests(cfg, func(verb, resource string) { requests.WithLabelValues(verb, resource).Inc() })
	cs, err := kubernetes.NewForConfig(kube.WithContentType(cfg, o.KubeAPIContentType))
	if err != nil {
		return fmt.Errorf("making a client: %w", err)
	}
	pc, err := policyclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making a client: %w", err)
	}
	if o.InstallCRDs {
		ext, err := apiextensionsclient.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("making a client: %w", err)
		}
		crds, err := crd.All()
		if err != nil {
			return err
		}
		if err := install.CRDs(ctx, ext, crds, 2*time.Minute); err != nil {
			return fmt.Errorf("installing CRDs: %w", err)
		}
		log.Info("CRDs installed")
	}

	// snug's series in reg; component-base's registry (legacyregistry)
	// holds client-go's workqueue_* and rest_client_* series (the
	// providers its workqueue and restclient packages install) and the Go
	// and process collectors, served together on /metrics.
	reg := prometheus.NewRegistry()
	reg.MustRegister(requests)
	metrics := NewMetrics(reg)

	// Listen before anything runs, so a taken port fails at once.
	var servers []*http.Server
	serve := func(addr string, h http.Handler, so *httpauth.ServingOptions) error {
		if addr == "" {
			return nil
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", addr, err)
		}
		scheme := "http"
		if so != nil {
			tl, err := so.Listener(l)
			if err != nil {
				l.Close()
				return err
			}
			l, scheme = tl, so.Scheme()
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, srv)
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error(err, "serving", "addr", addr)
			}
		}()
		log.Info("serving", "url", scheme+"://"+l.Addr().String())
		return nil
	}
	defer func() {
		for _, s := range servers {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = s.Shutdown(sctx)
			cancel()
		}
	}()
	mux := http.NewServeMux()
	mux.Handle("/metrics", metricsHandler(reg))
	var mm http.Handler = mux
	if o.Serving.Auth {
		rev, err := httpauth.ForConfig(cfg)
		if err != nil {
			return err
		}
		mm = httpauth.New(httpauth.Config{Reviewer: rev, Metrics: httpauth.NewMetrics(reg), Log: log.WithName("auth")}).Wrap(mm)
		log.Info("metrics need a bearer token the API server authenticates and authorizes for get /metrics")
	}
	if err := serve(o.MetricsAddr, mm, &o.Serving); err != nil {
		return err
	}
	recorder, stopEvents := NewRecorder(cs)
	defer stopEvents()
	// The webhook runs on every replica, leading or not: the API server
	// calls any endpoint of the Service.
	var webhook *admission.Webhook
	if o.Admission.Addr != "" {
		if webhook, err = admission.Start(ctx, o.Admission, cs, pc, recorder, admission.NewMetrics(reg), log.WithName("admission")); err != nil {
			return err
		}
	}
	hm := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }
	hm.HandleFunc("/healthz", ok)
	hm.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if webhook != nil {
			if err := webhook.Ready(); err != nil {
				http.Error(w, "admission: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		ok(w, r)
	})
	if err := serve(o.HealthAddr, hm, nil); err != nil {
		return err
	}

	// Informers start now, leading or not: a standby's caches are warm
	// when it takes over.
	ctl := New(cs, pc, recorder, metrics, Config{Workers: o.Workers, CheckpointInterval: o.CheckpointInterval, Dynamic: dyn})
	ctl.Start(ctx)
	defer ctl.Shutdown()
	run := func(ctx context.Context) error {
		metrics.Leader.Set(1)
		defer metrics.Leader.Set(0)
		// The leader owns what the controllers make (owner.go); an API
		// server that is away delays this, it does not stop the start.
		var owner *metav1.OwnerReference
		if o.OwnerDeployment != "" {
			owner = waitOwner(ctx, cs, o.LeaderElectionNamespace, o.OwnerDeployment, log)
		}
		if o.LeaderElect && owner != nil {
			if err := ownLease(ctx, cs, o.LeaderElectionNamespace, leaseName, *owner); err != nil {
				log.Error(err, "setting the Lease's owner", "owner", o.OwnerDeployment)
			}
		}
		if webhook != nil {
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			// An owner reference names an object of the same namespace;
			// one elsewhere would read as a deleted owner to the garbage
			// collector, which would delete the Secret.
			secretOwner := owner
			if o.Admission.Namespace != o.LeaderElectionNamespace {
				secretOwner = nil
			}
			go webhook.RunRotator(rctx, secretOwner)
		}
		return ctl.Run(ctx)
	}
	if !o.LeaderElect {
		return run(ctx)
	}

	host, _ := os.Hostname()
	return lead(ctx, log, leadConfig{
		Leases: cs.CoordinationV1(), Namespace: o.LeaderElectionNamespace, Name: leaseName,
		Identity:      host + "_" + rand.Text()[:8],
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
	}, run)
}

// metricsHandler serves snug's series (reg) with component-base's
// registry: client-go's workqueue_* and rest_client_* series and the Go
// and process collectors.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(prometheus.Gatherers{reg, legacyregistry.DefaultGatherer}, promhttp.HandlerOpts{Registry: reg})
}
