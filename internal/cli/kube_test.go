package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// withNamespace is kubeOptions as if -n ns was given.
func withNamespace(ns string) kubeOptions {
	var o kubeOptions
	o.init()
	*o.flags.Namespace = ns
	return o
}

const twoContexts = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://a.example:6443"}
- name: b
  cluster: {server: "https://b.example:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: a
  context: {cluster: a, user: u, namespace: na}
- name: b
  context: {cluster: b, user: u, namespace: nb}
- name: b-no-ns
  context: {cluster: b, user: u}
current-context: a
`

// TestKubeFlags: the standard kubeconfig flags (cli-runtime's) choose the
// server, namespace, identity and timeout as kubectl's do.
func TestKubeFlags(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "config")
	if err := os.WriteFile(kc, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", dir) // no ~/.kube/config
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, c := range []struct {
		name    string
		args    []string
		host    string
		ns      string
		as      string
		groups  []string
		timeout time.Duration
		err     string
	}{
		{name: "current context", args: []string{"--kubeconfig", kc}, host: "https://a.example:6443", ns: "na", timeout: requestTimeout},
		{name: "--context", args: []string{"--kubeconfig", kc, "--context", "b"}, host: "https://b.example:6443", ns: "nb", timeout: requestTimeout},
		{name: "context without namespace", args: []string{"--kubeconfig", kc, "--context", "b-no-ns"}, host: "https://b.example:6443", ns: "default", timeout: requestTimeout},
		{name: "-n wins", args: []string{"--kubeconfig", kc, "--context", "b", "-n", "x"}, host: "https://b.example:6443", ns: "x", timeout: requestTimeout},
		{name: "--server", args: []string{"--kubeconfig", kc, "-s", "https://c.example"}, host: "https://c.example", ns: "na", timeout: requestTimeout},
		{name: "--as", args: []string{"--kubeconfig", kc, "--as", "alice", "--as-group", "g1", "--as-group", "g2"}, host: "https://a.example:6443", ns: "na", as: "alice", groups: []string{"g1", "g2"}, timeout: requestTimeout},
		{name: "--request-timeout", args: []string{"--kubeconfig", kc, "--request-timeout", "5s"}, host: "https://a.example:6443", ns: "na", timeout: 5 * time.Second},
		{name: "unknown context", args: []string{"--kubeconfig", kc, "--context", "z"}, err: `loading kubeconfig: context "z" does not exist`},
		{name: "missing file", args: []string{"--kubeconfig", filepath.Join(dir, "nope")}, err: "loading kubeconfig: stat " + filepath.Join(dir, "nope")},
		{name: "no kubeconfig", args: nil, err: noKubeconfig},
	} {
		t.Run(c.name, func(t *testing.T) {
			var o kubeOptions
			fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			cfg, ns, err := o.restConfig("snug")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != c.host || ns != c.ns || cfg.Impersonate.UserName != c.as || strings.Join(cfg.Impersonate.Groups, ",") != strings.Join(c.groups, ",") || cfg.Timeout != c.timeout || cfg.UserAgent != "snug" {
				t.Errorf("host %q ns %q as %q groups %q timeout %v agent %q; want %q %q %q %q %v snug",
					cfg.Host, ns, cfg.Impersonate.UserName, cfg.Impersonate.Groups, cfg.Timeout, cfg.UserAgent, c.host, c.ns, c.as, c.groups, c.timeout)
			}
		})
	}
}
