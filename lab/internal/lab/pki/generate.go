package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// backdate keeps certificates valid on a machine whose clock is a little
	// behind the caller's.
	backdate = 5 * time.Minute
	// clusterName names the cluster and the context in every kubeconfig.
	clusterName = "snug-lab"
)

// generate writes a new CA, every leaf, the service-account keys and the
// kubeconfigs. A run cut short leaves files that fail check, so the next
// Ensure starts over.
func generate(s *Set, ls []leaf, now time.Time, server string) error {
	ca, err := newCert(leaf{cn: "snug-lab-ca"}, nil, now)
	if err != nil {
		return fmt.Errorf("creating CA: %w", err)
	}
	files := []file{{s.CACert, ca.certPEM, 0o644}, {s.CAKey, ca.keyPEM, 0o600}}
	for _, l := range ls {
		c, err := newCert(l, ca, now)
		if err != nil {
			return fmt.Errorf("creating %s certificate: %w", l.name, err)
		}
		if l.kubeconfig == "" {
			files = append(files, file{l.cert, c.certPEM, 0o644}, file{l.key, c.keyPEM, 0o600})
			continue
		}
		kc, err := kubeconfig(server, l.name, ca.certPEM, c.certPEM, c.keyPEM)
		if err != nil {
			return fmt.Errorf("creating %s kubeconfig: %w", l.name, err)
		}
		files = append(files, file{l.kubeconfig, kc, 0o600})
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("creating service-account key: %w", err)
	}
	saKeyPEM, err := pemKey(saKey)
	if err != nil {
		return err
	}
	saPubPEM, err := pemPublicKey(saKey)
	if err != nil {
		return err
	}
	files = append(files, file{s.SAKey, saKeyPEM, 0o600}, file{s.SAPub, saPubPEM, 0o644})
	for _, f := range files {
		if err := f.write(); err != nil {
			return fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return nil
}

// issued is a certificate and its key, parsed and PEM-encoded.
type issued struct {
	cert            *x509.Certificate
	key             crypto.Signer
	certPEM, keyPEM []byte
}

// newCert makes a P-256 key and a certificate for l signed by ca, or a
// self-signed CA when ca is nil. A nil serial number lets crypto/x509 pick a
// random one.
func newCert(l leaf, ca *issued, now time.Time) (*issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: l.cn, Organization: l.orgs},
		DNSNames:              l.dns,
		IPAddresses:           l.ips,
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(leafValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{l.usage},
		BasicConstraintsValid: true,
	}
	parent, parentKey := tmpl, crypto.Signer(key)
	if ca != nil {
		parent, parentKey = ca.cert, ca.key
	} else {
		tmpl.IsCA, tmpl.ExtKeyUsage, tmpl.NotAfter = true, nil, now.Add(caValidity)
		tmpl.KeyUsage |= x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, err
	}
	out := &issued{key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	if out.cert, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	out.keyPEM, err = pemKey(key)
	return out, err
}

// pemKey encodes key as PKCS#8, which Go's TLS stack and every Kubernetes
// key flag accept, for RSA and ECDSA alike.
func pemKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// pemPublicKey encodes the public half of key as PKIX.
func pemPublicKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// kubeconfig returns a kubeconfig for server with the CA and the user's
// client certificate embedded, so the file works wherever it is copied.
func kubeconfig(server, user string, caPEM, certPEM, keyPEM []byte) ([]byte, error) {
	c := clientcmdapi.NewConfig()
	c.Clusters[clusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	c.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	c.Contexts[clusterName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: user}
	c.CurrentContext = clusterName
	return clientcmd.Write(*c)
}

type file struct {
	path string
	data []byte
	mode fs.FileMode
}

// write replaces the file by renaming a sibling into place, so a reader never
// sees half of it; keys are created 0600 and never readable by others.
func (f file) write() error {
	tmp := f.path + ".tmp"
	_ = os.Remove(tmp) // a leftover could be readable by others
	err := os.WriteFile(tmp, f.data, f.mode)
	if err == nil {
		err = os.Chmod(tmp, f.mode) // undo the umask
	}
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	return err
}
