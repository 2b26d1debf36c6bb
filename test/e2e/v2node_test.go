//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/internal/experiment"
	"github.com/snug-dev/snug/internal/lab"
)

// v2Env is newEnv for the lab's cgroup-v2 node: pods placed there (with
// its taint tolerated), cgroups read from the copy of the guest's tree
// that the guest keeps in the share (lab.Options.V2CgroupRoot).
func v2Env(t *testing.T) experiment.Env {
	env := newEnv(t)
	env.Node = labOpts.V2.Name
	env.CgroupRoot = labOpts.V2CgroupRoot()
	env.Tolerations = lab.V2Tolerations()
	return env
}

// TestV2Node adds the second node to the lab this run shares (Debian 12 in
// a User-Mode Linux guest: systemd, unified cgroup v2, containerd with
// SystemdCgroup, the kubelet's systemd cgroup driver), runs the field
// report's experiments on it and removes it again.
func TestV2Node(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	var out bytes.Buffer
	err := lab.AddV2Node(ctx, labOpts, &out)
	t.Logf("$ snug-lab v2-node add\n%s", out.String())
	if err != nil {
		t.Fatalf("adding the cgroup-v2 node: %v", err)
	}
	t.Logf("cgroup-v2 node joined in %.1fs", time.Since(start).Seconds())
	t.Cleanup(func() {
		var out bytes.Buffer
		if err := lab.RemoveV2Node(context.Background(), labOpts, &out); err != nil {
			t.Errorf("removing the cgroup-v2 node: %v\n%s", err, out.String())
		}
		if _, err := client.CoreV1().Nodes().Get(context.Background(), labOpts.V2.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("node %s after removal: %v, want NotFound", labOpts.V2.Name, err)
		}
		if lab.V2Running(labOpts) {
			t.Error("the guest still runs after removal")
		}
		if _, err := os.Stat(filepath.Join("/run/netns", labOpts.V2.NetNS)); err == nil {
			t.Errorf("network namespace %s left behind", labOpts.V2.NetNS)
		}
	})

	t.Run("Node", func(t *testing.T) {
		n, err := client.CoreV1().Nodes().Get(ctx, labOpts.V2.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		check(t, "kubelet version", n.Status.NodeInfo.KubeletVersion, "v"+labOpts.KubernetesVersion)
		check(t, "allocatable cpu", n.Status.Allocatable.Cpu().String(), "1")
		var ip string
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		check(t, "InternalIP", ip, labOpts.V2.IP)
		tainted := false
		for _, taint := range n.Spec.Taints {
			tainted = tainted || taint.Key == lab.V2Taint().Key
		}
		if !tainted {
			t.Errorf("taints %v, want %s", n.Spec.Taints, lab.V2Taint().Key)
		}
		mode := lab.V2CgroupMode(labOpts)
		checkContains(t, "cgroup mode", mode, "cgroup2fs")
		checkContains(t, "cgroup mode", mode, ", PSI")
		controllers, err := os.ReadFile(filepath.Join(labOpts.V2CgroupRoot(), "cgroup.controllers"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"cpu", "memory", "pids"} {
			if !strings.Contains(" "+strings.TrimSpace(string(controllers))+" ", " "+c+" ") {
				t.Errorf("controllers %q, want %s", controllers, c)
			}
		}
		// The kubelet's systemd driver puts pods under kubepods.slice, with
		// PSI files of their own.
		psi, err := os.ReadFile(filepath.Join(labOpts.V2CgroupRoot(), "kubepods.slice", "memory.pressure"))
		if err != nil {
			t.Fatalf("kubepods.slice/memory.pressure: %v", err)
		}
		checkMatch(t, "kubepods.slice/memory.pressure", string(psi), `^some avg10=`)
		cost := lab.MeasureV2Cost(labOpts, 2*time.Second)
		t.Logf("node %s: %s; the guest costs this machine %.1f%% of a core and %d MiB (PSS, %d processes)",
			n.Name, mode, cost.CPUPercent, cost.PSSBytes>>20, cost.Processes)
	})
	t.Run("CPUResize", func(t *testing.T) { fieldReportCPUResize(t, v2Env(t)) })
	t.Run("Deferred", func(t *testing.T) { fieldReportDeferred(t, v2Env(t), "1") })
	if os.Getenv("SNUG_E2E_V2") != "full" {
		t.Log("the rest of TestV2Node runs with SNUG_E2E_V2=full (make e2e-v2)")
		return
	}
	t.Run("MemoryRestart", func(t *testing.T) { fieldReportMemoryRestart(t, v2Env(t)) })
	t.Run("MemoryDecrease", func(t *testing.T) { fieldReportMemoryDecrease(t, v2Env(t)) })
	t.Run("Agent", func(t *testing.T) { agentSuite(t, labOpts.V2.Name) })
	t.Run("Autoscale", func(t *testing.T) { autoscaleSuite(t, labOpts.V2.Name) })
}
