package vpa

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// webhookCerts are the files VPA's admission controller serves its webhook
// with: --client-ca-file (which it also writes into the webhook's
// caBundle), --tls-cert-file and --tls-private-key.
type webhookCerts struct {
	CA, Cert, Key string
}

// writeWebhookCerts makes a fresh CA and a serving certificate for ip,
// valid from now for a year, into dir. The lab's own CA is not reused: the
// webhook only needs the API server to trust this one certificate.
func writeWebhookCerts(dir string, ip net.IP, now time.Time) (webhookCerts, error) {
	c := webhookCerts{
		CA:   filepath.Join(dir, "caCert.pem"),
		Cert: filepath.Join(dir, "serverCert.pem"),
		Key:  filepath.Join(dir, "serverKey.pem"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, fmt.Errorf("making webhook CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "snug-lab-vpa-webhook-ca"},
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return c, fmt.Errorf("making webhook CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return c, fmt.Errorf("making webhook CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, fmt.Errorf("making webhook key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "vpa-webhook"},
		IPAddresses: []net.IP{ip},
		NotBefore:   caTmpl.NotBefore,
		NotAfter:    caTmpl.NotAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), crypto.Signer(caKey))
	if err != nil {
		return c, fmt.Errorf("making webhook certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return c, fmt.Errorf("encoding webhook key: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return c, fmt.Errorf("writing webhook certificates: %w", err)
	}
	files := []struct {
		path string
		typ  string
		der  []byte
		mode os.FileMode
	}{
		{c.CA, "CERTIFICATE", caDER, 0o644},
		{c.Cert, "CERTIFICATE", der, 0o644},
		{c.Key, "PRIVATE KEY", keyDER, 0o600},
	}
	for _, f := range files {
		data := pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der})
		if err := os.WriteFile(f.path, data, f.mode); err != nil {
			return c, fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return c, nil
}
