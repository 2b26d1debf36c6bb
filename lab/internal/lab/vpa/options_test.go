package vpa

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snug-dev/snug/lab/internal/lab"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  func(o *Options)
		wantErr string
	}{
		{"defaults", func(*Options) {}, ""},
		{"version with v", func(o *Options) { o.VPAVersion = "v1.8.1" }, "--vpa-version"},
		{"bad metrics-server version", func(o *Options) { o.MetricsServerVersion = "latest" }, "--metrics-server-version"},
		{"privileged port", func(o *Options) { o.WebhookPort = 443 }, "--webhook-port"},
		{"same ports", func(o *Options) { o.MetricsServerPort = o.WebhookPort }, "are both"},
		{"resolution too fine", func(o *Options) { o.MetricResolution = time.Second }, "--metric-resolution"},
		{"no timeout", func(o *Options) { o.ReadyTimeout = 0 }, "--wait-timeout"},
		{"bad lab", func(o *Options) { o.Lab.Dir = "relative" }, "--dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := NewOptions(lab.NewOptions())
			tt.change(o)
			err := o.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate() = %v, want an error naming %s", err, tt.wantErr)
			}
		})
	}
}

func TestArgv(t *testing.T) {
	t.Parallel()
	l := lab.NewOptions()
	l.CacheDir = "/cache"
	o := NewOptions(l)
	certs := webhookCerts{CA: "/c/ca.pem", Cert: "/c/cert.pem", Key: "/c/key.pem"}
	tests := []struct {
		name string
		bin  string
		want []string
	}{
		{MetricsServer, "/cache/metrics-server/v0.9.0/bin/metrics-server", []string{
			"--bind-address=10.213.0.1", "--secure-port=4443", "--metric-resolution=15s",
			"--kubelet-preferred-address-types=InternalIP", "--kubelet-insecure-tls",
		}},
		{AdmissionController, "/cache/vpa/v1.8.1/bin/admission-controller", []string{
			"--register-by-url=true", "--webhook-address=https://10.213.0.1", "--webhook-port=8000", "--port=8000",
			"--client-ca-file=/c/ca.pem", "--tls-cert-file=/c/cert.pem", "--tls-private-key=/c/key.pem",
		}},
		{Recommender, "/cache/vpa/v1.8.1/bin/recommender", []string{"--address=127.0.0.1:8942"}},
		{Updater, "/cache/vpa/v1.8.1/bin/updater", []string{"--address=127.0.0.1:8943"}},
	}
	for _, tt := range tests {
		argv := o.argv(tt.name, certs)
		if argv[0] != tt.bin {
			t.Errorf("%s: binary %s, want %s", tt.name, argv[0], tt.bin)
		}
		for _, w := range append(tt.want, "--kubeconfig="+l.Kubeconfig()) {
			if !slices.Contains(argv, w) {
				t.Errorf("%s: argv %v lacks %s", tt.name, argv, w)
			}
		}
	}
}

func TestReadManifests(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "crds.yaml")
	data := "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a.example.com\n---\n\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: b.example.com\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := readManifests(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	if !slices.Equal(names, []string{"a.example.com", "b.example.com"}) {
		t.Errorf("names %v, want a.example.com and b.example.com (empty documents skipped)", names)
	}
}
