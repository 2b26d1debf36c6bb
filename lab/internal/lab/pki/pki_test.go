package pki

import (
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testOptions() Options {
	return Options{
		NodeName:    "snug-lab",
		NodeIPs:     []net.IP{net.ParseIP("10.213.0.2")},
		ServiceCIDR: "10.215.0.0/24",
		ServerURL:   "https://10.213.0.2:6443",
		Now:         testNow,
	}
}

func mustEnsure(t *testing.T, dir string, o Options) *Set {
	t.Helper()
	s, err := Ensure(dir, o)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return s
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  func(*Options)
		wantErr []string // substrings; none means valid
	}{
		{name: "valid", change: func(*Options) {}},
		{name: "ipv6 node and service range", change: func(o *Options) {
			o.NodeIPs, o.ServiceCIDR, o.ServerURL = []net.IP{net.ParseIP("fd00::2")}, "fd01::/112", "https://[fd00::2]:6443"
		}},
		{name: "empty node name", change: func(o *Options) { o.NodeName = "" }, wantErr: []string{"node name is empty"}},
		{name: "uppercase node name", change: func(o *Options) { o.NodeName = "Snug" }, wantErr: []string{`node name "Snug"`}},
		{name: "node name with empty label", change: func(o *Options) { o.NodeName = "a..b" }, wantErr: []string{"not a lowercase DNS name"}},
		{name: "no node IPs", change: func(o *Options) { o.NodeIPs = nil }, wantErr: []string{"no node IPs"}},
		{name: "nil node IP", change: func(o *Options) { o.NodeIPs = []net.IP{nil} }, wantErr: []string{"node IP 0"}},
		{name: "unspecified node IP", change: func(o *Options) { o.NodeIPs = []net.IP{net.IPv4zero} }, wantErr: []string{"node IP 0"}},
		{name: "bad CIDR", change: func(o *Options) { o.ServiceCIDR = "10.215.0.0/33" }, wantErr: []string{`service CIDR "10.215.0.0/33"`}},
		{name: "empty CIDR", change: func(o *Options) { o.ServiceCIDR = "" }, wantErr: []string{`service CIDR ""`}},
		{name: "CIDR without room", change: func(o *Options) { o.ServiceCIDR = "10.215.0.0/32" }, wantErr: []string{"no room for a service IP"}},
		{name: "http URL", change: func(o *Options) { o.ServerURL = "http://10.213.0.2:6443" }, wantErr: []string{"is not https://host[:port]"}},
		{name: "URL without host", change: func(o *Options) { o.ServerURL = "10.213.0.2:6443" }, wantErr: []string{"server URL"}},
		{name: "zero now", change: func(o *Options) { o.Now = time.Time{} }, wantErr: []string{"now is zero"}},
		{name: "all at once", change: func(o *Options) { *o = Options{} }, wantErr: []string{
			"node name is empty", "no node IPs", "service CIDR", "server URL", "now is zero"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions()
			tt.change(&o)
			err := o.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

func TestFirstServiceIP(t *testing.T) {
	t.Parallel()
	for cidr, want := range map[string]string{
		"10.215.0.0/24": "10.215.0.1",
		"10.215.0.9/24": "10.215.0.1",
		"10.96.0.0/12":  "10.96.0.1",
		"fd01::/112":    "fd01::1",
	} {
		got, err := firstServiceIP(cidr)
		if err != nil || got.String() != want {
			t.Errorf("firstServiceIP(%q) = %v, %v; want %s", cidr, got, err, want)
		}
	}
}

// certSummary is what a certificate says about whom it is for.
type certSummary struct {
	CN, O    string
	DNS, IPs []string
}

func summarize(c *x509.Certificate) certSummary {
	s := certSummary{CN: c.Subject.CommonName, O: strings.Join(c.Subject.Organization, ","), DNS: c.DNSNames}
	for _, ip := range c.IPAddresses {
		s.IPs = append(s.IPs, ip.String())
	}
	return s
}

// kubeconfigPair returns the client certificate and key embedded in the
// current context of the kubeconfig at path.
func kubeconfigPair(t *testing.T, path string) (certPEM, keyPEM []byte) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	user := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	return user.ClientCertificateData, user.ClientKeyData
}

func TestEnsureCertificates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := mustEnsure(t, dir, testOptions())
	if !s.Generated || s.Reason == "" {
		t.Errorf("first Ensure: Generated=%v Reason=%q, want true and a reason", s.Generated, s.Reason)
	}
	ca, err := tls.LoadX509KeyPair(s.CACert, s.CAKey)
	if err != nil {
		t.Fatalf("loading CA: %v", err)
	}
	if !ca.Leaf.IsCA || ca.Leaf.NotAfter.Sub(testNow) < 9*365*24*time.Hour {
		t.Errorf("CA: IsCA=%v NotAfter=%v, want a CA valid for about 10 years", ca.Leaf.IsCA, ca.Leaf.NotAfter)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Leaf)

	files := func(cert, key string) func(t *testing.T) ([]byte, []byte) {
		return func(t *testing.T) ([]byte, []byte) {
			c, err := os.ReadFile(cert)
			if err != nil {
				t.Fatal(err)
			}
			k, err := os.ReadFile(key)
			if err != nil {
				t.Fatal(err)
			}
			return c, k
		}
	}
	embedded := func(path string) func(t *testing.T) ([]byte, []byte) {
		return func(t *testing.T) ([]byte, []byte) { return kubeconfigPair(t, path) }
	}
	server, client := x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth
	tests := []struct {
		name  string
		pair  func(t *testing.T) (certPEM, keyPEM []byte)
		usage x509.ExtKeyUsage
		want  certSummary
	}{
		{"apiserver", files(s.APIServerCert, s.APIServerKey), server, certSummary{
			CN:  "kube-apiserver",
			DNS: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
			IPs: []string{"10.213.0.2", "127.0.0.1", "10.215.0.1"},
		}},
		{"kubelet serving", files(s.KubeletCert, s.KubeletKey), server, certSummary{
			CN: "snug-lab", DNS: []string{"snug-lab", "localhost"}, IPs: []string{"10.213.0.2", "127.0.0.1"},
		}},
		{"apiserver kubelet client", files(s.KubeletClientCert, s.KubeletClientKey), client,
			certSummary{CN: "kube-apiserver-kubelet-client", O: "system:masters"}},
		{"front proxy client", files(s.FrontProxyClientCert, s.FrontProxyClientKey), client,
			certSummary{CN: "front-proxy-client"}},
		{"admin", embedded(s.AdminKubeconfig), client, certSummary{CN: "snug-lab-admin", O: "system:masters"}},
		{"controller manager", embedded(s.ControllerManagerKubeconfig), client, certSummary{CN: "system:kube-controller-manager"}},
		{"scheduler", embedded(s.SchedulerKubeconfig), client, certSummary{CN: "system:kube-scheduler"}},
		{"kubelet client", embedded(s.KubeletKubeconfig), client, certSummary{CN: "system:node:snug-lab", O: "system:nodes"}},
		{"kube-proxy", embedded(s.KubeProxyKubeconfig), client, certSummary{CN: "system:kube-proxy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certPEM, keyPEM := tt.pair(t)
			pair, err := tls.X509KeyPair(certPEM, keyPEM) // also proves the key matches
			if err != nil {
				t.Fatalf("loading pair: %v", err)
			}
			c := pair.Leaf
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: testNow, KeyUsages: []x509.ExtKeyUsage{tt.usage}}); err != nil {
				t.Errorf("Verify for usage %v: %v", tt.usage, err)
			}
			other := map[x509.ExtKeyUsage]x509.ExtKeyUsage{server: client, client: server}[tt.usage]
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: testNow, KeyUsages: []x509.ExtKeyUsage{other}}); err == nil {
				t.Errorf("Verify for usage %v succeeded, want the certificate limited to %v", other, tt.usage)
			}
			if c.IsCA {
				t.Error("leaf is a CA")
			}
			if diff := cmp.Diff(tt.want, summarize(c), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("certificate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEnsureFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := testOptions()
	s := mustEnsure(t, dir, o)

	modes := map[string]fs.FileMode{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		modes[e.Name()] = info.Mode()
	}
	wantModes := map[string]fs.FileMode{
		"ca.crt": 0o644, "ca.key": 0o600,
		"apiserver.crt": 0o644, "apiserver.key": 0o600,
		"kubelet.crt": 0o644, "kubelet.key": 0o600,
		"apiserver-kubelet-client.crt": 0o644, "apiserver-kubelet-client.key": 0o600,
		"front-proxy-client.crt": 0o644, "front-proxy-client.key": 0o600,
		"sa.key": 0o600, "sa.pub": 0o644,
		"admin.kubeconfig": 0o600, "controller-manager.kubeconfig": 0o600,
		"scheduler.kubeconfig": 0o600, "kubelet.kubeconfig": 0o600,
		"kube-proxy.kubeconfig": 0o600,
	}
	if diff := cmp.Diff(wantModes, modes); diff != "" {
		t.Errorf("files and modes (-want +got):\n%s", diff)
	}

	// The apiserver and controller manager read these with keyutil.
	priv, err := keyutil.PrivateKeyFromFile(s.SAKey)
	if err != nil {
		t.Fatalf("service-account signing key: %v", err)
	}
	pubs, err := keyutil.PublicKeysFromFile(s.SAPub)
	if err != nil {
		t.Fatalf("service-account public key: %v", err)
	}
	rk, ok := priv.(*rsa.PrivateKey)
	if !ok || rk.N.BitLen() != 2048 || len(pubs) != 1 || !rk.PublicKey.Equal(pubs[0]) {
		t.Errorf("service-account keys: %T (%d public keys), want a matching RSA 2048 pair", priv, len(pubs))
	}
	if _, err := keyutil.PrivateKeyFromFile(s.CAKey); err != nil {
		t.Errorf("CA key for --cluster-signing-key-file: %v", err)
	}

	caPEM, err := os.ReadFile(s.CACert)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{s.AdminKubeconfig, s.ControllerManagerKubeconfig, s.SchedulerKubeconfig, s.KubeletKubeconfig, s.KubeProxyKubeconfig} {
		cfg, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatalf("loading %s: %v", path, err)
		}
		ctx := cfg.Contexts["snug-lab"]
		if cfg.CurrentContext != "snug-lab" || ctx == nil || ctx.Cluster != "snug-lab" {
			t.Fatalf("%s: current context %q, want snug-lab on cluster snug-lab", path, cfg.CurrentContext)
		}
		cluster, user := cfg.Clusters["snug-lab"], cfg.AuthInfos[ctx.AuthInfo]
		if cluster.Server != o.ServerURL || string(cluster.CertificateAuthorityData) != string(caPEM) || cluster.CertificateAuthority != "" {
			t.Errorf("%s: cluster %+v, want %s with the CA embedded", path, cluster, o.ServerURL)
		}
		if len(user.ClientCertificateData) == 0 || len(user.ClientKeyData) == 0 || user.ClientCertificate != "" || user.ClientKey != "" {
			t.Errorf("%s: user %q does not embed its certificate and key", path, ctx.AuthInfo)
		}
	}
}

// snapshot returns the contents of every file in dir.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(data)
	}
	return files
}

func TestEnsureReuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := testOptions()
	first := mustEnsure(t, dir, o)
	before := snapshot(t, dir)

	o.Now = testNow.Add(300 * 24 * time.Hour) // later, still well before renewal
	o.NodeIPs = []net.IP{net.ParseIP("10.213.0.2").To4()}
	second := mustEnsure(t, dir, o)
	if second.Generated || second.Reason != "" {
		t.Errorf("second Ensure: Generated=%v Reason=%q, want the set reused", second.Generated, second.Reason)
	}
	if diff := cmp.Diff(first, second, cmpopts.IgnoreFields(Set{}, "Generated", "Reason")); diff != "" {
		t.Errorf("paths changed (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
		t.Errorf("files changed on reuse (-before +after):\n%s", diff)
	}
}

func TestEnsureRegenerates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		change     func(t *testing.T, s *Set, o *Options)
		wantReason string
	}{
		{"changed node IP", func(t *testing.T, s *Set, o *Options) { o.NodeIPs = []net.IP{net.ParseIP("10.213.0.6")} }, "does not cover 10.213.0.6"},
		{"extra node IP", func(t *testing.T, s *Set, o *Options) { o.NodeIPs = append(o.NodeIPs, net.ParseIP("fd00::2")) }, "does not cover fd00::2"},
		{"changed node name", func(t *testing.T, s *Set, o *Options) { o.NodeName = "other" }, "want CN=other"},
		{"changed service CIDR", func(t *testing.T, s *Set, o *Options) { o.ServiceCIDR = "10.96.0.0/12" }, "does not cover 10.96.0.1"},
		{"changed server URL", func(t *testing.T, s *Set, o *Options) { o.ServerURL = "https://10.213.0.6:6443" }, "want https://10.213.0.6:6443"},
		{"close to expiry", func(t *testing.T, s *Set, o *Options) { o.Now = o.Now.Add(340 * 24 * time.Hour) }, "expires"},
		{"expired", func(t *testing.T, s *Set, o *Options) { o.Now = o.Now.Add(400 * 24 * time.Hour) }, "expired"},
		{"missing file", func(t *testing.T, s *Set, o *Options) { remove(t, s.SAPub) }, "sa.pub"},
		{"other service-account public key", func(t *testing.T, s *Set, o *Options) {
			copyFile(t, mustEnsure(t, t.TempDir(), *o).SAPub, s.SAPub)
		}, "whose public half is sa.pub"},
		{"service-account key is not RSA", func(t *testing.T, s *Set, o *Options) { copyFile(t, s.CAKey, s.SAKey) }, "sa.key is not a PKCS#8 RSA key"},
		{"missing CA", func(t *testing.T, s *Set, o *Options) { remove(t, s.CACert) }, "loading CA"},
		{"swapped key", func(t *testing.T, s *Set, o *Options) { copyFile(t, s.KubeletKey, s.APIServerKey) }, "kube-apiserver: tls: private key does not match"},
		{"corrupt kubeconfig", func(t *testing.T, s *Set, o *Options) { write(t, s.SchedulerKubeconfig, "{") }, "kube-scheduler"},
		{"kubeconfig from another set", func(t *testing.T, s *Set, o *Options) {
			other := mustEnsure(t, t.TempDir(), *o)
			copyFile(t, other.AdminKubeconfig, s.AdminKubeconfig)
		}, "trusts another CA"},
		{"leaf from another CA", func(t *testing.T, s *Set, o *Options) {
			other := mustEnsure(t, t.TempDir(), *o)
			copyFile(t, other.KubeletCert, s.KubeletCert)
			copyFile(t, other.KubeletKey, s.KubeletKey)
		}, "unknown authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			o := testOptions()
			s := mustEnsure(t, dir, o)
			before := snapshot(t, dir)
			tt.change(t, s, &o)

			again := mustEnsure(t, dir, o)
			t.Logf("reason: %s", again.Reason)
			if !again.Generated || !strings.Contains(again.Reason, tt.wantReason) {
				t.Errorf("Ensure after change: Generated=%v Reason=%q, want regenerated because of %q", again.Generated, again.Reason, tt.wantReason)
			}
			after := snapshot(t, dir)
			for name, data := range before {
				if after[name] == data {
					t.Errorf("%s kept its old contents; want everything regenerated", name)
				}
			}
			if err := check(again, leaves(again, o), o); err != nil {
				t.Errorf("regenerated set does not pass its own check: %v", err)
			}
			if third := mustEnsure(t, dir, o); third.Generated {
				t.Errorf("Ensure after regeneration regenerated again: %s", third.Reason)
			}
		})
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	write(t, to, string(data))
}

// newTLSServer starts an HTTPS server on 127.0.0.1 that serves certFile and
// requires a client certificate signed by caFile; it answers with the
// client's subject. url is known before the server starts so that the
// kubeconfigs can point at it.
func newTLSServer(t *testing.T) (url string, start func(certFile, keyFile, caFile string)) {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.TLS.PeerCertificates[0].Subject.String())
	}))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // rejected handshakes are expected
	t.Cleanup(ts.Close)
	return "https://" + ts.Listener.Addr().String(), func(certFile, keyFile, caFile string) {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		caPEM, err := os.ReadFile(caFile)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
		ts.StartTLS()
	}
}

// get makes a request with the transport client-go builds from cfg.
func get(t *testing.T, cfg *rest.Config) (string, error) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatalf("building client: %v", err)
	}
	resp, err := client.Get(cfg.Host + "/whoami")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// TestKubeconfigsAuthenticate proves the whole chain: each kubeconfig,
// unchanged and read by clientcmd, trusts the apiserver certificate at
// 127.0.0.1 and presents a client certificate the server accepts.
func TestKubeconfigsAuthenticate(t *testing.T) {
	t.Parallel()
	url, start := newTLSServer(t)
	o := testOptions()
	o.ServerURL, o.Now = url, time.Now() // crypto/tls checks validity against the wall clock
	s := mustEnsure(t, t.TempDir(), o)
	start(s.APIServerCert, s.APIServerKey, s.CACert)

	for path, want := range map[string]string{
		s.AdminKubeconfig:             "CN=snug-lab-admin,O=system:masters",
		s.ControllerManagerKubeconfig: "CN=system:kube-controller-manager",
		s.SchedulerKubeconfig:         "CN=system:kube-scheduler",
		s.KubeletKubeconfig:           "CN=system:node:snug-lab,O=system:nodes",
		s.KubeProxyKubeconfig:         "CN=system:kube-proxy",
	} {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatalf("rest config from %s: %v", path, err)
		}
		got, err := get(t, cfg)
		if err != nil || got != want {
			t.Errorf("%s: server saw %q, %v; want %q", filepath.Base(path), got, err, want)
		}
	}

	anonymous := &rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{CAFile: s.CACert}}
	if got, err := get(t, anonymous); err == nil {
		t.Errorf("request without a client certificate succeeded (%q); want it rejected", got)
	}
}

// TestKubeletClientAuthenticates proves the apiserver can reach the kubelet:
// the kubelet serving certificate at 127.0.0.1 accepts the apiserver's
// kubelet client certificate.
func TestKubeletClientAuthenticates(t *testing.T) {
	t.Parallel()
	url, start := newTLSServer(t)
	o := testOptions()
	o.Now = time.Now()
	s := mustEnsure(t, t.TempDir(), o)
	start(s.KubeletCert, s.KubeletKey, s.CACert)

	cfg := &rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{
		CAFile: s.CACert, CertFile: s.KubeletClientCert, KeyFile: s.KubeletClientKey,
	}}
	want := "CN=kube-apiserver-kubelet-client,O=system:masters"
	if got, err := get(t, cfg); err != nil || got != want {
		t.Errorf("server saw %q, %v; want %q", got, err, want)
	}
}
