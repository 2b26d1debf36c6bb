package pki

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// NodeSet is the identity of one more node of the lab, signed by the CA of
// an existing Set: the kubelet's serving pair and its kubeconfig.
type NodeSet struct {
	// KubeletCert and KubeletKey serve that node's kubelet.
	KubeletCert, KubeletKey string
	// KubeletKubeconfig is system:node:<name>'s (group system:nodes), so the
	// Node authorizer lets it register and update that node only.
	KubeletKubeconfig string
}

// EnsureNode writes, under dir/nodes/NAME, a new identity for the node
// name with the addresses ips, signed by the CA in dir (made by Ensure).
// It is made anew on every call: it is cheap, and a node that joins gets
// an identity that matches the CA and addresses of the lab it joins.
func EnsureNode(dir, name string, ips []net.IP, server string, now time.Time) (*NodeSet, error) {
	if !dnsName.MatchString(name) {
		return nil, fmt.Errorf("node name %q is not a lowercase DNS name", name)
	}
	if len(ips) == 0 {
		return nil, errors.New("a node needs at least one address")
	}
	s := newSet(dir)
	pair, err := tls.LoadX509KeyPair(s.CACert, s.CAKey)
	if err != nil {
		return nil, fmt.Errorf("loading the lab's CA (run the lab up first): %w", err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok || !pair.Leaf.IsCA {
		return nil, errors.New("the lab's CA is not a CA key pair")
	}
	caPEM, err := os.ReadFile(s.CACert)
	if err != nil {
		return nil, err
	}
	ca := &issued{cert: pair.Leaf, key: signer, certPEM: caPEM}
	nd := filepath.Join(dir, "nodes", name)
	if err := os.MkdirAll(nd, 0o700); err != nil {
		return nil, err
	}
	ns := &NodeSet{
		KubeletCert:       filepath.Join(nd, "kubelet.crt"),
		KubeletKey:        filepath.Join(nd, "kubelet.key"),
		KubeletKubeconfig: filepath.Join(nd, "kubelet.kubeconfig"),
	}
	serving, err := newCert(leaf{cn: name, usage: x509.ExtKeyUsageServerAuth,
		dns: []string{name, "localhost"}, ips: append(append([]net.IP{}, ips...), net.IPv4(127, 0, 0, 1))}, ca, now)
	if err != nil {
		return nil, fmt.Errorf("creating %s's serving certificate: %w", name, err)
	}
	user := "system:node:" + name
	client, err := newCert(leaf{cn: user, orgs: []string{"system:nodes"}, usage: x509.ExtKeyUsageClientAuth}, ca, now)
	if err != nil {
		return nil, fmt.Errorf("creating %s's client certificate: %w", name, err)
	}
	kc, err := kubeconfig(server, user, caPEM, client.certPEM, client.keyPEM)
	if err != nil {
		return nil, err
	}
	for _, f := range []file{
		{ns.KubeletCert, serving.certPEM, 0o644}, {ns.KubeletKey, serving.keyPEM, 0o600},
		{ns.KubeletKubeconfig, kc, 0o600},
	} {
		if err := f.write(); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return ns, nil
}
