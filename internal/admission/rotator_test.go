package admission

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// rotatorFixture is a cluster with the webhook configuration, a clock and
// the options the rotator tests share.
func rotatorFixture() (*fake.Clientset, *clocktesting.FakePassiveClock, Options) {
	cs := fake.NewClientset(&admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "snug"},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "pods.admission.snug.dev"}},
	})
	o := NewOptions()
	o.Namespace = "snug-system"
	return cs, clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)), o
}

// TestRotatorSync: from nothing, the Secret is created and the caBundle
// written; a second sync changes nothing; a broken certificate is replaced
// and the bundle kept; an ageing CA is replaced and the bundle updated.
func TestRotatorSync(t *testing.T) {
	ctx := context.Background()
	cs, clk, o := rotatorFixture()
	r := NewRotator(RotatorConfig{Client: cs, Namespace: o.Namespace, SecretName: o.Secret, WebhookConfig: o.WebhookConfig,
		DNSNames: o.DNSNames(), Clock: clk, Metrics: NewMetrics(prometheus.NewRegistry()), Log: logr.Discard()})
	state := func() (map[string][]byte, []byte) {
		t.Helper()
		s, err := cs.CoreV1().Secrets(o.Namespace).Get(ctx, o.Secret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, o.WebhookConfig, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Data, m.Webhooks[0].ClientConfig.CABundle
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	data, bundle := state()
	if needs(data, o.DNSNames(), clk.Now()).any() || string(bundle) != string(data[KeyCA]) {
		t.Fatalf("after the first sync: renewal still needed or caBundle differs from ca.crt")
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	again, _ := state()
	if string(again[KeyCert]) != string(data[KeyCert]) {
		t.Error("a second sync renewed a valid certificate")
	}

	// A broken serving certificate: replaced, same CA.
	s, _ := cs.CoreV1().Secrets(o.Namespace).Get(ctx, o.Secret, metav1.GetOptions{})
	s.Data[KeyCert] = []byte("broken")
	if _, err := cs.CoreV1().Secrets(o.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	fixed, b2 := state()
	if needs(fixed, o.DNSNames(), clk.Now()).any() || string(fixed[KeyCA]) != string(data[KeyCA]) || string(b2) != string(bundle) {
		t.Error("a broken serving certificate was not replaced under the same CA")
	}

	// The CA ages: a new one, both in the bundle.
	clk.SetTime(clk.Now().Add(CAValidity * 3 / 4))
	if err := r.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	rotated, b3 := state()
	if string(rotated[KeyCA]) == string(data[KeyCA]) || string(b3) != string(rotated[KeyCA]) || len(parseCerts(b3)) != 2 {
		t.Errorf("CA rotation: bundle of %d CAs, equal to ca.crt: %v", len(parseCerts(b3)), string(b3) == string(rotated[KeyCA]))
	}
}

// TestRotatorOwner: with an Owner, the Secret is created owned by it, and
// a valid Secret of an earlier install (another owner UID) gets the new
// owner without a new certificate.
func TestRotatorOwner(t *testing.T) {
	ctx := context.Background()
	cs, clk, o := rotatorFixture()
	rotator := func(uid string) *Rotator {
		return NewRotator(RotatorConfig{Client: cs, Namespace: o.Namespace, SecretName: o.Secret, WebhookConfig: o.WebhookConfig,
			DNSNames: o.DNSNames(), Clock: clk, Metrics: NewMetrics(prometheus.NewRegistry()), Log: logr.Discard(),
			Owner: &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "snug-controller", UID: types.UID(uid)}})
	}
	secret := func() *corev1.Secret {
		t.Helper()
		s, err := cs.CoreV1().Secrets(o.Namespace).Get(ctx, o.Secret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if err := rotator("first").Sync(ctx); err != nil {
		t.Fatal(err)
	}
	first := secret()
	if len(first.OwnerReferences) != 1 || first.OwnerReferences[0].UID != "first" {
		t.Fatalf("created Secret's owners: %+v", first.OwnerReferences)
	}
	if err := rotator("second").Sync(ctx); err != nil {
		t.Fatal(err)
	}
	second := secret()
	if len(second.OwnerReferences) != 1 || second.OwnerReferences[0].UID != "second" {
		t.Errorf("owners after a sync by the second install: %+v", second.OwnerReferences)
	}
	if string(second.Data[KeyCert]) != string(first.Data[KeyCert]) {
		t.Error("a new owner renewed a valid certificate")
	}
}
