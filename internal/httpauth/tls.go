package httpauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// SelfSignedValidity is how long a certificate made at start is valid.
const SelfSignedValidity = 365 * 24 * time.Hour

// TLSConfig returns the server side of HTTPS for snug's endpoints: the
// certificate and key in the PEM files certFile and keyFile, or, when both
// are empty, a self-signed certificate made now for this host's name,
// localhost and the loopback addresses (clients then skip verification,
// as Prometheus does with insecure_skip_verify for controller-runtime's
// default). The files are read once: a rotated certificate takes a
// restart.
func TLSConfig(certFile, keyFile string) (*tls.Config, error) {
	var (
		cert tls.Certificate
		err  error
	)
	switch {
	case certFile == "" && keyFile == "":
		host, _ := os.Hostname()
		var certPEM, keyPEM []byte
		certPEM, keyPEM, err = SelfSigned([]string{host, "localhost", "127.0.0.1", "::1"}, time.Now())
		if err == nil {
			cert, err = tls.X509KeyPair(certPEM, keyPEM)
		}
		if err != nil {
			return nil, fmt.Errorf("making a self-signed certificate: %w", err)
		}
	case certFile == "" || keyFile == "":
		return nil, errors.New("a TLS certificate file and its key file go together")
	default:
		if cert, err = tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			return nil, fmt.Errorf("loading the TLS certificate: %w", err)
		}
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// SelfSigned returns a PEM certificate and PKCS #8 key (ECDSA P-256) for
// hosts (names or IP addresses), valid from an hour before now for
// SelfSignedValidity.
func SelfSigned(hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Organization: []string{"snug"}, CommonName: "snug self-signed"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(SelfSignedValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil
}
