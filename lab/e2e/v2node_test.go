//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/controller"
	"github.com/snug-dev/snug/internal/resize"
	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab"
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

	// Registered after the removal, so it stops before it.
	w := startV2Watchdog(t)

	runV2Case(t, w, "Node", func(t *testing.T) {
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
	runV2Case(t, w, "CPUResize", func(t *testing.T) { fieldReportCPUResize(t, v2Env(t)) })
	runV2Case(t, w, "Deferred", func(t *testing.T) { fieldReportDeferred(t, v2Env(t), "1") })
	runV2Case(t, w, "Evict", testTwoNodeEvict)
	if os.Getenv("SNUG_E2E_V2") != "full" {
		t.Log("the rest of TestV2Node runs with SNUG_E2E_V2=full (make e2e-v2)")
		return
	}
	runV2Case(t, w, "MemoryRestart", func(t *testing.T) { fieldReportMemoryRestart(t, v2Env(t)) })
	runV2Case(t, w, "MemoryDecrease", func(t *testing.T) { fieldReportMemoryDecrease(t, v2Env(t)) })
	runV2Case(t, w, "Agent", func(t *testing.T) { agentSuite(t, labOpts.V2.Name) })
	runV2Case(t, w, "Autoscale", func(t *testing.T) { autoscaleSuite(t, labOpts.V2.Name) })
	t.Run("Watchdog", func(t *testing.T) { testV2Watchdog(t, w) })
}

// testV2Watchdog: a guest that stops (its processes stopped with SIGSTOP,
// as a hung one stops beating) is found by the watchdog within
// v2StallAfter and a few seconds, rebooted, and Ready again, and a pod of
// a Deployment that ran on it runs on the new guest.
func testV2Watchdog(t *testing.T, w *v2Watchdog) {
	w.beginCase()
	ns := createNamespace(t, "snug-watchdog-")
	drainNamespace(t, ns)
	createSleepDeployment(t, ns, "wd", 1, "50m", func(s *corev1.PodSpec) {
		s.Tolerations = lab.V2Tolerations()
		s.NodeSelector = map[string]string{corev1.LabelHostname: labOpts.V2.Name}
	})
	before := readyPods(t, ns, "wd", 1)[0]
	w.mu.Lock()
	hangs := len(w.hangs)
	w.mu.Unlock()
	stopped := time.Now()
	n, err := lab.StopV2Guest(labOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped the guest's %d processes (SIGSTOP)", n)
	// Not waitFor: it would take the hang for one that cut the case short.
	var h v2Hang
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.hangs) > hangs {
			h = w.hangs[hangs]
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for the watchdog to find the stopped guest: %v", err)
	}
	// That hang was this case's doing: the waits below are not cut short
	// by it.
	w.beginCase()
	checkContains(t, "the watchdog's detail", h.stall.Detail, "state T")
	var after corev1.Pod
	waitFor(t, "a new pod of wd ready on the rebooted guest", 3*time.Minute, func() (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=wd"})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.UID != before.UID && p.DeletionTimestamp == nil && p.Spec.NodeName == labOpts.V2.Name && podReady(&p) {
				after = p
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("WATCHDOG case: stopped guest found hung %.1fs after the stop (%s); pod %s ready on the rebooted guest %.1fs after the stop",
		h.at.Sub(stopped).Seconds(), h.stall, after.Name, time.Since(stopped).Seconds())
}

// testTwoNodeEvict: two Deployments on the lab's first node, which a
// filler then fills, each with one pod resized beyond the room (Deferred).
// Under InPlaceOrRecreate with deferred action Evict the controller evicts
// that pod within its PodDisruptionBudget and minReplicas; the admission
// webhook starts the replacement at the size the resize asked for, and
// the scheduler puts it on the cgroup-v2 node, the one where that fits,
// where it runs at that size. Under InPlace the pod is never evicted (it
// stays Deferred under action Wait). `snug status` shows each pod's node.
func testTwoNodeEvict(t *testing.T) {
	ctx := t.Context()
	pc := installPolicyCRD(t)
	ag := installSnug(t, snugInstall{})
	ag2 := agentOn(t, ag, labOpts.V2.Name)
	ns := createNamespace(t, "snug-evict2-")
	drainNamespace(t, ns)
	first := labOpts.NodeName
	// Both nodes may take the pods; the first is preferred, so they start
	// there and only a pod that no longer fits goes to the other.
	placement := func(s *corev1.PodSpec) {
		s.Tolerations = lab.V2Tolerations()
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{first}}},
			}}},
		}}
	}
	createSleepDeployment(t, ns, "ev", 2, "100m", placement)
	createSleepDeployment(t, ns, "keep", 1, "100m", placement)
	evPods, keepPods := readyPods(t, ns, "ev", 2), readyPods(t, ns, "keep", 1)
	for _, p := range append(slices.Clone(evPods), keepPods...) {
		if p.Spec.NodeName != first {
			t.Fatalf("pod %s scheduled on %s, want the preferred %s", p.Name, p.Spec.NodeName, first)
		}
	}
	createPDB(t, ns, "ev", 1)
	waitPDB(t, ns, "ev", 1)

	// The filler leaves 100m of the first node free, as the scheduler
	// counts it.
	node, err := client.CoreV1().Nodes().Get(ctx, first, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	onNode, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", first).String()})
	if err != nil {
		t.Fatal(err)
	}
	claimed := resize.Claimed(onNode.Items, "")
	free := node.Status.Allocatable.Cpu().MilliValue() - claimed.Cpu().MilliValue()
	createLoadPod(t, ns, loadPod{name: "filler", cpuRequest: fmt.Sprintf("%dm", free-100), memRequest: "16Mi", node: first})
	t.Logf("first node: %dm cpu free before the filler (%dm), 100m after", free, free-100)

	// One pod of each grows to 500m: Deferred, as neither fits.
	victim, kept := evPods[0], keepPods[0]
	for _, name := range []string{victim.Name, kept.Name} {
		if _, err := client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType,
			[]byte(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"500m"}}}]}}`), metav1.PatchOptions{}, "resize"); err != nil {
			t.Fatalf("resizing %s: %v", name, err)
		}
		waitPod(t, ns, name, "resize Deferred", isDeferred)
	}
	deferredAt := time.Now()
	createPolicy(t, pc, ns, "ev", v1alpha1.SnugPolicySpec{
		TargetRef:    deploymentRef("ev"),
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate, MinReplicas: ptr.To[int32](2)},
		Behavior:     &v1alpha1.Behavior{Deferred: &v1alpha1.DeferredBehavior{Action: v1alpha1.DeferredActionEvict, AfterSeconds: ptr.To[int32](0)}},
	})
	// Under InPlace the API server refuses deferred action Evict (the CRD's
	// rule); Wait keeps the agent from fitting the resize, so only an
	// eviction could end the deferral.
	createPolicy(t, pc, ns, "keep", v1alpha1.SnugPolicySpec{
		TargetRef:    deploymentRef("keep"),
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
		Behavior:     &v1alpha1.Behavior{Deferred: &v1alpha1.DeferredBehavior{Action: v1alpha1.DeferredActionWait, AfterSeconds: ptr.To[int32](0)}},
	})

	// InPlaceOrRecreate: evicted, and replaced on the node where 500m fits.
	repl := replacementOf(t, ns, "ev", evPods)
	evictedAfter := time.Since(deferredAt)
	waitEvent(t, ns, "ev", controller.EventEvicted)
	checkEvictedSize(t, repl, victim.Name, "500m")
	running := waitPod(t, ns, repl.Name, "replacement running", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
	})
	check(t, "replacement's node", running.Spec.NodeName, labOpts.V2.Name)
	if st := running.Status.ContainerStatuses[0].Resources; st == nil || st.Requests.Cpu().MilliValue() != 500 {
		t.Errorf("replacement's actual resources %v, want a 500m cpu request", st)
	}
	t.Logf("EVICT %s: %s evicted %.1fs after the policy was created; replacement %s running on %s at %s cpu %.1fs after that",
		labOpts.KubernetesVersion, victim.Name, evictedAfter.Seconds(), running.Name, running.Spec.NodeName,
		running.Status.ContainerStatuses[0].Resources.Requests.Cpu(), time.Since(deferredAt).Seconds()-evictedAfter.Seconds())
	// Within the budget: the sibling was never evicted.
	sibling := getPod(t, ns, evPods[1].Name)
	if sibling.UID != evPods[1].UID || sibling.DeletionTimestamp != nil {
		t.Errorf("sibling %s evicted too", evPods[1].Name)
	}

	// InPlace: never evicted. By now the controller has reconciled keep's
	// policy with its pod Deferred many times over (its status shows it).
	waitPolicy(t, pc, ns, "keep", "reconciled with its pod", func(p *v1alpha1.SnugPolicy) bool {
		return p.Status.ObservedGeneration == p.Generation && hasCondition(v1alpha1.ConditionNoPodsMatched, metav1.ConditionFalse, "PodsMatched")(p)
	})
	still := getPod(t, ns, kept.Name)
	if still.UID != kept.UID || still.DeletionTimestamp != nil || !isDeferred(still) || still.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("InPlace pod %s: UID %s (was %s), deleting %v, deferred %v, restarts %d: want the same pod, still Deferred, never restarted",
			kept.Name, still.UID, kept.UID, still.DeletionTimestamp != nil, isDeferred(still), still.Status.ContainerStatuses[0].RestartCount)
	}
	events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", controller.EventEvicted).String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == "keep" || e.InvolvedObject.Name == kept.Name {
			t.Errorf("eviction under InPlace: %s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		}
	}
	t.Logf("InPlace pod %s still Deferred on %s, not evicted, %.1fs after the deferral", kept.Name, first, time.Since(deferredAt).Seconds())
	// The two agents' cost over the case, side by side: the first node's
	// (cgroup v1, cgroupfs driver) from this machine's /proc, the second's
	// (cgroup v2, systemd driver, in the guest) from its own /metrics.
	ag.logCost(t)
	ag2.logCost(t)

	// snug status: every pod with its node.
	out, _, code := runSnug(t, "status", "-n", ns)
	t.Logf("$ snug status -n %s\n%s", ns, out)
	if code != 0 {
		t.Fatalf("snug status exited %d", code)
	}
	checkMatch(t, "snug status", out, `(?m)^`+regexp.QuoteMeta(running.Name)+`\s.*\s`+regexp.QuoteMeta(labOpts.V2.Name)+`$`)
	checkMatch(t, "snug status", out, `(?m)^`+regexp.QuoteMeta(kept.Name)+`\s.*\s`+regexp.QuoteMeta(first)+`$`)
}

// agentOn is the in-cluster agent on node of the install that a belongs
// to, with its cost measured from now (an agent in the guest reports its
// own).
func agentOn(t *testing.T, a *agentProc, node string) *agentProc {
	t.Helper()
	pod, url, err := a.snug.AgentOn(t.Context(), node)
	if err != nil {
		t.Fatal(err)
	}
	b := &agentProc{base: url, token: a.token, snug: a.snug, pod: pod}
	b.startCost(t)
	return b
}
