package deploy

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/snug-dev/snug/config/rbac"
	snugagent "github.com/snug-dev/snug/internal/agent"
	snugcontroller "github.com/snug-dev/snug/internal/controller"
	"github.com/snug-dev/snug/internal/daemon"
)

// checkArgs parses the container's arguments with the flags of the binary
// its command names (the flag set its main builds: daemon.Flags, the
// component's Options and the logging flags): an unknown flag fails, so the manifest cannot drift from the
// binary.
func checkArgs(t *testing.T, c corev1.Container, binary string, addFlags func(*pflag.FlagSet)) {
	t.Helper()
	if len(c.Command) != 1 || c.Command[0] != "/"+binary {
		t.Errorf("container %s: command %q, want [/%s]", c.Name, c.Command, binary)
	}
	fs := pflag.NewFlagSet(binary, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addFlags(fs)
	if err := fs.Parse(c.Args); err != nil {
		t.Errorf("%s %s: %v", binary, strings.Join(c.Args, " "), err)
	}
	if fs.NArg() > 0 {
		t.Errorf("%s %s: arguments %q are not flags", binary, strings.Join(c.Args, " "), fs.Args())
	}
}

func flag(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func TestAgent(t *testing.T) {
	ds, err := Agent()
	if err != nil {
		t.Fatal(err)
	}
	spec := ds.Spec.Template.Spec
	if ds.Namespace != rbac.Namespace || spec.ServiceAccountName != rbac.AgentServiceAccount {
		t.Errorf("DaemonSet %s/%s runs as %q, want namespace %s, ServiceAccount %s", ds.Namespace, ds.Name, spec.ServiceAccountName, rbac.Namespace, rbac.AgentServiceAccount)
	}
	if spec.HostPID || spec.HostNetwork {
		t.Error("the agent needs neither hostPID nor hostNetwork")
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	checkArgs(t, c, "snug-agent", func(fs *pflag.FlagSet) { fs.AddFlagSet(daemon.Flags("snug-agent", snugagent.NewOptions())) })

	// --node from the downward API.
	node, _ := flag(c.Args, "node")
	if node != "$(NODE_NAME)" {
		t.Errorf("--node=%q, want $(NODE_NAME)", node)
	}
	var fromSpec bool
	for _, e := range c.Env {
		fromSpec = fromSpec || (e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName")
	}
	if !fromSpec {
		t.Error("no env NODE_NAME from spec.nodeName")
	}

	// --cgroup-root is the read-only mount of the host's /sys/fs/cgroup.
	root, _ := flag(c.Args, "cgroup-root")
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.MountPath != root {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.HostPath != nil && v.HostPath.Path == "/sys/fs/cgroup" && m.ReadOnly {
				mounted = true
			}
		}
	}
	if root == "" || !mounted {
		t.Errorf("--cgroup-root=%q is not a read-only mount of the host's /sys/fs/cgroup", root)
	}

	// In the cluster: auth on (the default), HTTPS, and the probes, on
	// the same port, speak HTTPS too.
	checkSecure(t, c.Args)
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("%s probe %+v, want an HTTPS GET (the agent serves its probes on its one HTTPS port)", name, p)
		}
	}
}

// checkSecure: --auth is not turned off and --tls is on.
func checkSecure(t *testing.T, args []string) {
	t.Helper()
	if v, ok := flag(args, "auth"); ok && v != "true" {
		t.Errorf("--auth=%s: the endpoints must check tokens in the cluster", v)
	}
	if !slices.Contains(args, "--tls") {
		t.Errorf("args %q lack --tls: bearer tokens would cross the network in clear", args)
	}
}

func TestController(t *testing.T) {
	d, err := Controller()
	if err != nil {
		t.Fatal(err)
	}
	spec := d.Spec.Template.Spec
	if d.Namespace != rbac.Namespace || spec.ServiceAccountName != rbac.ControllerServiceAccount {
		t.Errorf("Deployment %s/%s runs as %q, want namespace %s, ServiceAccount %s", d.Namespace, d.Name, spec.ServiceAccountName, rbac.Namespace, rbac.ControllerServiceAccount)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2 (one leads, one stands by)", d.Spec.Replicas)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	checkArgs(t, c, "snug-controller", func(fs *pflag.FlagSet) {
		fs.AddFlagSet(daemon.Flags("snug-controller", snugcontroller.NewOptions()))
	})
	// The Lease lives where config/rbac grants it.
	if ns, _ := flag(c.Args, "leader-election-namespace"); ns != rbac.Namespace {
		t.Errorf("--leader-election-namespace=%q, want %s", ns, rbac.Namespace)
	}
	// The CRD comes from config/crd; installing it needs the optional role.
	if v, ok := flag(c.Args, "install-crds"); ok || slices.Contains(c.Args, "--install-crds") {
		t.Errorf("--install-crds%s is on, but the default RBAC cannot install CRDs", v)
	}
	checkSecure(t, c.Args)
}

// TestKustomization checks that config/kustomization.yaml installs every
// manifest but the optional install-crds role, and nothing else.
func TestKustomization(t *testing.T) {
	data, err := os.ReadFile("../kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion, Kind string
		Resources        []string
	}
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, dir := range []string{"crd", "rbac", "deploy"} {
		files, err := filepath.Glob(filepath.Join("..", dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if rel, _ := filepath.Rel("..", f); filepath.Base(rel) != rbac.InstallCRDsFile {
				want = append(want, rel)
			}
		}
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %q, want %q", got, want)
	}
	for _, f := range rbac.Files {
		if !slices.Contains(k.Resources, "rbac/"+f) {
			t.Errorf("kustomization lacks rbac/%s", f)
		}
	}
}

// TestImages: the workloads name the released images of the chart's
// appVersion, which a user replaces with kustomize edit set image.
func TestImages(t *testing.T) {
	data, err := os.ReadFile("../../charts/snug/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var chart struct{ AppVersion string }
	if err := yaml.Unmarshal(data, &chart); err != nil || chart.AppVersion == "" {
		t.Fatalf("charts/snug/Chart.yaml: appVersion %q: %v", chart.AppVersion, err)
	}
	ds, err := Agent()
	if err != nil {
		t.Fatal(err)
	}
	d, err := Controller()
	if err != nil {
		t.Fatal(err)
	}
	for got, want := range map[string]string{
		ds.Spec.Template.Spec.Containers[0].Image: "ghcr.io/snug-dev/snug-agent:" + chart.AppVersion,
		d.Spec.Template.Spec.Containers[0].Image:  "ghcr.io/snug-dev/snug-controller:" + chart.AppVersion,
	} {
		if got != want {
			t.Errorf("image %q, want %q", got, want)
		}
	}
}
