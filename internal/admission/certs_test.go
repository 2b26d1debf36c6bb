package admission

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"
)

func TestCertLifecycle(t *testing.T) {
	names := []string{"snug-admission.snug-system.svc", "snug-admission.snug-system.svc.cluster.local"}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	r := needs(nil, names, t0)
	if !r.ca || !r.serving {
		t.Fatalf("empty secret: %+v, want both renewed", r)
	}
	data, err := renew(nil, r, names, t0)
	if err != nil {
		t.Fatal(err)
	}
	if r := needs(data, names, t0.Add(time.Hour)); r.any() {
		t.Fatalf("fresh certificates: %+v, want none renewed", r)
	}
	verify := func(data map[string][]byte, at time.Time) error {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(data[KeyCA])
		pair, err := tls.X509KeyPair(data[KeyCert], data[KeyKey])
		if err != nil {
			return err
		}
		_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: names[0], CurrentTime: at})
		return err
	}
	if err := verify(data, t0.Add(time.Hour)); err != nil {
		t.Fatalf("the serving certificate does not verify against the bundle: %v", err)
	}

	// Two thirds into the serving certificate's life: renewed, same CA.
	at := t0.Add(ServingValidity * 2 / 3).Add(time.Hour)
	r = needs(data, names, at)
	if r.ca || !r.serving {
		t.Fatalf("ageing serving certificate: %+v, want serving only", r)
	}
	next, err := renew(data, r, names, at)
	if err != nil {
		t.Fatal(err)
	}
	if string(next[KeyCA]) != string(data[KeyCA]) {
		t.Error("renewing the serving certificate changed the CA bundle")
	}
	if err := verify(next, at); err != nil {
		t.Fatal(err)
	}

	// The CA ageing: a new CA, the old one kept in the bundle.
	at = t0.Add(CAValidity * 2 / 3).Add(time.Hour)
	r = needs(next, names, at)
	if !r.ca {
		t.Fatalf("ageing CA: %+v, want a new CA", r)
	}
	rotated, err := renew(next, r, names, at)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(parseCerts(rotated[KeyCA])); got != 2 {
		t.Errorf("bundle has %d CAs, want the new and the previous", got)
	}
	if err := verify(rotated, at); err != nil {
		t.Fatal(err)
	}

	// Garbage, another name, an expired certificate: all renewed.
	bad := map[string][]byte{KeyCert: []byte("x"), KeyKey: []byte("y"), KeyCA: data[KeyCA], KeyCAKey: data[KeyCAKey]}
	if r := needs(bad, names, t0.Add(time.Hour)); !r.serving {
		t.Errorf("garbage serving certificate: %+v", r)
	}
	if r := needs(data, []string{"other.svc"}, t0.Add(time.Hour)); !r.serving {
		t.Errorf("other names: %+v", r)
	}
	if r := needs(data, names, t0.Add(ServingValidity+time.Hour)); !r.serving {
		t.Errorf("expired: %+v", r)
	}
	foreign, _ := renew(nil, renewal{ca: true, serving: true}, names, t0)
	mixed := map[string][]byte{KeyCert: foreign[KeyCert], KeyKey: foreign[KeyKey], KeyCA: data[KeyCA], KeyCAKey: data[KeyCAKey]}
	if r := needs(mixed, names, t0.Add(time.Hour)); !r.serving {
		t.Errorf("a serving certificate of another CA: %+v", r)
	}
}
