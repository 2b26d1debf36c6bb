//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDemo runs the built `snug-lab demo` as a user would, against the lab
// TestMain brought up (the demo reuses it and leaves it up), and holds its
// output to issue 5's promise: snug is installed in-cluster with its chart
// and images from the lab's registry, a load
// step, snug status --watch catches the resize, and the summary shows the
// grow with no restart and the QoS class kept. It logs the demo's figures.
func TestDemo(t *testing.T) {
	bin := os.Getenv("SNUG_BIN")
	if bin == "" {
		bin, _ = filepath.Abs("../../bin")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "snug-lab"), "demo",
		"--kubernetes-version", labOpts.KubernetesVersion, "--dir", labOpts.Dir, "--cache-dir", labOpts.CacheDir, "--timeout", "90s")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	start := time.Now()
	err := cmd.Run()
	t.Logf("snug-lab demo took %.1fs; its output:\n%s", time.Since(start).Seconds(), out.String())
	if err != nil {
		t.Fatalf("snug-lab demo: %v", err)
	}
	text := out.String()
	for _, want := range []string{
		"the lab was already up: using it, and leaving it up",
		"helm upgrade --install snug charts/snug",
		"pushed " + labOpts.Registry() + "/snug-dev/snug-agent:",
		"ready (https://",
		"load step: wrote \"cpu=400m\"",
		"POD", // snug status --watch's table
		"== Result: grown in place",
		"step -> agent's decision",
		"step -> patch accepted",
		"QoS class                    Burstable -> Burstable (unchanged)",
		"container ID                 unchanged",
		"== Cleaning up: namespace snug-demo-",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !regexp.MustCompile(`restarts\s+0 -> 0\n`).MatchString(text) {
		t.Errorf("output lacks the summary's restarts 0 -> 0")
	}
	t3 := -1.0
	if m := regexp.MustCompile(`step -> status shows it\s+([0-9.]+)s  \(actual cpu (\S+) -> (\S+)\)`).FindStringSubmatch(text); m == nil {
		t.Errorf("output lacks the step -> status figure")
	} else {
		t3, _ = strconv.ParseFloat(m[1], 64)
		t.Logf("DEMO %s step->status %ss, actual cpu %s -> %s", labOpts.KubernetesVersion, m[1], m[2], m[3])
	}
	// After T3 the demo waits for the pod's starvation to end (T4, read
	// from its cgroup), or says how throttled it still is.
	ended := regexp.MustCompile(`step -> starvation ended\s+([0-9.]+)s  \(throttled under 5% of periods for 2 s; actual cpu then (\S+)\)`).FindStringSubmatch(text)
	still := regexp.MustCompile(`starvation not ended\s+still throttled: ([0-9]+)% of periods 30s after the status \(actual cpu then (\S+)\)`).FindStringSubmatch(text)
	switch {
	case ended != nil:
		t4, _ := strconv.ParseFloat(ended[1], 64)
		if t4 < t3 || !strings.Contains(text, "starvation ended t+") {
			t.Errorf("starvation ended at %.2fs, before the status showed the grow (%.2fs), or without its live line", t4, t3)
		}
		t.Logf("DEMO %s step->starvation ended %ss, actual cpu then %s", labOpts.KubernetesVersion, ended[1], ended[2])
	case still != nil:
		if n, _ := strconv.Atoi(still[1]); n <= 0 || n > 100 {
			t.Errorf("still throttled %s%% of periods: want 1-100 %% (starvation would have ended under 5 %%)", still[1])
		}
		t.Logf("DEMO %s starvation not ended: still throttled %s%% of periods, actual cpu then %s", labOpts.KubernetesVersion, still[1], still[2])
	default:
		t.Errorf("output lacks both the starvation ended figure and the still throttled line")
	}

	// The lab is still up, the demo's namespace gone, and snug uninstalled.
	waitFor(t, "snug's pods gone after the demo's uninstall", time.Minute, func() (bool, error) {
		pods, err := client.CoreV1().Pods("snug-system").List(context.Background(), metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	})
	if _, err := client.Discovery().ServerVersion(); err != nil {
		t.Errorf("the lab is not up after the demo: %v", err)
	}
	nss, err := client.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "snug-demo-") {
			t.Errorf("namespace %s left behind (%s)", ns.Name, ns.Status.Phase)
		}
	}
}
