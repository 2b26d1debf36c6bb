package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/snug-dev/snug/internal/kube"
)

// CertSource serves the certificate in the serving Secret, reloading it
// whenever the Secret changes (an informer on that one Secret). Every
// replica runs one; it only reads. Safe for concurrent use.
type CertSource struct {
	cert    atomic.Pointer[tls.Certificate]
	changed chan struct{}
	metrics *Metrics
	log     logr.Logger
}

// NewCertSource starts watching Secret namespace/name until ctx ends.
func NewCertSource(ctx context.Context, cs kubernetes.Interface, namespace, name string, m *Metrics, log logr.Logger) *CertSource {
	s := &CertSource{changed: make(chan struct{}, 1), metrics: m, log: log}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "secrets", namespace, fields.OneTermEqualSelector("metadata.name", name))
	inf := cache.NewSharedIndexInformer(lw, &corev1.Secret{}, 10*time.Minute, cache.Indexers{})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.load(o) },
		UpdateFunc: func(_, o any) { s.load(o) },
		DeleteFunc: func(any) { s.poke() },
	})
	go inf.Run(ctx.Done())
	return s
}

func (s *CertSource) load(o any) {
	defer s.poke()
	sec, ok := o.(*corev1.Secret)
	if !ok {
		return
	}
	pair, err := tls.X509KeyPair(sec.Data[KeyCert], sec.Data[KeyKey])
	if err != nil {
		s.log.Info("the serving Secret holds no usable certificate; keeping the one in use", "secret", sec.Namespace+"/"+sec.Name, "err", err.Error())
		return
	}
	if pair.Leaf != nil {
		s.metrics.certReady.Set(float64(pair.Leaf.NotAfter.Unix()))
	}
	if old := s.cert.Swap(&pair); old == nil {
		s.log.Info("serving certificate loaded", "secret", sec.Namespace+"/"+sec.Name)
	} else {
		s.log.Info("serving certificate reloaded", "secret", sec.Namespace+"/"+sec.Name)
	}
}

func (s *CertSource) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Changed fires after the Secret changed (for the Rotator to check it).
func (s *CertSource) Changed() <-chan struct{} { return s.changed }

// Ready reports whether a certificate is loaded.
func (s *CertSource) Ready() bool { return s.cert.Load() != nil }

// GetCertificate is tls.Config's.
func (s *CertSource) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := s.cert.Load()
	if c == nil {
		return nil, errors.New("no serving certificate loaded yet")
	}
	return c, nil
}

// RotatorConfig is what a Rotator needs.
type RotatorConfig struct {
	Client kubernetes.Interface
	// Namespace and SecretName name the serving Secret.
	Namespace, SecretName string
	// WebhookConfig is the MutatingWebhookConfiguration whose webhooks'
	// caBundle the Rotator keeps equal to the Secret's KeyCA.
	WebhookConfig string
	// DNSNames are the serving certificate's names (the Service's).
	DNSNames []string
	// Owner, when set, owns the Secret (the controller's Deployment), so
	// that the garbage collector deletes it with the install.
	Owner *metav1.OwnerReference
	// Interval is the period of the checks besides the Secret's changes.
	Interval time.Duration
	// Changed fires when the Secret changed (CertSource.Changed).
	Changed <-chan struct{}
	Clock   clock.PassiveClock
	Metrics *Metrics
	Log     logr.Logger
}

// Rotator keeps the serving Secret's self-signed certificates valid and
// the webhook configuration's caBundle current. Run it on the leader only.
type Rotator struct{ cfg RotatorConfig }

// NewRotator returns a Rotator.
func NewRotator(cfg RotatorConfig) *Rotator {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	return &Rotator{cfg: cfg}
}

// Run checks at once, then every Interval and when the Secret changes,
// until ctx ends. Errors are logged and retried.
func (r *Rotator) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Log.Error(err, "keeping the admission certificate")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.cfg.Changed:
		}
	}
}

// Sync renews what the Secret needs and writes the caBundle.
func (r *Rotator) Sync(ctx context.Context) error {
	sec, err := r.cfg.Client.CoreV1().Secrets(r.cfg.Namespace).Get(ctx, r.cfg.SecretName, metav1.GetOptions{})
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		return fmt.Errorf("reading secret %s: %w", r.cfg.SecretName, err)
	}
	if create {
		sec = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: r.cfg.SecretName, Namespace: r.cfg.Namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "snug"}},
			Type: corev1.SecretTypeTLS,
		}
	}
	owned := false
	if r.cfg.Owner != nil {
		var refs []metav1.OwnerReference
		if refs, owned = kube.WithOwner(sec.OwnerReferences, *r.cfg.Owner); owned {
			sec = sec.DeepCopy()
			sec.OwnerReferences = refs
		}
	}
	now := r.cfg.Clock.Now()
	if need := needs(sec.Data, r.cfg.DNSNames, now); need.any() {
		what := "serving"
		if need.ca {
			what = "ca"
		}
		data, err := renew(sec.Data, need, r.cfg.DNSNames, now)
		if err == nil {
			sec = sec.DeepCopy()
			sec.Data = data
			if create {
				sec, err = r.cfg.Client.CoreV1().Secrets(r.cfg.Namespace).Create(ctx, sec, metav1.CreateOptions{})
			} else {
				sec, err = r.cfg.Client.CoreV1().Secrets(r.cfg.Namespace).Update(ctx, sec, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			r.cfg.Metrics.rotations.WithLabelValues(what, "error").Inc()
			return fmt.Errorf("renewing the admission certificate (%s): %w", need.why, err)
		}
		r.cfg.Metrics.rotations.WithLabelValues(what, "ok").Inc()
		r.cfg.Log.Info("renewed the admission certificate", "secret", r.cfg.Namespace+"/"+r.cfg.SecretName, "why", need.why, "ca", need.ca)
	} else if owned && !create {
		if sec, err = r.cfg.Client.CoreV1().Secrets(r.cfg.Namespace).Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("setting the owner of secret %s: %w", r.cfg.SecretName, err)
		}
	}
	return r.syncBundle(ctx, sec.Data[KeyCA])
}

// syncBundle sets every webhook's caBundle to bundle, with a JSON patch
// that tests each webhook's name first.
func (r *Rotator) syncBundle(ctx context.Context, bundle []byte) error {
	api := r.cfg.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	mwc, err := api.Get(ctx, r.cfg.WebhookConfig, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading mutatingwebhookconfiguration %s: %w", r.cfg.WebhookConfig, err)
	}
	var ops []map[string]any
	for i, w := range mwc.Webhooks {
		if bytes.Equal(w.ClientConfig.CABundle, bundle) {
			continue
		}
		ops = append(ops,
			map[string]any{"op": "test", "path": fmt.Sprintf("/webhooks/%d/name", i), "value": w.Name},
			map[string]any{"op": "add", "path": fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i), "value": bundle})
	}
	if len(ops) == 0 {
		return nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if _, err := api.Patch(ctx, r.cfg.WebhookConfig, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patching the caBundle of mutatingwebhookconfiguration %s: %w", r.cfg.WebhookConfig, err)
	}
	r.cfg.Log.Info("caBundle updated", "mutatingwebhookconfiguration", r.cfg.WebhookConfig)
	return nil
}
