//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/agent"
)

// TestAgentWrites measures what one node's agent writes to the API server
// in steady state (issue 29: "measure first"): six calm pods under an
// InPlace policy, snug installed by its chart; after the pods' first
// snapshots, the agent's own count of its requests
// (snug_agent_api_requests_total) over three minutes, by verb and
// resource. It fails if the agent writes more than one request per pod per
// minute plus one: steady pods need no resize, event or condition, and
// their snapshots go out only when what they learnt doubled or moved
// (docs/agent.md), which the first minutes of a pod's life still do often.
func TestAgentWrites(t *testing.T) {
	const pods = 6
	pc := installPolicyCRD(t)
	ag := installSnug(t, snugInstall{})
	ns := testNamespace(t, "snug-writes-")
	labels := map[string]string{"snug-e2e": "writes"}
	createPolicy(t, pc, ns, "writes", v1alpha1.SnugPolicySpec{
		Selector:     &metav1.LabelSelector{MatchLabels: labels},
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
	})
	var names []string
	for i := range pods {
		names = append(names, createLoadPod(t, ns, loadPod{name: fmt.Sprintf("calm-%d", i), labels: labels, args: []string{"--cpu=20m"},
			cpuRequest: "50m", cpuLimit: "200m", memRequest: "32Mi", memLimit: "64Mi"}))
	}
	// Steady: every pod's first snapshot is out (a minute after the agent
	// began tracking it); later ones when what the pod learnt doubled.
	for _, p := range names {
		ag.waitAutoscale(t, ns, p, 2*time.Minute, func(c agent.ContainerJSON) bool { return c.Autoscale != nil })
	}
	waitFor(t, "each pod's first snapshot", 3*time.Minute, func() (bool, error) {
		return writesByKind(t, ag)["patch pods"] >= pods, nil
	})
	before := writesByKind(t, ag)
	start := time.Now()
	// A measurement window, not a wait for a condition.
	time.Sleep(3 * time.Minute)
	after := writesByKind(t, ag)
	minutes := time.Since(start).Minutes()
	var total float64
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		d := after[k] - before[k]
		if d == 0 {
			continue
		}
		total += d
		parts = append(parts, fmt.Sprintf("%s %.1f/min", k, d/minutes))
	}
	t.Logf("WRITES %s: one agent, %d steady pods under a policy: %.1f writes/min (%.2f per pod per minute): %s",
		labOpts.KubernetesVersion, pods, total/minutes, total/minutes/pods, strings.Join(parts, ", "))
	if budget := float64(pods + 1); total/minutes > budget {
		t.Errorf("%.1f writes/min from one agent with %d steady pods, want at most %.0f", total/minutes, pods, budget)
	}
}

// writesByKind is the agent's snug_agent_api_requests_total of writes
// (create, update, patch, delete), by "verb resource".
func writesByKind(t *testing.T, ag *agentProc) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	f := exposed(t, ag.base+"/metrics", ag.token)["snug_agent_api_requests_total"]
	if f == nil {
		t.Fatal("the agent exposes no snug_agent_api_requests_total")
	}
	for _, m := range f.GetMetric() {
		verb, res := label(m, "verb"), label(m, "resource")
		switch verb {
		case "create", "update", "patch", "delete", "deletecollection":
			out[verb+" "+res] += m.GetCounter().GetValue()
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
