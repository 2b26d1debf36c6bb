//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLabInstall runs the built `snug-lab install` and `uninstall` as a
// person playing with snug on the lab would: install leaves the agent
// DaemonSet and the controller Deployment running from this build's images
// in the lab's registry; uninstall removes them; a second uninstall says
// there is nothing to remove and fails.
func TestLabInstall(t *testing.T) {
	snugLab := builtBin(t, "snug-lab")
	labCmd := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
		defer cancel()
		args = append(args, "--kubernetes-version", labOpts.KubernetesVersion, "--dir", labOpts.Dir, "--cache-dir", labOpts.CacheDir)
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, snugLab, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		t.Logf("$ snug-lab %s (%.1fs)\n%s", strings.Join(args, " "), time.Since(start).Seconds(), out.String())
		return out.String(), err
	}
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_, _ = labCmd("uninstall")
		}
	})
	out, err := labCmd("install")
	if err != nil {
		t.Fatalf("snug-lab install: %v", err)
	}
	for _, want := range []string{"pushed " + labOpts.Registry() + "/snug-dev/snug-agent:", "helm upgrade --install snug charts/snug", "snug is installed"} {
		if !strings.Contains(out, want) {
			t.Errorf("install's output lacks %q", want)
		}
	}
	ctx := context.Background()
	ds, err := client.AppsV1().DaemonSets("snug-system").Get(ctx, "snug-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the agent DaemonSet after install: %v", err)
	}
	if img := ds.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, labOpts.Registry()+"/") {
		t.Errorf("agent image %s, want one from the lab's registry %s", img, labOpts.Registry())
	}
	if ds.Status.NumberReady < 1 {
		t.Errorf("agent DaemonSet: %d ready, want at least 1", ds.Status.NumberReady)
	}
	dep, err := client.AppsV1().Deployments("snug-system").Get(ctx, "snug-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the controller Deployment after install: %v", err)
	}
	if dep.Status.ReadyReplicas < 1 {
		t.Errorf("controller Deployment: %d ready replicas, want at least 1", dep.Status.ReadyReplicas)
	}

	if _, err := labCmd("uninstall"); err != nil {
		t.Fatalf("snug-lab uninstall: %v", err)
	}
	uninstalled = true
	if _, err := client.AppsV1().DaemonSets("snug-system").Get(ctx, "snug-agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the agent DaemonSet after uninstall: %v, want NotFound", err)
	}
	pods, err := client.CoreV1().Pods("snug-system").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("snug-system pods after uninstall: %d (%v), want none", len(pods.Items), err)
	}
	out, err = labCmd("uninstall")
	if err == nil || !strings.Contains(out, "no release snug in namespace snug-system to uninstall") {
		t.Errorf("a second uninstall: %v, want an error saying there is no release", err)
	}
}
