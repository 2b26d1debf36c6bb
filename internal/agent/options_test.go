package agent

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--node is required"},
		{[]string{"--node", "n", "--interval", "100ms"}, "--interval 100ms is out of range [250ms, 10s]"},
		{[]string{"--node", "n", "--interval", "11s"}, "--interval 11s is out of range"},
		{[]string{"--node", "n", "--history", "0"}, "--history 0 is out of range"},
		{[]string{"--node", "n", "--listen", "nohost"}, `--listen "nohost"`},
		{[]string{"--node", "n", "--cgroup-root", ""}, "--cgroup-root is empty"},
		{[]string{"--node", "n", "--cpu-half-life", "500ms"}, "--cpu-half-life 500ms is out of range [1s, 24h]"},
		{[]string{"--node", "n", "--regrow-window", "30s"}, "--regrow-window 30s is out of range [1m, 168h]"},
		{[]string{"--node", "n", "--snapshot-interval", "500ms"}, "--snapshot-interval 500ms is out of range [1s, 1h] (or 0)"},
		{[]string{"--node", "n", "--autoscale=false", "--dry-run"}, "--dry-run needs --autoscale"},
		{[]string{"--node", "n", "--tls-cert-file", "c.pem"}, "--tls-cert-file and --tls-private-key-file go together"},
		{[]string{"--node", "n", "--kube-api-content-type", "application/yaml"}, `--kube-api-content-type "application/yaml": want application/vnd.kubernetes.protobuf or application/json`},
		{[]string{"--node", "n", "--kube-api-content-type", "application/json"}, ""},
		{[]string{"--node", "n", "--tls"}, ""},
		{[]string{"--node", "n"}, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("snug-agent", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

func TestRunFailsOnMissingCgroupRoot(t *testing.T) {
	o := NewOptions()
	o.Node, o.CgroupRoot = "n", "/nonexistent"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	err := Run(context.Background(), o, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "reading cgroups at /nonexistent") {
		t.Errorf("Run: %v, want an error about reading cgroups at /nonexistent", err)
	}
}

// TestAuthIsOnByDefault: an agent started without flags guards /metrics
// and the API; --auth=false is how a host-process run turns it off.
func TestAuthIsOnByDefault(t *testing.T) {
	o := NewOptions()
	if !o.Serving.Auth || o.Serving.ServesTLS() {
		t.Fatalf("defaults: %+v, want auth on, plain HTTP", o.Serving)
	}
	fs := pflag.NewFlagSet("snug-agent", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--auth=false"}); err != nil || o.Serving.Auth {
		t.Errorf("--auth=false: %v, auth %v", err, o.Serving.Auth)
	}
}
