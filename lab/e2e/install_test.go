//go:build e2e

package e2e

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab/helm"
)

// snugInstall says how a test installs snug's chart.
type snugInstall struct {
	// agentArgs are the agent's extra flags (agent.extraArgs).
	agentArgs []string
	// noController installs the agent alone.
	noController bool
	// node is the node whose agent installSnug returns; "" is the lab's
	// first node. On the cgroup-v2 node (a guest) the agent's process is
	// not this machine's, so its cost is not measured.
	node string
	// set holds more --set pairs.
	set []string
	// restartsCounted says the test counts and explains restarts of snug's
	// containers itself (a chaos test); otherwise any restart fails it.
	restartsCounted bool
	// afterStop, if set, checks the pods' logs that the uninstall saved.
	afterStop func(t *testing.T, s *experiment.Snug)
}

// installedSnug is the chart installed by installSnug; the controller's
// metrics URL of the running test.
var installedSnug *experiment.Snug

// agentProc is the in-cluster agent on the lab's node, installed by the
// test through the chart.
type agentProc struct {
	base       string // the agent's HTTPS base, for /metrics and /readyz
	token      string // a reader's bearer token for /metrics and /snug/v1/
	snug       *experiment.Snug
	pod        string
	pid        int
	started    time.Time
	startTicks uint64
	// startCPU is the agent's process_cpu_seconds_total at started, for
	// an agent in the cgroup-v2 node's guest (pid 0).
	startCPU float64
}

// installSnug installs the chart (images from the lab's registry, CRDs
// left to the test as before) and returns the agent on the lab's node once
// it is ready and, unless noController, the controller leads. The test's
// end uninstalls it and logs the pods' logs when the test failed.
func installSnug(t *testing.T, o snugInstall) *agentProc {
	t.Helper()
	helmBin, err := helm.Built(labOpts.CacheDir, helm.DefaultVersion)
	if err != nil {
		t.Fatal(err)
	}
	chartDir, err := filepath.Abs("../../charts/snug")
	if err != nil {
		t.Fatal(err)
	}
	// This build's images, pushed to the lab's registry once per run.
	agentImage := pushedImages(t)["snug-agent"]
	_, tag, _ := strings.Cut(strings.TrimPrefix(agentImage.Ref, labOpts.Registry()), ":")
	logDir := t.TempDir()
	start := time.Now()
	s, err := experiment.InstallSnug(t.Context(), client, experiment.InstallOptions{
		Helm: helmBin, Chart: chartDir, Kubeconfig: labOpts.Kubeconfig(),
		Registry: labOpts.Registry(), Tag: tag, Node: cmp.Or(o.node, labOpts.NodeName),
		AgentArgs: append([]string{"-v=1"}, o.agentArgs...), NoController: o.noController,
		Set:    append([]string{"crds.enabled=false"}, o.set...),
		LogDir: logDir,
	})
	if err != nil {
		if s != nil {
			logSnugLogs(t, s)
		}
		t.Fatalf("installing snug's chart: %v", err)
	}
	installedSnug = s
	t.Cleanup(func() {
		installedSnug = nil
		if !o.restartsCounted {
			assertNoRestarts(t)
		}
		if err := s.Stop(); err != nil {
			skipIfV2Hung(t, "uninstalling snug: %v", err)
			t.Errorf("uninstalling snug: %v", err)
		}
		if o.afterStop != nil {
			o.afterStop(t, s)
		}
		if t.Failed() {
			logSnugLogs(t, s)
		}
	})
	t.Logf("snug installed in-cluster in %.1fs: agent pod %s (%s), controller %q", time.Since(start).Seconds(), s.AgentPod, s.AgentURL, s.ControllerPod)
	a := &agentProc{base: s.AgentURL, token: s.Token, snug: s, pod: s.AgentPod}
	if cmp.Or(o.node, labOpts.NodeName) == labOpts.NodeName {
		a.pid = agentPID(t, s.AgentPod)
		a.started, a.startTicks = time.Now(), cpuTicks(t, a.pid)
	} else {
		a.startCost(t)
	}
	return a
}

// logSnugLogs logs the ends of the logs Stop saved.
func logSnugLogs(t *testing.T, s *experiment.Snug) {
	t.Helper()
	for _, p := range []string{s.AgentLog, s.ControllerLog} {
		if b, err := os.ReadFile(p); err == nil {
			t.Logf("%s:\n%s", filepath.Base(p), tail(string(b), 60))
		}
	}
}

// assertNoRestarts fails the test when a snug container restarted while
// it ran: a crash of the agent or the controller is a defect that the
// DaemonSet's and Deployment's restarts would otherwise hide.
func assertNoRestarts(t *testing.T) {
	t.Helper()
	pods, err := client.CoreV1().Pods("snug-system").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Errorf("listing snug's pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 {
				t.Errorf("snug pod %s container %s restarted %d times (last state %+v)", p.Name, cs.Name, cs.RestartCount, cs.LastTerminationState)
			}
		}
	}
}

// agentPID finds the host PID of the agent pod's process: the container's
// processes are this machine's, in the pod's cgroup.
func agentPID(t *testing.T, podName string) int {
	t.Helper()
	p, err := client.CoreV1().Pods("snug-system").Get(t.Context(), podName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the agent pod: %v", err)
	}
	id := containerID(p, "agent")
	if id == "" {
		t.Fatalf("agent pod %s has no running agent container: %+v", podName, p.Status.ContainerStatuses)
	}
	procs, err := filepath.Glob("/proc/[0-9]*/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(b, []byte(id)) {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(f, "/proc/%d/cgroup", &pid); err == nil {
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && strings.HasSuffix(exe, "snug-agent") {
				return pid
			}
		}
	}
	t.Fatalf("no process of container %s runs snug-agent", id)
	return 0
}

// containerID is the runtime's ID of the pod's named container, "" when it
// does not run.
func containerID(p *corev1.Pod, name string) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name && cs.State.Running != nil {
			_, id, _ := strings.Cut(cs.ContainerID, "://")
			return id
		}
	}
	return ""
}

// controllerMetricsURL is the leading controller's /metrics.
func controllerMetricsURL(t *testing.T) string {
	t.Helper()
	if installedSnug == nil || installedSnug.ControllerMetricsURL == "" {
		t.Fatal(errors.New("no in-cluster controller installed by this test"))
	}
	return installedSnug.ControllerMetricsURL
}
