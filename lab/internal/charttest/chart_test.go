package charttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	chart "github.com/snug-dev/snug/charts/snug"
	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	snugagent "github.com/snug-dev/snug/internal/agent"
	snugcontroller "github.com/snug-dev/snug/internal/controller"
	"github.com/snug-dev/snug/internal/daemon"
	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/lab/helm"
)

// helmPath is the cached helm; the tests never build it (make helm does).
func helmPath(t *testing.T) string {
	t.Helper()
	p, err := helm.Built(lab.NewOptions().CacheDir, helm.DefaultVersion)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), helmPath(t), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func appVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ AppVersion string }
	if err := yaml.Unmarshal(data, &c); err != nil || c.AppVersion == "" {
		t.Fatalf("Chart.yaml: appVersion %q: %v", c.AppVersion, err)
	}
	return c.AppVersion
}

// rendered are the objects of one `helm template`, decoded.
type rendered struct {
	objs []runtime.Object
	// monitors are the Prometheus Operator objects, which have no Go
	// types here.
	monitors []*unstructured.Unstructured
	// certManager are the kinds of the cert-manager objects.
	certManager []string
}

var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	// Strict: an unknown or duplicate field is an error.
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// render runs helm template with flags and decodes every document.
func render(t *testing.T, flags ...string) *rendered {
	t.Helper()
	out, err := helm.Template(t.Context(), helmPath(t), ".", flags...)
	if err != nil {
		t.Fatal(err)
	}
	r := &rendered{}
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		if head.Kind == "" {
			continue
		}
		if strings.HasPrefix(head.APIVersion, "cert-manager.io/") {
			r.certManager = append(r.certManager, head.Kind)
			continue
		}
		if strings.HasPrefix(head.APIVersion, "monitoring.coreos.com/") {
			u := &unstructured.Unstructured{}
			if err := yaml.UnmarshalStrict(doc, &u.Object); err != nil {
				t.Fatal(err)
			}
			r.monitors = append(r.monitors, u)
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("decoding %s %s: %v\n%s", head.APIVersion, head.Kind, err, doc)
		}
		r.objs = append(r.objs, obj)
	}
	return r
}

// all returns the rendered objects of type T.
func all[T runtime.Object](r *rendered) []T {
	var out []T
	for _, o := range r.objs {
		if v, ok := o.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func one[T runtime.Object](t *testing.T, r *rendered) T {
	t.Helper()
	got := all[T](r)
	if len(got) != 1 {
		var zero T
		t.Fatalf("%d objects of %T, want 1", len(got), zero)
	}
	return got[0]
}

// kinds counts the rendered kinds.
func kinds(r *rendered) map[string]int {
	out := map[string]int{}
	for _, o := range r.objs {
		out[o.GetObjectKind().GroupVersionKind().Kind]++
	}
	for _, u := range r.monitors {
		out[u.GetKind()]++
	}
	return out
}

func TestLint(t *testing.T) {
	for _, args := range [][]string{
		{"lint", "."},
		{"lint", "--strict", "."},
		{"lint", "--strict", "--values", "testdata/all-on.yaml", "."},
	} {
		out, err := runHelm(t, args...)
		if err != nil || !strings.Contains(out, "0 chart(s) failed") {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestConfigIsTheChart: config/rbac and config/deploy are the chart's
// default rendering (make generate), and the chart's CRD is config/crd's.
func TestConfigIsTheChart(t *testing.T) {
	files, err := helm.Config(t.Context(), helmPath(t), ".")
	if err != nil {
		t.Fatal(err)
	}
	for f, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", "config", f))
		if err != nil {
			t.Errorf("config/%s: %v (run make generate)", f, err)
			continue
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("config/%s is not the chart's rendering; run make generate (-chart +config):\n%s", f, diff)
		}
	}
	crds, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("config/crd: %v", err)
	}
	copies, _ := filepath.Glob(filepath.Join("files", "crds", "*.yaml"))
	if len(copies) != len(crds) {
		t.Errorf("files/crds has %d CRDs, config/crd %d; run make generate", len(copies), len(crds))
	}
	for _, c := range crds {
		want, _ := os.ReadFile(c)
		got, err := os.ReadFile(filepath.Join("files", "crds", filepath.Base(c)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("files/crds/%s differs from config/crd (%v); run make generate", filepath.Base(c), err)
		}
	}
}

// pendingFlags are flags the chart passes that the binaries of this tree
// may not have yet: the HTTPS options of internal/httpauth (tls.enabled).
// A binary that has them parses them itself.
var pendingFlags = []string{"tls", "tls-cert-file", "tls-private-key-file"}

// parseArgs parses a container's arguments with the flags of its binary,
// as its main does: an unknown flag fails.
// agentFlags and controllerFlags add what each binary parses (daemon.Main:
// its options, the logging flags, --version).
func agentFlags(fs *pflag.FlagSet) { fs.AddFlagSet(daemon.Flags("snug-agent", snugagent.NewOptions())) }
func controllerFlags(fs *pflag.FlagSet) {
	fs.AddFlagSet(daemon.Flags("snug-controller", snugcontroller.NewOptions()))
}

func parseArgs(t *testing.T, c corev1.Container, addFlags func(*pflag.FlagSet)) {
	t.Helper()
	fs := pflag.NewFlagSet(c.Name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addFlags(fs)
	for _, name := range pendingFlags {
		if fs.Lookup(name) == nil {
			t.Logf("%s: --%s is not a flag of this tree's binary yet (internal/httpauth)", c.Name, name)
			if name == "tls" {
				fs.Bool(name, false, "")
			} else {
				fs.String(name, "", "")
			}
		}
	}
	if err := fs.Parse(c.Args); err != nil || fs.NArg() > 0 {
		t.Errorf("container %s: arguments %q: %v, left %q", c.Name, c.Args, err, fs.Args())
	}
}

func hasArg(c corev1.Container, arg string) bool { return slices.Contains(c.Args, arg) }

// checkHardened checks what both components' pods share: non-root 65532,
// seccomp RuntimeDefault, no capability, read-only root, no escalation, no
// host namespaces, probes on the container's own named ports.
func checkHardened(t *testing.T, what string, spec corev1.PodSpec, probePort string) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext %+v, want runAsNonRoot, runAsUser 65532, seccomp RuntimeDefault", what, psc)
	}
	if spec.HostPID || spec.HostNetwork || spec.HostIPC {
		t.Errorf("%s: uses a host namespace", what)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", what, len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 || (sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("%s: container securityContext %+v, want readOnlyRootFilesystem, no escalation, drop [ALL], add nothing", what, sc)
	}
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[p.Name] = true
	}
	for name, probe := range map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != name || probe.HTTPGet.Port.StrVal != probePort || !ports[probePort] {
			t.Errorf("%s: probe %s is %+v, want an HTTP GET of %s on port %s", what, name, probe, name, probePort)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: resources %v, want CPU and memory requests and a memory limit", what, c.Resources)
	}
}

// selects checks that a selector picks the pod template's labels.
func selects(t *testing.T, what string, sel map[string]string, pod map[string]string) {
	t.Helper()
	if len(sel) == 0 || !labels.SelectorFromSet(sel).Matches(labels.Set(pod)) {
		t.Errorf("%s: selector %v does not select pods labelled %v", what, sel, pod)
	}
}

func TestDefaults(t *testing.T) {
	r := render(t)
	want := map[string]int{
		"CustomResourceDefinition": 1, "ServiceAccount": 2, "ClusterRole": 3, "ClusterRoleBinding": 2,
		"Role": 2, "RoleBinding": 2, "DaemonSet": 1, "Deployment": 1, "PodDisruptionBudget": 1, "Service": 3,
		"MutatingWebhookConfiguration": 1,
	}
	if diff := cmp.Diff(want, kinds(r)); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	version := appVersion(t)

	ds := one[*appsv1.DaemonSet](t, r)
	spec := ds.Spec.Template.Spec
	checkHardened(t, "agent", spec, "https")
	c := spec.Containers[0]
	parseArgs(t, c, agentFlags)
	if c.Image != "ghcr.io/snug-dev/snug-agent:"+version {
		t.Errorf("agent image %q", c.Image)
	}
	if !slices.Equal(spec.Tolerations, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}) {
		t.Errorf("agent tolerations %v, want every taint tolerated", spec.Tolerations)
	}
	if spec.PriorityClassName != "system-node-critical" {
		t.Errorf("agent priorityClassName %q", spec.PriorityClassName)
	}
	if !hasArg(c, "--node=$(NODE_NAME)") || len(c.Env) == 0 || c.Env[0].Name != "NODE_NAME" || c.Env[0].ValueFrom == nil ||
		c.Env[0].ValueFrom.FieldRef == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("agent: --node is not the downward API's spec.nodeName: args %q env %v", c.Args, c.Env)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/host/sys/fs/cgroup" || !c.VolumeMounts[0].ReadOnly ||
		len(spec.Volumes) != 1 || spec.Volumes[0].HostPath == nil || spec.Volumes[0].HostPath.Path != "/sys/fs/cgroup" ||
		!hasArg(c, "--cgroup-root=/host/sys/fs/cgroup") {
		t.Errorf("agent: want only the host's /sys/fs/cgroup, read-only at /host/sys/fs/cgroup: mounts %v volumes %v", c.VolumeMounts, spec.Volumes)
	}
	if u := ds.Spec.UpdateStrategy; u.Type != appsv1.RollingUpdateDaemonSetStrategyType || u.RollingUpdate == nil || u.RollingUpdate.MaxUnavailable.IntValue() != 1 {
		t.Errorf("agent updateStrategy %+v, want RollingUpdate, maxUnavailable 1", u)
	}
	selects(t, "agent DaemonSet", ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels)

	d := one[*appsv1.Deployment](t, r)
	spec = d.Spec.Template.Spec
	checkHardened(t, "controller", spec, "health")
	c = spec.Containers[0]
	parseArgs(t, c, controllerFlags)
	if c.Image != "ghcr.io/snug-dev/snug-controller:"+version {
		t.Errorf("controller image %q", c.Image)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 || !hasArg(c, "--leader-elect=true") || !hasArg(c, "--leader-election-namespace="+helm.Namespace) {
		t.Errorf("controller: replicas %v, args %q: want 2 replicas electing a leader in %s", d.Spec.Replicas, c.Args, helm.Namespace)
	}
	if hasArg(c, "--install-crds") {
		t.Error("controller: --install-crds by default, but the chart installs the CRD")
	}
	if spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("controller priorityClassName %q", spec.PriorityClassName)
	}
	aa := spec.Affinity
	if aa == nil || aa.PodAntiAffinity == nil || len(aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("controller affinity %+v, want a preferred pod anti-affinity", aa)
	}
	term := aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	if term.TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("controller anti-affinity by %q, want kubernetes.io/hostname", term.TopologyKey)
	}
	selects(t, "controller anti-affinity", term.LabelSelector.MatchLabels, d.Spec.Template.Labels)
	selects(t, "controller Deployment", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)

	pdb := one[*policyv1.PodDisruptionBudget](t, r)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("PDB %+v, want minAvailable 1", pdb.Spec)
	}
	selects(t, "PDB", pdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels)

	for _, s := range all[*corev1.Service](r) {
		pod := ds.Spec.Template
		if strings.HasSuffix(s.Name, "-controller") || strings.HasSuffix(s.Name, "-admission") {
			pod = d.Spec.Template
		}
		selects(t, "Service "+s.Name, s.Spec.Selector, pod.Labels)
		ports := map[string]bool{}
		for _, p := range pod.Spec.Containers[0].Ports {
			ports[p.Name] = true
		}
		for _, p := range s.Spec.Ports {
			if !ports[p.TargetPort.StrVal] {
				t.Errorf("Service %s: targetPort %v is not a port of its pods", s.Name, p.TargetPort)
			}
		}
	}

	crd := one[*apiextensionsv1.CustomResourceDefinition](t, r)
	if crd.Name != "snugpolicies.autoscaling.snug.dev" || crd.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("CRD %s, annotations %v: want snugpolicies with helm.sh/resource-policy keep", crd.Name, crd.Annotations)
	}

	// Each ServiceAccount is bound to its own role, which lets it review
	// the tokens of requests to its endpoints.
	sas := map[string]bool{}
	for _, sa := range all[*corev1.ServiceAccount](r) {
		sas[sa.Name] = true
	}
	if !sas[ds.Spec.Template.Spec.ServiceAccountName] || !sas[d.Spec.Template.Spec.ServiceAccountName] {
		t.Errorf("ServiceAccounts %v, want the workloads' %s and %s", sas, ds.Spec.Template.Spec.ServiceAccountName, d.Spec.Template.Spec.ServiceAccountName)
	}
	bound := map[string][]string{}
	for _, b := range all[*rbacv1.ClusterRoleBinding](r) {
		for _, s := range b.Subjects {
			bound[s.Name] = append(bound[s.Name], b.RoleRef.Name)
		}
	}
	roles := map[string]*rbacv1.ClusterRole{}
	for _, cr := range all[*rbacv1.ClusterRole](r) {
		roles[cr.Name] = cr
	}
	for sa := range sas {
		if !slices.Equal(bound[sa], []string{sa}) || roles[sa] == nil {
			t.Errorf("ServiceAccount %s bound to %v, want its own ClusterRole only", sa, bound[sa])
			continue
		}
		reviews := 0
		for _, rule := range roles[sa].Rules {
			if slices.Contains(rule.Resources, "tokenreviews") || slices.Contains(rule.Resources, "subjectaccessreviews") {
				reviews++
			}
		}
		if reviews != 2 {
			t.Errorf("ClusterRole %s cannot create both tokenreviews and subjectaccessreviews (--auth)", sa)
		}
	}
	reader := roles["snug-metrics-reader"]
	if reader == nil || len(reader.Rules) != 1 || !slices.Equal(reader.Rules[0].NonResourceURLs, []string{"/metrics", "/snug/v1/*"}) || !slices.Equal(reader.Rules[0].Verbs, []string{"get"}) {
		t.Errorf("metrics reader %+v, want get on /metrics and /snug/v1/*", reader)
	}
	// HTTPS by default (tls.enabled; TestTLS has the details): bearer
	// tokens never cross the network in clear.
	if !hasArg(ds.Spec.Template.Spec.Containers[0], "--tls") || !hasArg(c, "--tls") {
		t.Error("no --tls by default")
	}
}

// TestTLS: tls.enabled serves both components' endpoints over HTTPS, the
// agent's probes follow its port, the controller's health port does not,
// a Secret's certificate is mounted and named, and scrapes speak HTTPS.
func TestTLS(t *testing.T) {
	for _, secret := range []string{"", "snug-tls"} {
		r := render(t, "--set", "tls.enabled=true", "--set", "tls.secretName="+secret, "--set", "monitoring.serviceMonitor.enabled=true")
		ds := one[*appsv1.DaemonSet](t, r)
		d := one[*appsv1.Deployment](t, r)
		ac, cc := ds.Spec.Template.Spec.Containers[0], d.Spec.Template.Spec.Containers[0]
		parseArgs(t, ac, agentFlags)
		parseArgs(t, cc, controllerFlags)
		checkHardened(t, "agent", ds.Spec.Template.Spec, "https")
		checkHardened(t, "controller", d.Spec.Template.Spec, "health")
		for _, c := range []corev1.Container{ac, cc} {
			if !hasArg(c, "--tls") || hasArg(c, "--tls-cert-file=/etc/snug/tls/tls.crt") != (secret != "") || hasArg(c, "--tls-private-key-file=/etc/snug/tls/tls.key") != (secret != "") {
				t.Errorf("secret %q: %s args %q", secret, c.Name, c.Args)
			}
			mounted := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/etc/snug/tls" && m.ReadOnly })
			if mounted != (secret != "") {
				t.Errorf("secret %q: %s mounts %v", secret, c.Name, c.VolumeMounts)
			}
		}
		for _, p := range []*corev1.Probe{ac.ReadinessProbe, ac.LivenessProbe} {
			if p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
				t.Errorf("agent probe %+v, want HTTPS on its one port", p.HTTPGet)
			}
		}
		// A busy node must not get the agent restarted: each liveness
		// try may take 5 s, and a restart needs a minute of failures.
		if l := ac.LivenessProbe; l.TimeoutSeconds < 5 || l.PeriodSeconds*l.FailureThreshold < 60 {
			t.Errorf("agent liveness probe: timeout %ds, %d failures %ds apart; want at least 5 s a try and a minute of failures before a restart",
				l.TimeoutSeconds, l.FailureThreshold, l.PeriodSeconds)
		}
		for _, p := range []*corev1.Probe{cc.ReadinessProbe, cc.LivenessProbe} {
			if p.HTTPGet.Scheme == corev1.URISchemeHTTPS {
				t.Errorf("controller probe %+v, want its plain HTTP health port", p.HTTPGet)
			}
		}
		for _, m := range r.monitors {
			eps, _, _ := unstructured.NestedSlice(m.Object, "spec", "endpoints")
			ep := eps[0].(map[string]any)
			skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify")
			if ep["scheme"] != "https" || skip != (secret == "") {
				t.Errorf("secret %q: %s endpoint %v, want https, skipping verification only of a self-signed certificate", secret, m.GetName(), ep)
			}
		}
	}
}

// TestGrafanaDashboard: monitoring.grafanaDashboard ships dashboards/snug.json
// in a ConfigMap for Grafana's sidecar; off, there is none.
func TestGrafanaDashboard(t *testing.T) {
	want, err := os.ReadFile("dashboards/snug.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string            `json:"uid"`
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(want, &d); err != nil || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboards/snug.json: uid %q, %d panels: %v", d.UID, len(d.Panels), err)
	}
	for _, cm := range all[*corev1.ConfigMap](render(t)) {
		if _, ok := cm.Data["snug.json"]; ok {
			t.Errorf("ConfigMap %s holds the dashboard with monitoring.grafanaDashboard off", cm.Name)
		}
	}
	r := render(t, "--set", "monitoring.grafanaDashboard.enabled=true", "--set", "monitoring.grafanaDashboard.namespace=grafana")
	cm := one[*corev1.ConfigMap](t, r)
	if cm.Name != "snug-dashboard" || cm.Namespace != "grafana" || cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("ConfigMap %s/%s labels %v, want grafana/snug-dashboard labelled grafana_dashboard=1", cm.Namespace, cm.Name, cm.Labels)
	}
	if got := cm.Data["snug.json"]; got != strings.TrimRight(string(want), "\n") {
		t.Errorf("the ConfigMap's snug.json differs from dashboards/snug.json (%d vs %d bytes)", len(got), len(want))
	}
}

func TestAllOn(t *testing.T) {
	r := render(t, "--values", "testdata/all-on.yaml")
	k := kinds(r)
	for kind, n := range map[string]int{"ServiceMonitor": 2, "PodMonitor": 2, "NetworkPolicy": 1, "ConfigMap": 1, "ClusterRoleBinding": 4, "ClusterRole": 4} {
		if k[kind] != n {
			t.Errorf("%d %s, want %d (all kinds: %v)", k[kind], kind, n, k)
		}
	}
	ds := one[*appsv1.DaemonSet](t, r)
	d := one[*appsv1.Deployment](t, r)
	ac, cc := ds.Spec.Template.Spec.Containers[0], d.Spec.Template.Spec.Containers[0]
	parseArgs(t, ac, agentFlags)
	parseArgs(t, cc, controllerFlags)
	if ac.Image != "registry.example.com:5000/snug-dev/snug-agent:v9.9.9-test" || cc.Image != "registry.example.com:5000/snug-dev/snug-controller:v9.9.9-test" {
		t.Errorf("images %q, %q: want the global registry and tag", ac.Image, cc.Image)
	}
	for _, c := range []corev1.Container{ac, cc} {
		if !hasArg(c, "--logging-format=json") || !hasArg(c, "--v=2") {
			t.Errorf("%s: args %q, want logging.format json and verbosity 2", c.Name, c.Args)
		}
	}
	if !hasArg(ac, "--dry-run") || !hasArg(cc, "--workers=4") || !hasArg(cc, "--install-crds") {
		t.Errorf("extra args missing: agent %q, controller %q", ac.Args, cc.Args)
	}
	if len(ac.Env) != 2 || ac.Env[1].Name != "GOMAXPROCS" || len(cc.Env) != 1 {
		t.Errorf("extra env: agent %v, controller %v", ac.Env, cc.Env)
	}
	if ds.Spec.Template.Annotations["example.com/scrape"] != "true" || ds.Spec.Template.Labels["example.com/tier"] != "node" || d.Spec.Template.Labels["example.com/tier"] != "control" {
		t.Errorf("pod labels and annotations: agent %v %v, controller %v", ds.Spec.Template.Labels, ds.Spec.Template.Annotations, d.Spec.Template.Labels)
	}
	if ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.String() != "10%" {
		t.Errorf("agent maxUnavailable %v", ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable)
	}
	if len(ds.Spec.Template.Spec.ImagePullSecrets) != 1 || len(d.Spec.Template.Spec.ImagePullSecrets) != 1 {
		t.Error("imagePullSecrets not on both pods")
	}
	if *d.Spec.Replicas != 3 {
		t.Errorf("controller replicas %d, want 3", *d.Spec.Replicas)
	}
	pdb := one[*policyv1.PodDisruptionBudget](t, r)
	if pdb.Spec.MinAvailable != nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB %+v, want maxUnavailable 1 only", pdb.Spec)
	}
	crd := one[*apiextensionsv1.CustomResourceDefinition](t, r)
	if _, ok := crd.Annotations["helm.sh/resource-policy"]; ok {
		t.Errorf("crds.keep false, but the CRD is annotated %v", crd.Annotations)
	}
	for _, o := range r.objs {
		if l := o.(interface{ GetLabels() map[string]string }).GetLabels(); l["team"] != "platform" && o.GetObjectKind().GroupVersionKind().Kind != "NetworkPolicy" && o.GetObjectKind().GroupVersionKind().Kind != "ConfigMap" {
			t.Errorf("%T without commonLabels: %v", o, l)
		}
	}
	for _, m := range r.monitors {
		field := "endpoints"
		auth := []string{"authorization", "type"}
		if m.GetKind() == "PodMonitor" {
			field, auth = "podMetricsEndpoints", []string{"bearerTokenSecret", "name"}
		}
		eps, _, _ := unstructured.NestedSlice(m.Object, "spec", field)
		if len(eps) != 1 {
			t.Errorf("%s %s: %d endpoints, want 1", m.GetKind(), m.GetName(), len(eps))
			continue
		}
		ep := eps[0].(map[string]any)
		if a, _, _ := unstructured.NestedString(ep, auth...); a == "" || ep["path"] != "/metrics" || ep["port"] == "" {
			t.Errorf("%s %s: endpoint %v, want /metrics on a named port with the values' %v", m.GetKind(), m.GetName(), ep, auth)
		}
		if ep["honorLabels"] != true {
			t.Errorf("%s %s: endpoint %v, want honorLabels (the agent's series carry the workload's namespace and pod)", m.GetKind(), m.GetName(), ep)
		}
		if m.GetKind() == "ServiceMonitor" && (ep["interval"] != "15s" || ep["scrapeTimeout"] != "10s") {
			t.Errorf("ServiceMonitor %s: endpoint %v, want interval 15s, scrapeTimeout 10s", m.GetName(), ep)
		}
		if m.GetLabels()["release"] != "prometheus" && m.GetKind() == "ServiceMonitor" {
			t.Errorf("ServiceMonitor %s labels %v", m.GetName(), m.GetLabels())
		}
	}
	np := one[*networkingv1.NetworkPolicy](t, r)
	if np.Name != "snug-metrics" || np.Namespace != helm.Namespace {
		t.Errorf("extraObjects NetworkPolicy %s/%s, want its templates rendered: snug-system/snug-metrics", np.Namespace, np.Name)
	}
	cm := one[*corev1.ConfigMap](t, r)
	if cm.Name != "snug-extra" || cm.Data["version"] != appVersion(t) {
		t.Errorf("extraObjects ConfigMap %s %v", cm.Name, cm.Data)
	}
	var readers []string
	for _, b := range all[*rbacv1.ClusterRoleBinding](r) {
		if b.RoleRef.Name == "snug-metrics-reader" {
			for _, s := range b.Subjects {
				readers = append(readers, s.Namespace+"/"+s.Name)
			}
		}
	}
	if !slices.Equal(readers, []string{"monitoring/prometheus"}) {
		t.Errorf("metrics readers %v, want monitoring/prometheus", readers)
	}
	var installs bool
	for _, cr := range all[*rbacv1.ClusterRole](r) {
		installs = installs || cr.Name == "snug-controller-install-crds"
	}
	if !installs {
		t.Error("controller.installCRDs: no install-crds ClusterRole")
	}
}

func TestToggles(t *testing.T) {
	r := render(t, "--set", "rbac.create=false")
	for kind, n := range kinds(r) {
		if strings.Contains(kind, "Role") {
			t.Errorf("rbac.create=false renders %d %s", n, kind)
		}
	}
	if kinds(r)["ServiceAccount"] != 2 {
		t.Errorf("rbac.create=false: %d ServiceAccounts, want still 2", kinds(r)["ServiceAccount"])
	}

	// The agent alone: nothing of the controller, its RBAC included.
	r = render(t, "--set", "controller.enabled=false")
	want := map[string]int{"CustomResourceDefinition": 1, "ServiceAccount": 1, "ClusterRole": 2, "ClusterRoleBinding": 1, "DaemonSet": 1, "Service": 1}
	if diff := cmp.Diff(want, kinds(r)); diff != "" {
		t.Errorf("controller.enabled=false: kinds (-want +got):\n%s", diff)
	}

	r = render(t, "--set", "crds.enabled=false")
	if n := kinds(r)["CustomResourceDefinition"]; n != 0 {
		t.Errorf("crds.enabled=false renders %d CRDs", n)
	}

	r = render(t, "--set", "crds.keep=false")
	if a := one[*apiextensionsv1.CustomResourceDefinition](t, r).Annotations; a["helm.sh/resource-policy"] != "" {
		t.Errorf("crds.keep=false: annotations %v", a)
	}

	r = render(t, "--set", "agent.serviceAccount.create=false", "--set", "agent.serviceAccount.name=my-agent",
		"--set", "controller.podDisruptionBudget.enabled=false", "--set", "controller.replicas=1", "--set", "controller.leaderElection.enabled=false",
		"--set", "admission.enabled=false")
	if n := kinds(r)["MutatingWebhookConfiguration"] + kinds(r)["Service"]; n != 2 {
		t.Errorf("admission.enabled=false: %d webhook configurations and Services, want the two Services of metrics", n)
	}
	if n := kinds(r)["ServiceAccount"]; n != 1 {
		t.Errorf("agent.serviceAccount.create=false: %d ServiceAccounts, want the controller's only", n)
	}
	if sa := one[*appsv1.DaemonSet](t, r).Spec.Template.Spec.ServiceAccountName; sa != "my-agent" {
		t.Errorf("agent runs as %q, want my-agent", sa)
	}
	if n := kinds(r)["PodDisruptionBudget"] + kinds(r)["Role"]; n != 0 {
		t.Errorf("no PDB and no leader election wanted, got %d", n)
	}
	if c := one[*appsv1.Deployment](t, r).Spec.Template.Spec.Containers[0]; !hasArg(c, "--leader-elect=false") {
		t.Errorf("controller args %q, want --leader-elect=false", c.Args)
	}

	r = render(t, "--set", "image.registry=10.213.0.2:5000", "--set", "image.tag=v1.2.3-4-gabc")
	if img := one[*appsv1.DaemonSet](t, r).Spec.Template.Spec.Containers[0].Image; img != "10.213.0.2:5000/snug-dev/snug-agent:v1.2.3-4-gabc" {
		t.Errorf("agent image %q with the lab's registry and tag", img)
	}
}

// TestBadValues: values the chart cannot honour fail with an error that
// names them, and render nothing.
func TestBadValues(t *testing.T) {
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"controller.replicas=-1"}, "/controller/replicas"},
		{[]string{"controller.replicas=0"}, "/controller/replicas"},
		{[]string{"agent.imagePullPolicy=Always"}, "'imagePullPolicy' not allowed"},
		{[]string{"controler.replicas=2"}, "'controler' not allowed"},
		{[]string{"agent.image.pullPolicy=Sometimes"}, "/agent/image/pullPolicy"},
		{[]string{"agent.port=70000"}, "/agent/port"},
		{[]string{"controller.leaderElection.enabled=false"}, "controller.replicas > 1 needs controller.leaderElection.enabled"},
		{[]string{"controller.podDisruptionBudget.maxUnavailable=1"}, "minAvailable or maxUnavailable, not both"},
		{[]string{"agent.service.enabled=false", "monitoring.serviceMonitor.enabled=true"}, "monitoring.serviceMonitor needs agent.service.enabled"},
	} {
		var flags []string
		for _, s := range c.set {
			flags = append(flags, "--set", s)
		}
		out, err := helm.Template(t.Context(), helmPath(t), ".", flags...)
		if err == nil || !strings.Contains(err.Error(), c.want) || len(out) != 0 {
			t.Errorf("--set %v: error %v, output %d bytes; want an error about %q", c.set, err, len(out), c.want)
		}
	}
}

// TestEmbeddedChart: the embedded chart is the chart on disk, file for file
// (helm's .helmignore leaves out the Go and testdata, so must the embed).
func TestEmbeddedChart(t *testing.T) {
	dir := t.TempDir()
	if err := chart.WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for root, list := range map[string]*[]string{".": &want, dir: &got} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if d.IsDir() {
				if rel == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(rel, ".go") {
				return nil
			}
			*list = append(*list, rel)
			if root == dir {
				a, _ := os.ReadFile(rel)
				b, _ := os.ReadFile(path)
				if !bytes.Equal(a, b) {
					t.Errorf("embedded %s differs from the file", rel)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("embedded files (-on disk +embedded):\n%s", diff)
	}
}

// TestAdmission checks the webhook's safe defaults and the cert-manager
// option.
func TestAdmission(t *testing.T) {
	r := render(t)
	mwc := one[*admissionregistrationv1.MutatingWebhookConfiguration](t, r)
	if len(mwc.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(mwc.Webhooks))
	}
	w := mwc.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Ignore || *w.TimeoutSeconds != 5 || *w.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("failurePolicy %s timeoutSeconds %d reinvocationPolicy %s, want Ignore, 5, Never", *w.FailurePolicy, *w.TimeoutSeconds, *w.ReinvocationPolicy)
	}
	if *w.SideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun {
		t.Errorf("sideEffects %s", *w.SideEffects)
	}
	excluded := map[string]bool{}
	for _, e := range w.NamespaceSelector.MatchExpressions {
		if e.Key == "kubernetes.io/metadata.name" && e.Operator == metav1.LabelSelectorOpNotIn {
			for _, v := range e.Values {
				excluded[v] = true
			}
		}
	}
	if !excluded["snug-system"] || !excluded["kube-system"] {
		t.Errorf("namespaceSelector %v, want snug-system and kube-system excluded", w.NamespaceSelector)
	}
	if w.ObjectSelector == nil || len(w.ObjectSelector.MatchExpressions) != 1 || w.ObjectSelector.MatchExpressions[0].Key != "autoscaling.snug.dev/admission" {
		t.Errorf("objectSelector %v, want the opt-out label", w.ObjectSelector)
	}
	svc := w.ClientConfig.Service
	if svc == nil || svc.Name != "snug-admission" || svc.Namespace != "snug-system" || *svc.Path != "/mutate-pods" {
		t.Errorf("clientConfig %+v", w.ClientConfig)
	}
	c := one[*appsv1.Deployment](t, r).Spec.Template.Spec.Containers[0]
	for _, a := range []string{"--admission-addr=:9443", "--admission-service=snug-admission", "--admission-secret=snug-admission-tls", "--admission-webhook-config=snug", "--admission-manage-cert=true"} {
		if !hasArg(c, a) {
			t.Errorf("controller args %q, want %s", c.Args, a)
		}
	}

	r = render(t, "--set", "admission.certManager.enabled=true")
	mwc = one[*admissionregistrationv1.MutatingWebhookConfiguration](t, r)
	if got := mwc.Annotations["cert-manager.io/inject-ca-from"]; got != "snug-system/snug-admission" {
		t.Errorf("cert-manager: inject-ca-from %q", got)
	}
	if c := one[*appsv1.Deployment](t, r).Spec.Template.Spec.Containers[0]; !hasArg(c, "--admission-manage-cert=false") {
		t.Errorf("cert-manager: controller args %q, want --admission-manage-cert=false", c.Args)
	}
	if !slices.Equal(slices.Sorted(slices.Values(r.certManager)), []string{"Certificate", "Issuer"}) {
		t.Errorf("cert-manager: objects %v, want an Issuer and a Certificate", r.certManager)
	}
	for _, cr := range all[*rbacv1.ClusterRole](r) {
		for _, rule := range cr.Rules {
			if slices.Contains(rule.Resources, "mutatingwebhookconfigurations") {
				t.Errorf("cert-manager: %s may still write the webhook configuration", cr.Name)
			}
		}
	}

	r = render(t, "--set", "admission.failurePolicy=Fail", "--set", "admission.timeoutSeconds=2")
	w = one[*admissionregistrationv1.MutatingWebhookConfiguration](t, r).Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.TimeoutSeconds != 2 {
		t.Errorf("set failurePolicy Fail, timeoutSeconds 2: got %s, %d", *w.FailurePolicy, *w.TimeoutSeconds)
	}
}
