package prom

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/snug-dev/snug/lab/internal/lab"
)

func testOptions(t *testing.T) *Options {
	lo := lab.NewOptions()
	lo.Dir = t.TempDir()
	o := NewOptions(lo)
	if err := os.MkdirAll(o.dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestConfigValid: Debian's promtool accepts the scrape configuration
// (it refuses kubernetes_sd_configs, which its build lacks).
func TestConfigValid(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	o := testOptions(t)
	for name, data := range map[string]string{"prometheus.yml": o.config(), "token": "x", "targets.json": "[]"} {
		if err := os.WriteFile(o.dir(name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(promtool, "check", "config", o.dir("prometheus.yml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s\n%s", err, out, o.config())
	}
}

func pod(name, component, phase, ip string, ports ...corev1.ContainerPort) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "snug-system", Labels: map[string]string{
			"app.kubernetes.io/instance": "snug", "app.kubernetes.io/component": component}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: component, Ports: ports}}},
		Status: corev1.PodStatus{Phase: corev1.PodPhase(phase), PodIP: ip},
	}
}

// TestSync: running agent and controller pods of the release become
// targets at their metrics port with the PodMonitor's labels; pending
// pods, other releases and other ports do not.
func TestSync(t *testing.T) {
	o := testOptions(t)
	other := pod("other-agent", "agent", "Running", "10.0.0.9", corev1.ContainerPort{Name: "https", ContainerPort: 9464})
	other.Labels["app.kubernetes.io/instance"] = "other"
	c := fake.NewClientset(
		pod("snug-agent-x", "agent", "Running", "10.0.0.1", corev1.ContainerPort{Name: "https", ContainerPort: 9464}),
		pod("snug-controller-a", "controller", "Running", "10.0.0.2", corev1.ContainerPort{Name: "health", ContainerPort: 9466}, corev1.ContainerPort{Name: "metrics", ContainerPort: 9465}),
		pod("snug-controller-b", "controller", "Pending", "", corev1.ContainerPort{Name: "metrics", ContainerPort: 9465}),
		other,
	)
	got, err := Sync(t.Context(), o, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{
		{Targets: []string{"10.0.0.1:9464"}, Labels: map[string]string{"job": "snug-agent", "namespace": "snug-system", "pod": "snug-agent-x", "component": "agent"}},
		{Targets: []string{"10.0.0.2:9465"}, Labels: map[string]string{"job": "snug-controller", "namespace": "snug-system", "pod": "snug-controller-a", "component": "controller"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	var file []Target
	b, err := os.ReadFile(filepath.Join(o.dir(), "targets.json"))
	if err == nil {
		err = json.Unmarshal(b, &file)
	}
	if err != nil || !cmp.Equal(want, file) {
		t.Errorf("targets.json %s (%v), want what Sync returned", b, err)
	}
}
