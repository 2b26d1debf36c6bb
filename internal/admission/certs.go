package admission

import (
	"crypto"
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
	"slices"
	"time"
)

// Keys of the serving Secret: cert-manager's, so that either can write it.
const (
	// KeyCert and KeyKey are the serving certificate and its key.
	KeyCert = "tls.crt"
	KeyKey  = "tls.key"
	// KeyCA is the CA bundle the API server trusts: the current CA first,
	// then the previous one while it is still valid (so that a replica
	// still serving a certificate of the previous CA is trusted while it
	// reloads).
	KeyCA = "ca.crt"
	// KeyCAKey is the current CA's key (self-managed certificates only).
	KeyCAKey = "ca.key"
)

// Lifetimes of the self-managed certificates. Each is renewed once less
// than a third of its life is left.
const (
	CAValidity      = 365 * 24 * time.Hour
	ServingValidity = 90 * 24 * time.Hour
)

// renewal says what a Secret's certificates need.
type renewal struct {
	ca, serving bool
	why         string
}

func (r renewal) any() bool { return r.ca || r.serving }

// certs is the parsed content of a serving Secret.
type certs struct {
	caCert  *x509.Certificate
	caKey   crypto.Signer
	bundle  []*x509.Certificate
	serving *x509.Certificate
}

// parseSecret reads what it can of a serving Secret's data.
func parseSecret(data map[string][]byte) certs {
	var c certs
	c.bundle = parseCerts(data[KeyCA])
	if len(c.bundle) > 0 {
		c.caCert = c.bundle[0]
	}
	if k, err := parseKey(data[KeyCAKey]); err == nil {
		c.caKey = k
	}
	if pair, err := tls.X509KeyPair(data[KeyCert], data[KeyKey]); err == nil {
		c.serving, _ = x509.ParseCertificate(pair.Certificate[0])
	}
	return c
}

// needs says what of a Secret's data must be renewed at now for a server
// named dnsNames: a missing, unreadable, mismatched or expiring CA renews
// both; a serving certificate that is missing, does not match its key, is
// not the CA's, names other hosts or expires soon renews itself.
func needs(data map[string][]byte, dnsNames []string, now time.Time) renewal {
	c := parseSecret(data)
	switch {
	case c.caCert == nil || c.caKey == nil:
		return renewal{ca: true, serving: true, why: "no usable CA"}
	case !samePublicKey(c.caCert, c.caKey):
		return renewal{ca: true, serving: true, why: "the CA's key does not match it"}
	case expiring(c.caCert, now):
		return renewal{ca: true, serving: true, why: fmt.Sprintf("the CA expires at %s", c.caCert.NotAfter.UTC().Format(time.RFC3339))}
	case c.serving == nil:
		return renewal{serving: true, why: "no usable serving certificate"}
	case c.serving.CheckSignatureFrom(c.caCert) != nil:
		return renewal{serving: true, why: "the serving certificate is not the CA's"}
	case !slices.Equal(sorted(c.serving.DNSNames), sorted(dnsNames)):
		return renewal{serving: true, why: fmt.Sprintf("the serving certificate names %v, not %v", c.serving.DNSNames, dnsNames)}
	case expiring(c.serving, now):
		return renewal{serving: true, why: fmt.Sprintf("the serving certificate expires at %s", c.serving.NotAfter.UTC().Format(time.RFC3339))}
	}
	return renewal{}
}

// expiring: not yet valid, or less than a third of its life left.
func expiring(c *x509.Certificate, now time.Time) bool {
	life := c.NotAfter.Sub(c.NotBefore)
	return now.Before(c.NotBefore) || now.After(c.NotAfter.Add(-life/3))
}

// renew returns new Secret data with what r asks renewed at now.
func renew(data map[string][]byte, r renewal, dnsNames []string, now time.Time) (map[string][]byte, error) {
	old := parseSecret(data)
	out := map[string][]byte{}
	caCert, caKey := old.caCert, old.caKey
	caPEM := data[KeyCA]
	if r.ca {
		var err error
		var der []byte
		caKey, der, err = newCert(nil, nil, now, CAValidity, nil)
		if err != nil {
			return nil, fmt.Errorf("making a CA: %w", err)
		}
		if caCert, err = x509.ParseCertificate(der); err != nil {
			return nil, err
		}
		caPEM = pemCert(der)
		// Keep the previous CA in the bundle while it is valid.
		if old.caCert != nil && now.Before(old.caCert.NotAfter) && now.After(old.caCert.NotBefore) {
			caPEM = append(caPEM, pemCert(old.caCert.Raw)...)
		}
	} else {
		// Drop expired CAs from the bundle.
		var b []byte
		for _, c := range old.bundle {
			if now.Before(c.NotAfter) {
				b = append(b, pemCert(c.Raw)...)
			}
		}
		caPEM = b
	}
	caKeyPEM, err := pemKey(caKey)
	if err != nil {
		return nil, err
	}
	out[KeyCA], out[KeyCAKey] = caPEM, caKeyPEM
	out[KeyCert], out[KeyKey] = data[KeyCert], data[KeyKey]
	if r.serving || r.ca {
		key, der, err := newCert(caCert, caKey, now, ServingValidity, dnsNames)
		if err != nil {
			return nil, fmt.Errorf("making a serving certificate: %w", err)
		}
		kp, err := pemKey(key)
		if err != nil {
			return nil, err
		}
		out[KeyCert], out[KeyKey] = pemCert(der), kp
	}
	return out, nil
}

// newCert makes a key and a certificate valid from a minute before now
// for validity: a CA when parent is nil (self-signed), else a server
// certificate for dnsNames signed by parent.
func newCert(parent *x509.Certificate, parentKey crypto.Signer, now time.Time, validity time.Duration, dnsNames []string) (crypto.Signer, []byte, error) {
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
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
	}
	if parent == nil {
		tmpl.Subject = pkix.Name{CommonName: fmt.Sprintf("snug-admission-ca@%d", now.Unix())}
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
		parent, parentKey = tmpl, key
	} else {
		tmpl.Subject = pkix.Name{CommonName: dnsNames[0]}
		tmpl.DNSNames = dnsNames
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, err
	}
	return key, der, nil
}

func parseCerts(b []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(blk.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

func parseKey(b []byte) (crypto.Signer, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM key")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		if ek, err2 := x509.ParseECPrivateKey(blk.Bytes); err2 == nil {
			return ek, nil
		}
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, errors.New("the key cannot sign")
	}
	return s, nil
}

func samePublicKey(c *x509.Certificate, k crypto.Signer) bool {
	pub, ok := k.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(c.PublicKey)
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("encoding a key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
