package httpauth

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveTLS serves "ok" with cfg and returns the server.
func serveTLS(t *testing.T, cfg *tls.Config) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, c *http.Client, url string) (string, error) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestTLSConfigSelfSigned: with no files the server has a certificate of
// its own, for 127.0.0.1 among others, that a client trusting it verifies.
func TestTLSConfigSelfSigned(t *testing.T) {
	cfg, err := TLSConfig("", "")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTLS(t, cfg)
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if body, err := get(t, c, srv.URL); err != nil || body != "ok" {
		t.Fatalf("GET with the certificate trusted: %q, %v", body, err)
	}
	if _, err := get(t, &http.Client{}, srv.URL); err == nil {
		t.Error("a client that trusts only the system roots accepted the self-signed certificate")
	}
	if d := leaf.NotAfter.Sub(time.Now()); d < SelfSignedValidity-2*time.Hour || d > SelfSignedValidity {
		t.Errorf("valid for %v more, want about %v", d, SelfSignedValidity)
	}
}

// TestTLSConfigFiles: a certificate and key from files are served; one
// without the other, or a missing file, is an error.
func TestTLSConfigFiles(t *testing.T) {
	certPEM, keyPEM, err := SelfSigned([]string{"127.0.0.1", "snug.example"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := TLSConfig(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTLS(t, cfg)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if body, err := get(t, c, srv.URL); err != nil || body != "ok" {
		t.Fatalf("GET: %q, %v", body, err)
	}
	for name, files := range map[string][2]string{
		"cert without key": {certFile, ""},
		"key without cert": {"", keyFile},
		"missing file":     {filepath.Join(dir, "nope.crt"), keyFile},
		"key for the cert": {keyFile, certFile},
	} {
		if _, err := TLSConfig(files[0], files[1]); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.Contains(err.Error(), "TLS certificate") {
			t.Errorf("%s: %v does not say it is about the TLS certificate", name, err)
		}
	}
}
