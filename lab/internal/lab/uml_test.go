package lab

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/snug-dev/snug/lab/internal/lab/pki"
)

func TestMirrorFromDeb822(t *testing.T) {
	sources := `Types: deb
# a comment
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
`
	if got := mirrorFromDeb822(sources, "bookworm"); got != "http://mirror.example/debian" {
		t.Errorf("mirror = %q", got)
	}
	if got := mirrorFromDeb822(sources, "trixie"); got != "" {
		t.Errorf("mirror for trixie = %q, want none", got)
	}
	disabled := strings.Replace(sources, "Types: deb\n#", "Types: deb\nEnabled: no\n#", 1)
	if got := mirrorFromDeb822(disabled, "bookworm"); got != "" {
		t.Errorf("mirror of a disabled stanza = %q, want none", got)
	}
	src := strings.Replace(sources, "Types: deb\n#", "Types: deb-src\n#", 1)
	if got := mirrorFromDeb822(src, "bookworm"); got != "" {
		t.Errorf("mirror of a deb-src stanza = %q, want none", got)
	}
}

func TestMirrorFromList(t *testing.T) {
	list := `# deb http://old.example/debian bookworm main
deb-src http://src.example/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main contrib
`
	if got := mirrorFromList(list, "bookworm"); got != "http://mirror.example/debian" {
		t.Errorf("mirror = %q", got)
	}
	if got := mirrorFromList("deb http://m.example/debian bookworm contrib\n", "bookworm"); got != "" {
		t.Errorf("mirror without main = %q, want none", got)
	}
}

func TestUnmetOptions(t *testing.T) {
	fragment := "# comment\nCONFIG_PSI=y\nCONFIG_MODULES=n\nCONFIG_CPUSETS=y\nCONFIG_HOSTFS=y\n"
	config := "CONFIG_PSI=y\n# CONFIG_MODULES is not set\nCONFIG_HOSTFS=m\n"
	want := []string{"CONFIG_CPUSETS=y", "CONFIG_HOSTFS=y"}
	if diff := cmp.Diff(want, unmetOptions(fragment, config)); diff != "" {
		t.Errorf("unmetOptions (-want +got):\n%s", diff)
	}
	if bad := unmetOptions(fragment, "CONFIG_MODULES=y\nCONFIG_PSI=y\nCONFIG_CPUSETS=y\nCONFIG_HOSTFS=y\n"); !cmp.Equal(bad, []string{"CONFIG_MODULES=n"}) {
		t.Errorf("a =n option that is set: %v", bad)
	}
}

// The kernel fragment asks for PSI and leaves cpusets out, as the docs say.
func TestKernelFragment(t *testing.T) {
	if !strings.Contains(kernelFragment, "\nCONFIG_PSI=y\n") {
		t.Error("the UML kernel fragment does not turn PSI on")
	}
	if strings.Contains(kernelFragment, "\nCONFIG_CPUSETS=y") {
		t.Error("CONFIG_CPUSETS needs SMP, which UML 6.1 lacks; asking for it fails the build's check")
	}
}

// The two nodes' kubelet configs differ in the cgroup driver, addresses
// and the cgroup-v2 node's taint, and both parse as YAML.
func TestKubeletConfigPerNode(t *testing.T) {
	o := NewOptions()
	o.Dir = "/var/lib/snug-lab"
	type cfg struct {
		CgroupDriver       string `json:"cgroupDriver"`
		Address            string `json:"address"`
		RegisterWithTaints []struct {
			Key, Value, Effect string
		} `json:"registerWithTaints"`
		ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint"`
	}
	parse := func(s string) cfg {
		var c cfg
		if err := yaml.Unmarshal([]byte(s), &c); err != nil {
			t.Fatalf("kubelet config does not parse: %v\n%s", err, s)
		}
		return c
	}
	host := parse(kubeletConfig(hostRuntime(o, &pki.Set{})))
	if host.CgroupDriver != "cgroupfs" || host.Address != o.NodeIP || len(host.RegisterWithTaints) != 0 {
		t.Errorf("first node's kubelet config: %+v", host)
	}
	v2 := parse(kubeletConfig(v2Runtime(o)))
	if v2.CgroupDriver != "systemd" || v2.Address != o.V2.IP || v2.ContainerRuntimeEndpoint != "unix:///run/containerd/containerd.sock" {
		t.Errorf("cgroup-v2 node's kubelet config: %+v", v2)
	}
	if len(v2.RegisterWithTaints) != 1 || v2.RegisterWithTaints[0].Key != v2Taint.Key || v2.RegisterWithTaints[0].Effect != "NoSchedule" {
		t.Errorf("cgroup-v2 node's taints: %+v", v2.RegisterWithTaints)
	}
	if cd := containerdConfig(v2Runtime(o)); !strings.Contains(cd, "SystemdCgroup = true") || !strings.Contains(cd, "restrict_oom_score_adj = false") {
		t.Errorf("cgroup-v2 node's containerd config:\n%s", cd)
	}
	if cd := containerdConfig(hostRuntime(o, &pki.Set{})); !strings.Contains(cd, "SystemdCgroup = false") || !strings.Contains(cd, "restrict_oom_score_adj = true") {
		t.Errorf("first node's containerd config:\n%s", cd)
	}
}

func TestV2NodeValidate(t *testing.T) {
	for name, tt := range map[string]struct {
		mutate  func(*V2Node)
		wantErr string
	}{
		"defaults":        {func(*V2Node) {}, ""},
		"tap not in a 30": {func(v *V2Node) { v.IP = "10.216.1.2" }, "not in one /30"},
		"small memory":    {func(v *V2Node) { v.MemoryMiB = 512 }, "--v2-node-memory must be at least 1024"},
		"bad pod cidr":    {func(v *V2Node) { v.PodCIDR = "10.218.0.0" }, "bad pod CIDR"},
	} {
		t.Run(name, func(t *testing.T) {
			v := defaultV2Node()
			tt.mutate(&v)
			err := v.validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
