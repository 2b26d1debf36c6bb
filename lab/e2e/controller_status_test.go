//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/config/crd"
	"github.com/snug-dev/snug/internal/install"
	"github.com/snug-dev/snug/lab/internal/experiment"
)

// TestControllerStatusUnscheduled: the controller's status of a policy
// whose pods are never scheduled. It needs only the API server: the
// controller runs as a host process (no node, no leader election, -v=1),
// and the pods name a node selector no node has. The policy is Ready, its
// pods are counted as they come and go, it says no pod has published
// usage, the pods are left as they were, and the controller's V(1) line
// for the status update is in its log.
func TestControllerStatusUnscheduled(t *testing.T) {
	ctx := t.Context()
	cfg := adminConfig(t)
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := crd.All()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := install.Uninstall(context.Background(), ext, crds, crdTimeout); err != nil {
			t.Errorf("uninstalling CRDs: %v", err)
		}
	})
	pc, err := policyclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "controller.log")
	stopController := startHostController(t, logPath, "--install-crds", "--leader-elect=false",
		"--metrics-addr=", "--health-addr=", "-v=1")
	defer stopController()

	ns := testNamespace(t, "snug-unsched-")
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"snug.dev/no-such-node": "true"},
				Containers: []corev1.Container{{Name: "app", Image: experiment.BusyboxImage, ImagePullPolicy: corev1.PullNever,
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					}}},
			},
		}
	}
	for _, name := range []string{"web-a", "web-b"} {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The CRD is the controller's to install; wait until it serves.
	waitFor(t, "the controller to install the SnugPolicy CRD", statusTimeout, func() (bool, error) {
		_, err := pc.SnugPolicies(ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	createPolicy(t, pc, ns, "web", v1alpha1.SnugPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}})

	p := waitPolicy(t, pc, ns, "web", "Ready, 2 pods, no history", func(p *v1alpha1.SnugPolicy) bool {
		return hasCondition(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonResolved)(p) &&
			condOf(p, v1alpha1.ConditionNoPodsMatched).Message == "2 pods match" &&
			condOf(p, v1alpha1.ConditionRecommendationProvided).Status == metav1.ConditionFalse
	})
	if p.Status.Selector != "app=web" || p.Status.Recommendation != nil {
		t.Errorf("status selector %q recommendation %v, want app=web and none", p.Status.Selector, p.Status.Recommendation)
	}
	if c := condOf(p, v1alpha1.ConditionRecommendationProvided); c.Message != "no pod has published usage yet" {
		t.Errorf("RecommendationProvided %+v", c)
	}

	if err := client.CoreV1().Pods(ns).Delete(ctx, "web-a", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitPolicy(t, pc, ns, "web", "1 pod", func(p *v1alpha1.SnugPolicy) bool {
		return condOf(p, v1alpha1.ConditionNoPodsMatched).Message == "1 pods match"
	})
	left, err := client.CoreV1().Pods(ns).Get(ctx, "web-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if left.Spec.NodeName != "" || !left.Spec.Containers[0].Resources.Requests.Cpu().Equal(resource.MustParse("100m")) {
		t.Errorf("pod web-b changed: node %q resources %v", left.Spec.NodeName, left.Spec.Containers[0].Resources)
	}
	if err := client.CoreV1().Pods(ns).Delete(ctx, "web-b", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitPolicy(t, pc, ns, "web", "no pods", hasCondition(v1alpha1.ConditionNoPodsMatched, metav1.ConditionTrue, reasonNoPodsMatched))

	stopController()
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"status updated"`) {
		t.Errorf("the controller at -v=1 did not log its status updates:\n%s", tail(string(b), 40))
	}
}

// reasonNoPodsMatched is the controller's reason for NoPodsMatched True.
const reasonNoPodsMatched = "NoPodsMatched"

// startHostController runs bin/snug-controller on this machine against the
// lab's API server with args, its output to logPath; the function it
// returns stops it (SIGTERM, then SIGKILL after 30 s) and may be called
// more than once.
func startHostController(t *testing.T, logPath string, args ...string) func() {
	t.Helper()
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(builtBin(t, "snug-controller"), append([]string{"--kubeconfig", labOpts.Kubeconfig()}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); f.Close() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Errorf("snug-controller: %v", err)
			} else if err != nil {
				t.Errorf("snug-controller exited with %v after SIGTERM; log:\n%s", err, tailFile(logPath))
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("snug-controller did not stop within 30 s of SIGTERM")
		}
	}
	t.Cleanup(stop)
	return stop
}

func tailFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprint(err)
	}
	return tail(string(b), 40)
}
