//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/lab/internal/lab/prom"
)

// TestPrometheus installs snug with the chart, binds a ServiceAccount to
// its metrics reader through monitoring.readerSubjects, and runs Debian's
// Prometheus in the lab scraping the agent and both controllers with that
// token over HTTPS. After a policy's Deployment grows under a load step:
// every snug metric either exposes is in Prometheus and follows the naming
// rules (docs/observability.md), every PromQL expression of the chart's
// dashboard runs, the core panels have data, and snug status and the
// dashboard show the same cpu request for the pod.
func TestPrometheus(t *testing.T) {
	pc := installPolicyCRD(t)
	po := prom.NewOptions(labOpts)
	ag := installSnug(t, snugInstall{set: []string{
		"monitoring.readerSubjects[0].kind=ServiceAccount",
		"monitoring.readerSubjects[0].name=" + po.ServiceAccount,
		"monitoring.readerSubjects[0].namespace=" + po.Namespace,
	}})
	start := time.Now()
	if err := prom.Up(t.Context(), po, client, tlogWriter{t}); err != nil {
		t.Fatalf("prometheus up: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus log:\n%s", tail(readFile(labOpts.Dir+"/logs/prometheus.log"), 30))
		}
		if err := prom.Down(po); err != nil {
			t.Errorf("prometheus down: %v", err)
		}
		err := client.CoreV1().ServiceAccounts(po.Namespace).Delete(context.Background(), po.ServiceAccount, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting prometheus's ServiceAccount: %v", err)
		}
	})
	t.Logf("prometheus up in %.1fs at %s", time.Since(start).Seconds(), po.URL())

	// Every target up: the agent and both controller replicas (synced
	// again while a replica may still be starting).
	var targets []prom.ActiveTarget
	waitFor(t, "prometheus's targets up", 2*time.Minute, func() (bool, error) {
		if _, err := prom.Sync(t.Context(), po, client); err != nil {
			return false, err
		}
		var err error
		if targets, err = prom.Targets(t.Context(), po); err != nil {
			return false, err
		}
		up := 0
		for _, tg := range targets {
			if tg.Health == "up" {
				up++
			}
		}
		return len(targets) == 3 && up == 3, nil
	})
	for _, tg := range targets {
		t.Logf("target %s %s (%s): %s", tg.Labels["job"], tg.Labels["pod"], tg.ScrapeURL, tg.Health)
	}

	ns := testNamespace(t, "snug-prom-")
	createPolicy(t, pc, ns, "load", v1alpha1.SnugPolicySpec{
		TargetRef:    &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: "load"},
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
		Behavior: &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownBehavior{
			StabilizationWindowSeconds: ptr.To[int32](stabilizationSeconds),
		}},
	})
	pod := createAutoscaleDeployment(t, ns, "load", "")
	ag.waitAutoscale(t, ns, pod, time.Minute, func(c agent.ContainerJSON) bool {
		return c.Autoscale != nil && c.Autoscale.LastDecision != nil && len(ratePointsAfter(c.History, time.Time{})) >= 3
	})
	step := writeLoad(t, pod, "cpu=400m")
	ag.waitAutoscale(t, ns, pod, 2*time.Minute, func(c agent.ContainerJSON) bool {
		return len(appliedAfter(c.Autoscale, step)) > 0
	})

	t.Run("every metric scraped and well named", func(t *testing.T) {
		testMetricsScraped(t, po, ag)
	})
	t.Run("dashboard queries", func(t *testing.T) {
		testDashboard(t, po, ns)
	})
	t.Run("snug status agrees", func(t *testing.T) {
		testStatusAgrees(t, po, ns, pod)
	})
}

// tlogWriter logs each write.
type tlogWriter struct{ t *testing.T }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// exposed returns the metric families of one /metrics scrape.
func exposed(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := httpGet(t, url, token)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %q", url, code, body)
	}
	return parseExposed(t, url, body)
}

// parseExposed parses a Prometheus text exposition read from url.
func parseExposed(t *testing.T, url, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return fams
}

func testMetricsScraped(t *testing.T, po *prom.Options, ag *agentProc) {
	fams := map[string]*dto.MetricFamily{}
	for _, url := range []string{ag.base + "/metrics", controllerMetricsURL(t)} {
		for name, f := range exposed(t, url, ag.token) {
			if strings.HasPrefix(name, "snug_") {
				fams[name] = f
			}
		}
	}
	names := make([]string, 0, len(fams))
	for name := range fams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, problem := range metricProblems(fams[name]) {
			t.Errorf("%s: %s", name, problem)
		}
	}
	// Each family in Prometheus: a histogram by its _count.
	waitFor(t, "every snug metric in prometheus", time.Minute, func() (bool, error) {
		var missing []string
		for _, name := range names {
			q := name
			if fams[name].GetType() == dto.MetricType_HISTOGRAM {
				q += "_count"
			}
			s, err := prom.Query(t.Context(), po, "count("+q+")")
			if err != nil {
				return false, err
			}
			if len(s) == 0 || s[0].Value < 1 {
				missing = append(missing, q)
			}
		}
		if len(missing) > 0 {
			t.Logf("not yet in prometheus: %s", strings.Join(missing, ", "))
		}
		return len(missing) == 0, nil
	})
	t.Logf("METRICS %s: %d snug metric families exposed by the agent and the controller, all scraped by prometheus: %s",
		labOpts.KubernetesVersion, len(names), strings.Join(names, " "))
}

// Naming and label rules (docs/observability.md, "Naming").
var (
	nameRE = regexp.MustCompile(`^snug_(agent|controller|admission|http)_[a-z0-9_]+$`)
	// units are what a name may end with: a base unit, a ratio, or the
	// thing a count or gauge counts.
	units = []string{"_seconds", "_bytes", "_cores", "_ratio", "_seconds_per_second", "_containers", "_pods", "_resizes"}
	// stateGauges are 0/1 gauges: no unit.
	stateGauges = []string{"snug_controller_leader", "snug_controller_policy_condition"}
	// allowedLabels are every label a snug series may carry; podLabels
	// only the agent's per-container and per-pod series (deleted once the
	// agent stops tracking the container), never another counter. concern
	// is one of the controller's three reconcilers (checkpoints, status,
	// disruption).
	allowedLabels = []string{"namespace", "policy", "outcome", "action", "resource", "result", "review", "type", "reason", "kind", "verb", "concern"}
	podLabels     = []string{"pod", "container"}
	uidRE         = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
)

// metricProblems lists how a family breaks the naming and label rules.
func metricProblems(f *dto.MetricFamily) []string {
	name := f.GetName()
	var out []string
	if !nameRE.MatchString(name) {
		out = append(out, "not snug_<subsystem>_<name>_<unit> with subsystem agent, controller, admission or http")
	}
	switch f.GetType() {
	case dto.MetricType_COUNTER:
		if !strings.HasSuffix(name, "_total") {
			out = append(out, "a counter whose name does not end in _total")
		}
	case dto.MetricType_GAUGE, dto.MetricType_HISTOGRAM:
		if strings.HasSuffix(name, "_total") {
			out = append(out, "not a counter but named _total")
		}
		if !slices.Contains(stateGauges, name) && !slices.ContainsFunc(units, func(u string) bool { return strings.HasSuffix(name, u) }) {
			out = append(out, fmt.Sprintf("no unit at the end of the name (one of %v)", units))
		}
	default:
		out = append(out, "type "+f.GetType().String()+": want a counter, gauge or histogram")
	}
	perContainer := strings.HasPrefix(name, "snug_agent_container_") || strings.HasPrefix(name, "snug_agent_pod_")
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			switch {
			case slices.Contains(allowedLabels, l.GetName()):
			case slices.Contains(podLabels, l.GetName()) && perContainer:
			default:
				out = append(out, fmt.Sprintf("label %q not allowed here", l.GetName()))
			}
			if uidRE.MatchString(l.GetValue()) {
				out = append(out, fmt.Sprintf("label %s=%q holds a UID", l.GetName(), l.GetValue()))
			}
		}
	}
	return slices.Compact(out)
}

// corePanels must show data once a policy's pod has been resized.
var corePanels = []string{
	"Reaction latency (decision to applied)", "Resizes applied per policy", "Resize outcomes per policy",
	"Grow and shrink decisions", "Pods per policy", "CPU request and usage per pod",
	"Memory request and working set per pod", "Agent CPU", "Agent memory", "Agent cycle time",
	"Tracked containers", "Controller",
}

type dashboardPanel struct {
	Title   string           `json:"title"`
	Panels  []dashboardPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// dashboardExprs returns each panel's expressions, by title, with
// Grafana's variables replaced as Grafana would for a 5 m range.
func dashboardExprs(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../../charts/snug/dashboards/snug.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("parsing the dashboard: %v", err)
	}
	out := map[string][]string{}
	vars := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "15s", "$__range", "5m")
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				if strings.Contains(vars.Replace(tg.Expr), "$") {
					t.Errorf("panel %q: expression %q has a variable the test does not know", p.Title, tg.Expr)
				}
				out[p.Title] = append(out[p.Title], vars.Replace(tg.Expr))
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

func testDashboard(t *testing.T, po *prom.Options, ns string) {
	exprs := dashboardExprs(t)
	for _, title := range corePanels {
		if len(exprs[title]) == 0 {
			t.Errorf("core panel %q: not in the dashboard or no expression", title)
		}
	}
	n := 0
	for title, es := range exprs {
		for _, e := range es {
			n++
			if _, err := prom.Query(t.Context(), po, e); err != nil {
				t.Errorf("panel %q: %v", title, err)
			}
		}
	}
	// Core panels: every expression has a series (with a number, for the
	// latency quantiles), the per-policy ones for the test's policy.
	waitFor(t, "data in the dashboard's core panels", time.Minute, func() (bool, error) {
		var empty []string
		for _, title := range corePanels {
			for _, e := range exprs[title] {
				s, err := prom.Query(t.Context(), po, e)
				if err != nil {
					return false, err
				}
				if !slices.ContainsFunc(s, func(s prom.Sample) bool { return !math.IsNaN(s.Value) }) {
					empty = append(empty, fmt.Sprintf("%q: %s", title, e))
				}
				if strings.Contains(e, "by (namespace, policy") && !slices.ContainsFunc(s, func(s prom.Sample) bool {
					return s.Metric["namespace"] == ns && s.Metric["policy"] == "load"
				}) {
					empty = append(empty, fmt.Sprintf("%q: no series of policy %s/load: %s", title, ns, e))
				}
			}
		}
		if len(empty) > 0 {
			t.Logf("empty yet:\n  %s", strings.Join(empty, "\n  "))
		}
		return len(empty) == 0, nil
	})
	lat, err := prom.Query(t.Context(), po, exprs["Reaction latency (decision to applied)"][0])
	if err != nil || len(lat) == 0 {
		t.Fatalf("reaction latency: %v %v", lat, err)
	}
	t.Logf("DASHBOARD %s: %d panels, %d expressions run without error, %d core panels with data; reaction latency p50 %.2fs (histogram buckets)",
		labOpts.KubernetesVersion, len(exprs), n, len(corePanels), lat[0].Value)
}

// testStatusAgrees compares the pod's cpu request in snug status -o json
// with the dashboard's "CPU request and usage per pod" panel.
func testStatusAgrees(t *testing.T, po *prom.Options, ns, pod string) {
	expr := dashboardExprs(t)["CPU request and usage per pod"][0]
	var statusMilli, promMilli int64
	waitFor(t, "snug status and prometheus agreeing on the pod's cpu request", time.Minute, func() (bool, error) {
		out, _, code := runSnug(t, "status", "-n", ns, "-o", "json")
		if code != 0 {
			return false, fmt.Errorf("snug status exited %d", code)
		}
		var rows []struct {
			Pod    string `json:"pod"`
			Actual *struct {
				Requests map[string]string `json:"requests"`
			} `json:"actual"`
		}
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			return false, fmt.Errorf("parsing snug status -o json: %w", err)
		}
		statusMilli = -1
		for _, r := range rows {
			if r.Pod == pod && r.Actual != nil {
				q, err := resource.ParseQuantity(r.Actual.Requests["cpu"])
				if err != nil {
					return false, fmt.Errorf("snug status: cpu request %q: %w", r.Actual.Requests["cpu"], err)
				}
				statusMilli = q.MilliValue()
			}
		}
		s, err := prom.Query(t.Context(), po, expr)
		if err != nil {
			return false, err
		}
		promMilli = -1
		for _, x := range s {
			if x.Metric["namespace"] == ns && x.Metric["pod"] == pod {
				promMilli = int64(math.Round(x.Value * 1000))
			}
		}
		return statusMilli > 50 && statusMilli == promMilli, nil
	})
	t.Logf("STATUS %s: pod %s cpu request %dm in snug status, %dm in the dashboard", labOpts.KubernetesVersion, pod, statusMilli, promMilli)
}
