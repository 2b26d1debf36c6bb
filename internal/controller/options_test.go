package controller

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestControllerOptions(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"defaults", nil, ""},
		{"no leader election, any namespace", []string{"--leader-elect=false", "--leader-election-namespace=BAD"}, ""},
		{"metrics off", []string{"--metrics-addr="}, ""},
		{"metrics without auth", []string{"--auth=false"}, ""},
		{"metrics over HTTPS", []string{"--tls"}, ""},
		{"a key without its certificate", []string{"--tls-private-key-file=k.pem"}, "go together"},
		{"bad metrics addr", []string{"--metrics-addr=9465"}, "--metrics-addr"},
		{"same addresses", []string{"--metrics-addr=127.0.0.1:1", "--health-addr=127.0.0.1:1"}, "must differ"},
		{"bad lease namespace", []string{"--leader-election-namespace=Kube_System"}, "--leader-election-namespace"},
		{"no workers", []string{"--workers=0"}, "--workers"},
		{"checkpoints every 10s", []string{"--checkpoint-interval=10s"}, ""},
		{"checkpoint interval too short", []string{"--checkpoint-interval=100ms"}, "--checkpoint-interval 100ms: must be 1s to 1h"},
		{"checkpoint interval too long", []string{"--checkpoint-interval=2h"}, "--checkpoint-interval"},
		{"missing kubeconfig", []string{"--kubeconfig=/nonexistent/kubeconfig"}, "--kubeconfig"},
		{"api qps and burst", []string{"--kube-api-qps=20", "--kube-api-burst=40"}, ""},
		{"no api qps", []string{"--kube-api-qps=0"}, "--kube-api-qps 0: must be above 0"},
		{"burst below qps", []string{"--kube-api-qps=20", "--kube-api-burst=10"}, "--kube-api-burst 10: must be at least 1 and --kube-api-qps"},
		{"json", []string{"--kube-api-content-type=application/json"}, ""},
		{"yaml", []string{"--kube-api-content-type=application/yaml"}, `--kube-api-content-type "application/yaml": want application/vnd.kubernetes.protobuf or application/json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one about %s", err, tt.wantErr)
			}
		})
	}
	if o := NewOptions(); !o.LeaderElect || o.MetricsAddr != "127.0.0.1:9465" || !o.Serving.Auth || o.Serving.ServesTLS() || o.KubeAPIQPS != 50 || o.KubeAPIBurst != 100 {
		t.Errorf("defaults changed: %+v", o)
	}
}
