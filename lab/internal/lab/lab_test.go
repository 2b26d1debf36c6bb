package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snug-dev/snug/lab/internal/lab/pki"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{name: "defaults", mutate: func(*Options) {}},
		{name: "relative dir", mutate: func(o *Options) { o.Dir = "lab" }, wantErr: "--dir must be an absolute path"},
		{name: "dir too long for a socket", mutate: func(o *Options) { o.Dir = "/" + strings.Repeat("x", 90) }, wantErr: "too long for a unix socket"},
		{name: "bad version", mutate: func(o *Options) { o.KubernetesVersion = "v1.35" }, wantErr: "--kubernetes-version must look like 1.35.4"},
		{name: "unsupported version", mutate: func(o *Options) { o.KubernetesVersion = "1.34.4" }, wantErr: "--kubernetes-version 1.34.4: the lab supports 1.35.4, 1.36.3, 1.37.2"},
		{name: "1.36.3", mutate: func(o *Options) { o.KubernetesVersion = "1.36.3" }},
		{name: "1.37.2", mutate: func(o *Options) { o.KubernetesVersion = "1.37.2" }},
		{name: "bad netns", mutate: func(o *Options) { o.NetNS = "Bad Name" }, wantErr: "network namespace name"},
		{name: "bad ip", mutate: func(o *Options) { o.NodeIP = "10.0.0" }, wantErr: `bad address "10.0.0"`},
		{name: "bad cidr", mutate: func(o *Options) { o.PodCIDR = "10.214.0.0" }, wantErr: `bad CIDR "10.214.0.0"`},
		{name: "no timeout", mutate: func(o *Options) { o.ReadyTimeout = 0 }, wantErr: "--ready-timeout must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			tt.mutate(o)
			err := o.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestStagingModules(t *testing.T) {
	gomod := filepath.Join(t.TempDir(), "go.mod")
	content := `module k8s.io/kubernetes

require (
	k8s.io/api v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	github.com/other/mod => github.com/fork/mod v1.0.0
)
`
	if err := os.WriteFile(gomod, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := stagingModules(gomod)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"k8s.io/api", "k8s.io/client-go"}, got); diff != "" {
		t.Errorf("stagingModules (-want +got):\n%s", diff)
	}
	if err := os.WriteFile(gomod, []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := stagingModules(gomod); err == nil || !strings.Contains(err.Error(), "no staging replacements") {
		t.Errorf("stagingModules without replacements = %v, want an error", err)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/var/lib/snug-lab/kubelet`: "/var/lib/snug-lab/kubelet",
		`/var/lib/with\040space/x`:  "/var/lib/with space/x",
		`/tab\011here`:              "/tab\there",
		`/trailing\`:                `/trailing\`,
		`/not\99octal`:              `/not\99octal`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConfigsNameTheLabsPaths(t *testing.T) {
	o := NewOptions()
	o.Dir = "/tmp/lab-x"
	cfg := containerdConfig(hostRuntime(o, &pki.Set{}))
	for _, want := range []string{
		`root = "/tmp/lab-x/containerd/root"`,
		`address = "/tmp/lab-x/run/containerd/containerd.sock"`,
		`restrict_oom_score_adj = true`,
		`SystemdCgroup = false`,
		`sandbox_image = "registry.k8s.io/pause:3.10"`,
		`conf_dir = "/tmp/lab-x/cni/net.d"`,
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("containerd config lacks %q:\n%s", want, cfg)
		}
	}
	if cni := cniConfig(hostRuntime(o, &pki.Set{})); !strings.Contains(cni, `"subnet": "10.214.0.0/24"`) {
		t.Errorf("CNI config lacks the pod subnet:\n%s", cni)
	}
}

func TestProcRoundTrip(t *testing.T) {
	o := NewOptions()
	o.Dir = t.TempDir()
	p, err := startProc(o, "sleeper", []string{"sleep", "30"})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := readProc(o, "sleeper")
	if !ok || got.PID != p.PID || got.StartTick != p.StartTick || got.StartTick == 0 {
		t.Fatalf("readProc = %+v, %v; want %+v", got, ok, p)
	}
	if !got.alive() {
		t.Fatal("started process is not alive")
	}
	// A recycled PID (same PID, other start time) is not ours.
	other := &proc{Name: "x", PID: p.PID, StartTick: p.StartTick + 1}
	if other.alive() {
		t.Error("a process with another start time counts as alive")
	}
	if err := got.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got.alive() {
		t.Error("process alive after stop")
	}
}

func TestAddOnProcess(t *testing.T) {
	o := NewOptions()
	o.Dir = t.TempDir()
	if _, err := StartProcess(o, "kubelet", []string{"sleep", "30"}); err == nil {
		t.Error("StartProcess took a component's name")
	}
	pid, err := StartProcess(o, "metrics-server", []string{"sleep", "30"})
	if err != nil {
		t.Fatal(err)
	}
	if got, running := ProcessRunning(o, "metrics-server"); got != pid || !running {
		t.Fatalf("ProcessRunning = %d, %v; want %d, true", got, running, pid)
	}
	if got := addOns(o); len(got) != 1 || got[0] != "metrics-server" {
		t.Errorf("addOns = %v, want [metrics-server]", got)
	}
	if err := StopProcess(o, "metrics-server", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, running := ProcessRunning(o, "metrics-server"); running {
		t.Error("process runs after StopProcess")
	}
	if got := addOns(o); len(got) != 0 {
		t.Errorf("addOns after stop = %v, want none", got)
	}
	if err := StopProcess(o, "metrics-server", time.Second); err != nil {
		t.Errorf("stopping a stopped process: %v", err)
	}
}

func TestLastSyncSeconds(t *testing.T) {
	for in, want := range map[string]float64{
		"# HELP x\nkubeproxy_sync_proxy_rules_last_timestamp_seconds 1.7806e+09\n": 1.7806e+09,
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv6\"} 0\n" +
			"kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4\"} 1.78e+09\n": 1.78e+09,
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv6\"} 7\n": 0,
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds 0\n":                     0,
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds_total 5\n":               0,
		"": 0,
	} {
		if got := lastSyncSeconds(in); got != want {
			t.Errorf("lastSyncSeconds(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestMissingBinaries(t *testing.T) {
	bin := t.TempDir()
	touch := func(name string) {
		if err := os.WriteFile(filepath.Join(bin, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Without the stamp everything is rebuilt, whatever is there.
	touch("kubelet")
	if d := cmp.Diff(kubeBinaries, missingBinaries(bin)); d != "" {
		t.Errorf("no stamp (-want +got):\n%s", d)
	}
	// A complete cache from before kube-proxy: only kube-proxy.
	for _, n := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"} {
		touch(n)
	}
	touch(BuiltStamp)
	if d := cmp.Diff([]string{"kube-proxy"}, missingBinaries(bin)); d != "" {
		t.Errorf("old cache (-want +got):\n%s", d)
	}
	touch("kube-proxy")
	if got := missingBinaries(bin); len(got) != 0 {
		t.Errorf("complete cache: missing %v", got)
	}
}
