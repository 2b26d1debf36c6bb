package vpa

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"
	"time"
)

func TestWebhookCertsVerify(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	c, err := writeWebhookCerts(t.TempDir(), net.ParseIP("10.213.0.1"), now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(c.Cert, c.Key)
	if err != nil {
		t.Fatalf("loading the serving pair: %v", err)
	}
	caPEM, err := os.ReadFile(c.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA file holds no certificate")
	}
	_, err = pair.Leaf.Verify(x509.VerifyOptions{
		Roots: roots, DNSName: "10.213.0.1", CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		t.Errorf("serving certificate does not verify for 10.213.0.1: %v", err)
	}
	if info, err := os.Stat(c.Key); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode: %v %v, want 0600", info.Mode(), err)
	}
}
