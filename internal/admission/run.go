package admission

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/kube"
	"github.com/snug-dev/snug/internal/policy"
)

// Options configure the webhook: snug-controller's --admission-* flags.
type Options struct {
	// Addr serves the webhook over HTTPS; empty turns it off.
	Addr string
	// Namespace is the Secret's and the Service's namespace.
	Namespace string
	// Service is the webhook's Service name (the certificate's names).
	Service string
	// Secret holds the serving certificate (KeyCert, KeyKey, KeyCA).
	Secret string
	// WebhookConfig is the MutatingWebhookConfiguration's name.
	WebhookConfig string
	// ManageCert makes the leader create and renew the Secret's
	// self-signed certificates and write the caBundle; off when
	// cert-manager does both.
	ManageCert bool
}

// NewOptions returns the defaults: off.
func NewOptions() Options {
	return Options{Service: "snug-admission", Secret: "snug-admission-tls", WebhookConfig: "snug", ManageCert: true}
}

// AddFlags registers the flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Addr, "admission-addr", o.Addr, "address to serve the pod admission webhook on, over HTTPS, on every replica (empty: off)")
	fs.StringVar(&o.Namespace, "admission-namespace", o.Namespace, "namespace of the webhook's Service and certificate Secret (required with --admission-addr)")
	fs.StringVar(&o.Service, "admission-service", o.Service, "the webhook's Service: the serving certificate names <service>.<namespace>.svc")
	fs.StringVar(&o.Secret, "admission-secret", o.Secret, "Secret holding the webhook's serving certificate (tls.crt, tls.key, ca.crt)")
	fs.StringVar(&o.WebhookConfig, "admission-webhook-config", o.WebhookConfig, "MutatingWebhookConfiguration whose caBundle the leader keeps current")
	fs.BoolVar(&o.ManageCert, "admission-manage-cert", o.ManageCert, "the leader creates and renews a self-signed CA and serving certificate in the Secret and writes the caBundle (false: cert-manager does)")
}

// Validate reports options that cannot work.
func (o *Options) Validate() error {
	if o.Addr == "" {
		return nil
	}
	var errs []error
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		errs = append(errs, fmt.Errorf("--admission-addr %q: %w", o.Addr, err))
	}
	for flag, v := range map[string]string{"--admission-namespace": o.Namespace, "--admission-service": o.Service} {
		for _, msg := range validation.IsDNS1123Label(v) {
			errs = append(errs, fmt.Errorf("%s %q: %s", flag, v, msg))
		}
	}
	for flag, v := range map[string]string{"--admission-secret": o.Secret, "--admission-webhook-config": o.WebhookConfig} {
		for _, msg := range validation.IsDNS1123Subdomain(v) {
			errs = append(errs, fmt.Errorf("%s %q: %s", flag, v, msg))
		}
	}
	return errors.Join(errs...)
}

// DNSNames are the serving certificate's names.
func (o *Options) DNSNames() []string {
	return []string{o.Service + "." + o.Namespace + ".svc", o.Service + "." + o.Namespace + ".svc.cluster.local"}
}

// Webhook is a running webhook server.
type Webhook struct {
	opts    Options
	cs      kubernetes.Interface
	source  *CertSource
	metrics *Metrics
	synced  []cache.InformerSynced
	started time.Time
	// unsynced logs, once, that the webhook went Ready with its caches
	// not synced.
	unsynced sync.Once
	srv      *http.Server
	log      logr.Logger
}

// syncGrace is how long Ready waits for the caches before it reports
// ready without them: with the SnugPolicy CRD not installed (yet) they
// never sync, and a controller that is never Ready would hold up the
// install (helm --wait) and its own rollout. Unsynced, no policy matches,
// so pods pass unchanged, as they would with the webhook down
// (failurePolicy Ignore); the informers keep retrying.
const syncGrace = 15 * time.Second

// Start listens on o.Addr and serves the webhook until ctx ends: its own
// caches of SnugPolicies and checkpoint ConfigMaps (every replica serves,
// leading or not) and the Secret's certificate. A taken port fails at
// once.
func Start(ctx context.Context, o Options, cs kubernetes.Interface, pc *policyclient.Client, recorder record.EventRecorder, m *Metrics, log logr.Logger) (*Webhook, error) {
	l, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", o.Addr, err)
	}
	w := &Webhook{opts: o, cs: cs, metrics: m, log: log, started: time.Now()}
	w.source = NewCertSource(ctx, cs, o.Namespace, o.Secret, m, log)
	strip := informers.WithTransform(kube.StripManagedFields)
	policyInf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			return pc.SnugPolicies("").List(ctx, lo)
		},
		WatchFuncWithContext: func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			return pc.SnugPolicies("").Watch(ctx, lo)
		},
	}, &v1alpha1.SnugPolicy{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := policyInf.SetTransform(kube.StripManagedFields); err != nil {
		return nil, err
	}
	cmFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, strip,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = "app.kubernetes.io/managed-by=snug" }))
	cms := cmFactory.Core().V1().ConfigMaps()
	cmLister := cms.Lister()
	sels := &policy.Selectors{}
	if _, err := policyInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*v1alpha1.SnugPolicy); ok {
				sels.Forget(p.Namespace, p.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	w.synced = []cache.InformerSynced{policyInf.HasSynced, cms.Informer().HasSynced}
	go policyInf.Run(ctx.Done())
	cmFactory.Start(ctx.Done())

	h := NewHandler(HandlerConfig{
		Policies: func(ns string) []*v1alpha1.SnugPolicy {
			objs, _ := policyInf.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
			out := make([]*v1alpha1.SnugPolicy, 0, len(objs))
			for _, o := range objs {
				out = append(out, o.(*v1alpha1.SnugPolicy))
			}
			return out
		},
		Checkpoints: func(ns, name string) map[string]string {
			cm, err := cmLister.ConfigMaps(ns).Get(name)
			if err != nil {
				return nil
			}
			return cm.Data
		},
		Selectors: sels,
		Recorder:  recorder, Metrics: m, Log: log,
	})
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	w.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: w.source.GetCertificate},
		ErrorLog:          nil,
	}
	go func() {
		if err := w.srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(err, "serving the admission webhook", "addr", o.Addr)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.srv.Shutdown(sctx)
	}()
	log.Info("serving the pod admission webhook", "url", "https://"+l.Addr().String()+Path)
	return w, nil
}

// Ready reports whether the webhook can answer: a certificate loaded and
// its caches synced.
func (w *Webhook) Ready() error {
	if !w.source.Ready() {
		return fmt.Errorf("no serving certificate in secret %s/%s yet", w.opts.Namespace, w.opts.Secret)
	}
	for _, s := range w.synced {
		if !s() {
			if time.Since(w.started) < syncGrace {
				return errors.New("the admission caches are not synced yet")
			}
			w.unsynced.Do(func() {
				w.log.Info("admission caches not synced after " + syncGrace.String() + " (is the SnugPolicy CRD installed?); ready, sizing no pod until they are")
			})
			return nil
		}
	}
	return nil
}

// RunRotator keeps the certificate (ManageCert only) until ctx ends; run it
// while leading.
func (w *Webhook) RunRotator(ctx context.Context, owner *metav1.OwnerReference) {
	if !w.opts.ManageCert {
		return
	}
	NewRotator(RotatorConfig{
		Client: w.cs, Namespace: w.opts.Namespace, SecretName: w.opts.Secret,
		WebhookConfig: w.opts.WebhookConfig, DNSNames: w.opts.DNSNames(),
		Changed: w.source.Changed(), Metrics: w.metrics, Log: w.log.WithName("certs"),
		Owner: owner,
	}).Run(ctx)
}
