package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestEnsureNode(t *testing.T) {
	dir := t.TempDir()
	if _, err := EnsureNode(dir, "snug-lab-v2", []net.IP{net.ParseIP("10.216.0.2")}, "https://10.213.0.2:6443", testNow); err == nil ||
		!strings.Contains(err.Error(), "run the lab up first") {
		t.Fatalf("EnsureNode without a CA = %v, want an error naming the missing CA", err)
	}
	s := mustEnsure(t, dir, testOptions())
	if _, err := EnsureNode(dir, "Bad_Name", []net.IP{net.ParseIP("10.216.0.2")}, "https://10.213.0.2:6443", testNow); err == nil {
		t.Error("EnsureNode accepted a node name that is not a DNS name")
	}
	ns, err := EnsureNode(dir, "snug-lab-v2", []net.IP{net.ParseIP("10.216.0.2")}, "https://10.213.0.2:6443", testNow)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(s.CACert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	serving, err := tls.LoadX509KeyPair(ns.KubeletCert, ns.KubeletKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := serving.Leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: testNow, DNSName: "10.216.0.2",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the node's serving certificate does not verify for its address: %v", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", ns.KubeletKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.213.0.2:6443" {
		t.Errorf("kubeconfig server %s", cfg.Host)
	}
	client, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	if got := client.Leaf.Subject; got.CommonName != "system:node:snug-lab-v2" || len(got.Organization) != 1 || got.Organization[0] != "system:nodes" {
		t.Errorf("client subject %v, want CN=system:node:snug-lab-v2 O=system:nodes", got)
	}
	if _, err := client.Leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: testNow, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the node's client certificate does not chain to the lab's CA: %v", err)
	}
	// The first node's set is untouched.
	if _, err := Ensure(dir, testOptions()); err != nil {
		t.Fatal(err)
	}
	if again := mustEnsure(t, dir, testOptions()); again.Generated {
		t.Errorf("the lab's set was regenerated after EnsureNode: %s", again.Reason)
	}
}
