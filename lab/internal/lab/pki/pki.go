package pki

import (
	"bytes"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// Set is where Ensure put each file; every path is absolute if dir was.
type Set struct {
	// CACert and CAKey are the CA every component trusts; the controller
	// manager also signs CSRs with them.
	CACert, CAKey string
	// APIServerCert and APIServerKey serve the kube-apiserver.
	APIServerCert, APIServerKey string
	// KubeletCert and KubeletKey serve the kubelet.
	KubeletCert, KubeletKey string
	// KubeletClientCert and KubeletClientKey are what the apiserver presents
	// to kubelets (--kubelet-client-certificate, --kubelet-client-key).
	KubeletClientCert, KubeletClientKey string
	// FrontProxyClientCert and FrontProxyClientKey are what the apiserver's
	// aggregator presents to extension API servers such as metrics-server
	// (--proxy-client-cert-file); they trust it through the CA and the name
	// front-proxy-client (--requestheader-allowed-names).
	FrontProxyClientCert, FrontProxyClientKey string
	// SAKey and SAPub are the service-account signing key pair.
	SAKey, SAPub string
	// The kubeconfigs embed the CA and their user's certificate and key.
	AdminKubeconfig, ControllerManagerKubeconfig string
	SchedulerKubeconfig, KubeletKubeconfig       string
	// KubeProxyKubeconfig is system:kube-proxy's, whom the default
	// ClusterRoleBinding system:node-proxier lets watch Services and
	// EndpointSlices.
	KubeProxyKubeconfig string

	// Generated reports that Ensure wrote a new set rather than reusing one;
	// Reason then says why (no set yet, a missing file, a SAN not covered...).
	Generated bool
	Reason    string
}

// Ensure makes sure dir holds a complete, valid set for opts and returns it.
// A set that is complete, chains to its CA, is valid at opts.Now and for
// another 30 days and covers every name in opts is reused byte for byte.
// Anything else regenerates every file, the CA included, so components that
// already run must be restarted; Set.Generated and Set.Reason say so.
//
// Ensure is not safe for concurrent use on the same dir.
func Ensure(dir string, opts Options) (*Set, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("validating pki options: %w", err)
	}
	s := newSet(dir)
	ls := leaves(s, opts)
	err := check(s, ls, opts)
	if err == nil {
		return s, nil
	}
	s.Generated, s.Reason = true, err.Error()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating pki directory: %w", err)
	}
	if err := generate(s, ls, opts.Now, opts.ServerURL); err != nil {
		return nil, fmt.Errorf("generating pki in %s: %w", dir, err)
	}
	return s, nil
}

// Paths is where Ensure keeps each file of the set in dir, without
// checking or making any of them: for a caller that uses the set of a lab
// that runs (Ensure could replace it under that lab).
func Paths(dir string) *Set { return newSet(dir) }

func newSet(dir string) *Set {
	p := func(name string) string { return filepath.Join(dir, name) }
	return &Set{
		CACert: p("ca.crt"), CAKey: p("ca.key"),
		APIServerCert: p("apiserver.crt"), APIServerKey: p("apiserver.key"),
		KubeletCert: p("kubelet.crt"), KubeletKey: p("kubelet.key"),
		KubeletClientCert: p("apiserver-kubelet-client.crt"), KubeletClientKey: p("apiserver-kubelet-client.key"),
		FrontProxyClientCert: p("front-proxy-client.crt"), FrontProxyClientKey: p("front-proxy-client.key"),
		SAKey: p("sa.key"), SAPub: p("sa.pub"),
		AdminKubeconfig:             p("admin.kubeconfig"),
		ControllerManagerKubeconfig: p("controller-manager.kubeconfig"),
		SchedulerKubeconfig:         p("scheduler.kubeconfig"),
		KubeletKubeconfig:           p("kubelet.kubeconfig"),
		KubeProxyKubeconfig:         p("kube-proxy.kubeconfig"),
	}
}

// leaf is one certificate signed by the CA, kept either as a cert and key
// file pair or embedded in a kubeconfig.
type leaf struct {
	name       string // kubeconfig user and name in messages
	cn         string
	orgs       []string
	usage      x509.ExtKeyUsage
	dns        []string
	ips        []net.IP
	cert, key  string
	kubeconfig string
}

func leaves(s *Set, o Options) []leaf {
	svc, _ := firstServiceIP(o.ServiceCIDR) // Validate has checked it
	loopback := net.IPv4(127, 0, 0, 1)
	node := "system:node:" + o.NodeName
	return []leaf{
		{name: "kube-apiserver", cn: "kube-apiserver", usage: x509.ExtKeyUsageServerAuth,
			dns: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
			ips: append(slices.Clone(o.NodeIPs), loopback, svc), cert: s.APIServerCert, key: s.APIServerKey},
		{name: "kubelet-serving", cn: o.NodeName, usage: x509.ExtKeyUsageServerAuth,
			dns: []string{o.NodeName, "localhost"},
			ips: append(slices.Clone(o.NodeIPs), loopback), cert: s.KubeletCert, key: s.KubeletKey},
		{name: "kube-apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"},
			usage: x509.ExtKeyUsageClientAuth, cert: s.KubeletClientCert, key: s.KubeletClientKey},
		{name: "front-proxy-client", cn: "front-proxy-client",
			usage: x509.ExtKeyUsageClientAuth, cert: s.FrontProxyClientCert, key: s.FrontProxyClientKey},
		{name: "admin", cn: "snug-lab-admin", orgs: []string{"system:masters"},
			usage: x509.ExtKeyUsageClientAuth, kubeconfig: s.AdminKubeconfig},
		{name: "kube-controller-manager", cn: "system:kube-controller-manager",
			usage: x509.ExtKeyUsageClientAuth, kubeconfig: s.ControllerManagerKubeconfig},
		{name: "kube-scheduler", cn: "system:kube-scheduler",
			usage: x509.ExtKeyUsageClientAuth, kubeconfig: s.SchedulerKubeconfig},
		{name: node, cn: node, orgs: []string{"system:nodes"},
			usage: x509.ExtKeyUsageClientAuth, kubeconfig: s.KubeletKubeconfig},
		{name: "kube-proxy", cn: "system:kube-proxy",
			usage: x509.ExtKeyUsageClientAuth, kubeconfig: s.KubeProxyKubeconfig},
	}
}

// renewBefore is how long before expiry an existing set is replaced, so a
// lab started from it does not stop working halfway through a run.
const renewBefore = 30 * 24 * time.Hour

// check returns why the set in s cannot be reused, or nil if it can.
func check(s *Set, ls []leaf, o Options) error {
	ca, err := tls.LoadX509KeyPair(s.CACert, s.CAKey)
	if err != nil {
		return fmt.Errorf("loading CA: %w", err)
	}
	if !ca.Leaf.IsCA || ca.Leaf.NotAfter.Before(o.Now.Add(renewBefore)) {
		return fmt.Errorf("CA is not a CA or expires before %s", o.Now.Add(renewBefore).Format(time.DateOnly))
	}
	caPEM, err := os.ReadFile(s.CACert)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Leaf)
	for _, l := range ls {
		certPEM, keyPEM, err := l.read(caPEM, o.ServerURL)
		if err == nil {
			err = l.verify(certPEM, keyPEM, roots, o.Now)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
		}
	}
	return checkSA(s)
}

// read returns l's certificate and key, from files or from its kubeconfig,
// which must point at server and trust exactly caPEM.
func (l leaf) read(caPEM []byte, server string) (certPEM, keyPEM []byte, err error) {
	if l.kubeconfig == "" {
		if certPEM, err = os.ReadFile(l.cert); err == nil {
			keyPEM, err = os.ReadFile(l.key)
		}
		return certPEM, keyPEM, err
	}
	c, err := clientcmd.BuildConfigFromFlags("", l.kubeconfig)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("loading kubeconfig: %w", err)
	case c.Host != server:
		return nil, nil, fmt.Errorf("%s points at %s, want %s", l.kubeconfig, c.Host, server)
	case !bytes.Equal(c.CAData, caPEM):
		return nil, nil, fmt.Errorf("%s trusts another CA", l.kubeconfig)
	}
	return c.CertData, c.KeyData, nil
}

// verify checks that the pair chains to roots for l's usage, has l's
// subject, covers l's names and stays valid for renewBefore.
func (l leaf) verify(certPEM, keyPEM []byte, roots *x509.CertPool, now time.Time) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	c := pair.Leaf
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{l.usage}}); err != nil {
		return err
	}
	if c.NotAfter.Before(now.Add(renewBefore)) {
		return fmt.Errorf("certificate expires %s", c.NotAfter.Format(time.DateOnly))
	}
	if c.Subject.CommonName != l.cn || !slices.Equal(c.Subject.Organization, l.orgs) {
		return fmt.Errorf("subject is %q, want CN=%s O=%v", c.Subject, l.cn, l.orgs)
	}
	names := slices.Clone(l.dns)
	for _, ip := range l.ips {
		names = append(names, ip.String())
	}
	for _, name := range names {
		if c.VerifyHostname(name) != nil {
			return fmt.Errorf("certificate does not cover %s", name)
		}
	}
	return nil
}

// checkSA checks that sa.key is an RSA key and sa.pub its public half.
func checkSA(s *Set) error {
	keyPEM, err := os.ReadFile(s.SAKey)
	if err != nil {
		return fmt.Errorf("reading service-account key: %w", err)
	}
	pubPEM, err := os.ReadFile(s.SAPub)
	if err != nil {
		return fmt.Errorf("reading service-account public key: %w", err)
	}
	var want []byte
	if block, _ := pem.Decode(keyPEM); block != nil {
		key, _ := x509.ParsePKCS8PrivateKey(block.Bytes)
		if rk, ok := key.(*rsa.PrivateKey); ok {
			want, _ = pemPublicKey(rk)
		}
	}
	if want == nil || !bytes.Equal(pubPEM, want) {
		return errors.New("sa.key is not a PKCS#8 RSA key whose public half is sa.pub")
	}
	return nil
}
