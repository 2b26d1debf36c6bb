package prom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/lab/internal/lab"
)

// Process is the name under which the lab records Prometheus's PID and log.
const Process = "prometheus"

// ErrAlreadyUp is returned by Up when Prometheus already runs; nothing was
// changed.
var ErrAlreadyUp = errors.New("the lab's Prometheus is already up")

// Options configures the lab's Prometheus. Start from NewOptions.
type Options struct {
	// Lab is the lab it runs in; its directory holds Prometheus's.
	Lab *lab.Options
	// Port is where it listens, on the node's address inside the lab's
	// namespace (the host reaches it through the veth).
	Port int
	// Namespace and Release are snug's Helm release: the pods scraped are
	// those labelled app.kubernetes.io/instance=Release in Namespace.
	Namespace, Release string
	// ServiceAccount in Namespace is whose token Prometheus sends; Up
	// creates it when missing. The chart binds it to snug-metrics-reader
	// (monitoring.readerSubjects).
	ServiceAccount string
	// ScrapeInterval is the global scrape and evaluation interval.
	ScrapeInterval time.Duration
	// ReadyTimeout bounds Up's wait for Prometheus to answer.
	ReadyTimeout time.Duration
}

// NewOptions returns the defaults for the lab o: the release "snug" in
// snug-system, scraped every 5 s by the ServiceAccount "prometheus".
func NewOptions(o *lab.Options) *Options {
	return &Options{
		Lab: o, Port: 9090, Namespace: "snug-system", Release: "snug",
		ServiceAccount: "prometheus", ScrapeInterval: 5 * time.Second, ReadyTimeout: time.Minute,
	}
}

// Validate reports every problem with the options (the lab's included).
func (o *Options) Validate() error {
	if o.Lab == nil {
		return errors.New("prometheus options: no lab options")
	}
	errs := []error{o.Lab.Validate()}
	if o.Port <= 1024 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("prometheus port must be in 1025..65535, got %d", o.Port))
	}
	if o.Namespace == "" || o.Release == "" || o.ServiceAccount == "" {
		errs = append(errs, errors.New("prometheus: namespace, release and service account must be set"))
	}
	if o.ScrapeInterval < time.Second {
		errs = append(errs, fmt.Errorf("prometheus scrape interval must be at least 1s, got %s", o.ScrapeInterval))
	}
	if o.ReadyTimeout <= 0 {
		errs = append(errs, errors.New("prometheus ready timeout must be positive"))
	}
	return errors.Join(errs...)
}

// URL is Prometheus's base URL, reachable from the host and the namespace.
func (o *Options) URL() string {
	return "http://" + net.JoinHostPort(o.Lab.NodeIP, strconv.Itoa(o.Port))
}

func (o *Options) dir(elem ...string) string {
	return filepath.Join(append([]string{o.Lab.Dir, "prometheus"}, elem...)...)
}

// Up writes the configuration, mints the ServiceAccount's token, syncs the
// targets and starts Prometheus in the lab's namespace, then waits until
// it is ready. The lab must be up and snug's namespace exist. On failure
// it stops what it started.
func Up(ctx context.Context, o *Options, client kubernetes.Interface, log io.Writer) (err error) {
	if err := o.Validate(); err != nil {
		return err
	}
	if _, running := lab.ProcessRunning(o.Lab, Process); running {
		return ErrAlreadyUp
	}
	if _, err := os.Stat("/usr/bin/prometheus"); err != nil {
		if err := lab.EnsurePackages(ctx, o.Lab.InstallPackages, log); err != nil {
			return err
		}
	}
	// A fresh TSDB each time, like the lab's own data.
	if err := os.RemoveAll(o.dir()); err != nil {
		return err
	}
	if err := os.MkdirAll(o.dir("data"), 0o755); err != nil {
		return err
	}
	if err := writeToken(ctx, o, client); err != nil {
		return err
	}
	if _, err := Sync(ctx, o, client); err != nil {
		return err
	}
	if err := os.WriteFile(o.dir("prometheus.yml"), []byte(o.config()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "starting prometheus on %s\n", o.URL())
	argv := o.Lab.InNetNS("/usr/bin/prometheus",
		"--config.file="+o.dir("prometheus.yml"),
		"--storage.tsdb.path="+o.dir("data"),
		"--storage.tsdb.retention.time=1d",
		"--web.listen-address="+net.JoinHostPort(o.Lab.NodeIP, strconv.Itoa(o.Port)),
		"--log.level=warn")
	if _, err := lab.StartProcess(o.Lab, Process, argv); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, Down(o))
		}
	}()
	hc := &http.Client{Timeout: 2 * time.Second}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, o.ReadyTimeout, true, func(context.Context) (bool, error) {
		if _, running := lab.ProcessRunning(o.Lab, Process); !running {
			return false, fmt.Errorf("prometheus exited; last lines of %s:\n%s", lab.LogFile(o.Lab, Process), lab.Tail(lab.LogFile(o.Lab, Process), 12))
		}
		resp, err := hc.Get(o.URL() + "/-/ready")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for prometheus: %w", err)
	}
	return nil
}

// Down stops Prometheus; its directory stays for a post-mortem.
func Down(o *Options) error { return lab.StopProcess(o.Lab, Process, 10*time.Second) }

// config is the scrape configuration: the equivalent of the chart's
// PodMonitors with monitoring.podMonitor.endpoint honorLabels: the
// agent's per-container series carry the workload's namespace and pod,
// which must win over the target's.
func (o *Options) config() string {
	return fmt.Sprintf(`# Written by snug-lab (internal/lab/prom); rewritten by every up.
global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
scrape_configs:
- job_name: snug
  scheme: https
  metrics_path: /metrics
  honor_labels: true
  tls_config:
    insecure_skip_verify: true # snug's self-signed certificates (tls.secretName unset)
  authorization:
    credentials_file: %[2]s
  file_sd_configs:
  - files: [%[3]s]
    refresh_interval: 5s
`, o.ScrapeInterval, o.dir("token"), o.dir("targets.json"))
}

// tokenSeconds is how long the scrape token lasts: longer than any lab run.
const tokenSeconds = 12 * 60 * 60

// writeToken creates the ServiceAccount if missing and writes a token of
// it (TokenRequest API) where Prometheus reads it.
func writeToken(ctx context.Context, o *Options, client kubernetes.Interface) error {
	sas := client.CoreV1().ServiceAccounts(o.Namespace)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: o.ServiceAccount, Namespace: o.Namespace,
		Labels: map[string]string{"app.kubernetes.io/managed-by": "snug-lab"}}}
	if _, err := sas.Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ServiceAccount %s/%s for prometheus: %w", o.Namespace, o.ServiceAccount, err)
	}
	tr, err := sas.CreateToken(ctx, o.ServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](tokenSeconds)},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("minting prometheus's token: %w", err)
	}
	return os.WriteFile(o.dir("token"), []byte(tr.Status.Token), 0o600)
}

// Target is one scrape target as file_sd takes it.
type Target struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// components are what is scraped: the chart's component label and the
// name of its metrics container port (the agent's is named by its scheme).
var components = []struct{ component, port string }{{"agent", "https"}, {"agent", "http"}, {"controller", "metrics"}}

// Sync lists the release's running agent and controller pods and writes
// them as Prometheus's targets (atomically: file_sd sees the whole file),
// one per pod at its metrics port, labelled job (<release>-<component>),
// namespace, pod and component. It returns what it wrote.
func Sync(ctx context.Context, o *Options, client kubernetes.Interface) ([]Target, error) {
	pods, err := client.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + o.Release + ",app.kubernetes.io/component in (agent,controller)",
	})
	if err != nil {
		return nil, fmt.Errorf("listing snug's pods: %w", err)
	}
	targets := []Target{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		comp := p.Labels["app.kubernetes.io/component"]
		port := metricsPort(&p, comp)
		if port == 0 {
			continue
		}
		targets = append(targets, Target{
			Targets: []string{net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port)))},
			Labels: map[string]string{
				"job": o.Release + "-" + comp, "namespace": p.Namespace, "pod": p.Name, "component": comp,
			},
		})
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].Labels["pod"] < targets[j].Labels["pod"] })
	data, err := json.MarshalIndent(targets, "", "  ")
	if err != nil {
		return nil, err
	}
	tmp := o.dir("targets.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return nil, err
	}
	return targets, os.Rename(tmp, o.dir("targets.json"))
}

func metricsPort(p *corev1.Pod, component string) int32 {
	for _, c := range components {
		if c.component != component {
			continue
		}
		for _, ctr := range p.Spec.Containers {
			for _, cp := range ctr.Ports {
				if cp.Name == c.port {
					return cp.ContainerPort
				}
			}
		}
	}
	return 0
}

// Sample is one series of an instant vector.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Query runs an instant query at now and returns its vector (a scalar
// comes back as one sample without labels). A query Prometheus refuses is
// an error carrying its message.
func Query(ctx context.Context, o *Options, expr string) ([]Sample, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := get(ctx, o, "/api/v1/query?query="+url.QueryEscape(expr), &data); err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	switch data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(data.Result, &vec); err != nil {
			return nil, fmt.Errorf("query %s: %w", expr, err)
		}
		out := make([]Sample, 0, len(vec))
		for _, v := range vec {
			f, err := parseValue(v.Value[1])
			if err != nil {
				return nil, fmt.Errorf("query %s: %w", expr, err)
			}
			out = append(out, Sample{Metric: v.Metric, Value: f})
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(data.Result, &v); err != nil {
			return nil, err
		}
		f, err := parseValue(v[1])
		return []Sample{{Value: f}}, err
	default:
		return nil, fmt.Errorf("query %s: result type %q, want a vector or scalar", expr, data.ResultType)
	}
}

// ActiveTarget is a target as /api/v1/targets shows it.
type ActiveTarget struct {
	Labels     map[string]string `json:"labels"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
	LastScrape time.Time         `json:"lastScrape"`
}

// Targets returns Prometheus's active targets.
func Targets(ctx context.Context, o *Options) ([]ActiveTarget, error) {
	var data struct {
		ActiveTargets []ActiveTarget `json:"activeTargets"`
	}
	if err := get(ctx, o, "/api/v1/targets?state=active", &data); err != nil {
		return nil, fmt.Errorf("reading targets: %w", err)
	}
	return data.ActiveTargets, nil
}

// MetricNames returns every metric name Prometheus holds.
func MetricNames(ctx context.Context, o *Options) ([]string, error) {
	var names []string
	if err := get(ctx, o, "/api/v1/label/__name__/values", &names); err != nil {
		return nil, fmt.Errorf("reading metric names: %w", err)
	}
	return names, nil
}

// get GETs an API path and decodes its data, or returns Prometheus's error.
func get(ctx context.Context, o *Options, path string, data any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.URL()+path, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(&body); err != nil {
		return fmt.Errorf("HTTP %d: decoding: %w", resp.StatusCode, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("%s: %s", body.ErrorType, body.Error)
	}
	return json.Unmarshal(body.Data, data)
}

func parseValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v)
	}
	return strconv.ParseFloat(s, 64)
}
