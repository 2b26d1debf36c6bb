package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/snug-dev/snug/lab/internal/lab/pki"
)

// ErrAlreadyUp is returned by Up when every component of the lab already
// runs; nothing was changed.
var ErrAlreadyUp = errors.New("the lab is already up")

// componentNames in start order (stop goes in reverse).
var componentNames = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "registry", "containerd", "kubelet", "kube-proxy"}

// Up brings the lab up: packages, binaries, PKI, network, processes,
// images, and waits for the node to be Ready. On failure it tears down what
// it started and returns an error naming the cause.
func Up(ctx context.Context, o *Options, log io.Writer) (err error) {
	if err := o.Validate(); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("the lab needs root (network namespaces, cgroups, mounts)")
	}
	switch running := runningComponents(o); {
	case len(running) == len(componentNames):
		return ErrAlreadyUp
	case len(running) > 0:
		return fmt.Errorf("the lab is partly up (%s running); run 'snug-lab down' first", strings.Join(running, ", "))
	}
	start := time.Now()
	if err := EnsurePackages(ctx, o.InstallPackages, log); err != nil {
		return err
	}
	if err := EnsureBinaries(ctx, o, log); err != nil {
		return err
	}
	loadBin, err := o.loadBinary()
	if err != nil {
		return err
	}
	// A fresh cluster every time: only the PKI and logs survive a restart.
	for _, d := range []string{"etcd", "containerd", "run", "kubelet", "kube-proxy", "registry", "cni", "pod-logs", "images", "pids", "load"} {
		if err := removeAll(o, o.path(d)); err != nil {
			return err
		}
	}
	p, err := pki.Ensure(o.path("pki"), pki.Options{
		NodeName: o.NodeName, NodeIPs: o.nodeIPs(), ServiceCIDR: o.ServiceCIDR,
		ServerURL: o.ServerURL(), Now: time.Now(),
	})
	if err != nil {
		return fmt.Errorf("making certificates: %w", err)
	}
	if err := os.MkdirAll(o.LoadDir(), 0o755); err != nil {
		return err
	}
	if err := writeConfigs(o, p); err != nil {
		return err
	}
	if err := recordNetNS(o); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			fmt.Fprintf(log, "lab up failed; cleaning up (logs stay in %s)\n", o.path("logs"))
			if derr := Down(context.Background(), o, io.Discard); derr != nil {
				err = fmt.Errorf("%w; cleanup: %v", err, derr)
			}
		}
	}()
	if err := setupNetwork(ctx, o); err != nil {
		return err
	}
	client, err := o.Client()
	if err != nil {
		return err
	}
	for _, c := range components(o, p) {
		fmt.Fprintf(log, "starting %s\n", c.name)
		if _, err := startProc(o, c.name, inNetNS(o, c.argv...)); err != nil {
			return err
		}
		switch c.name {
		case "kube-apiserver":
			err = o.waitFor(ctx, "kube-apiserver", 90*time.Second, func(ctx context.Context) bool {
				return client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() == nil
			})
		case "registry":
			err = o.waitFor(ctx, "registry", 30*time.Second, func(context.Context) bool {
				ok, _ := probe(o.RegistryURL() + "/v2/")
				return ok
			})
		case "containerd":
			err = o.waitFor(ctx, "containerd", 30*time.Second, func(context.Context) bool {
				_, serr := os.Stat(containerdSock(o))
				return serr == nil
			})
			if err == nil {
				err = importImages(ctx, o, loadBin, log)
			}
		case "kubelet":
			err = o.waitFor(ctx, "node "+o.NodeName+" Ready", o.ReadyTimeout, func(ctx context.Context) bool {
				return nodeReady(ctx, client, o.NodeName)
			})
		case "kube-proxy":
			err = o.waitFor(ctx, "kube-proxy's first sync", 60*time.Second, func(context.Context) bool {
				return kubeProxySynced(o)
			})
		}
		if err != nil {
			return err
		}
	}
	// Pods in a namespace are refused until its service account exists.
	err = o.waitFor(ctx, "the default service account", 60*time.Second, func(ctx context.Context) bool {
		_, gerr := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return gerr == nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "lab up: Kubernetes v%s, node %s (%s) Ready in %.1fs\n", o.KubernetesVersion, o.NodeName, o.NodeIP, time.Since(start).Seconds())
	if o.WithV2Node {
		if err := AddV2Node(ctx, o, log); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "  export KUBECONFIG=%s PATH=%s:$PATH\n", o.Kubeconfig(), o.BinDir())
	return nil
}

// waitFor polls cond every 250ms until it holds, the timeout passes, or a
// lab process dies (then the error carries the end of its log).
func (o *Options) waitFor(ctx context.Context, what string, timeout time.Duration, cond func(context.Context) bool) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range componentNames {
			if p, ok := readProc(o, name); ok && !p.alive() {
				return false, fmt.Errorf("%s exited; last lines of %s:\n%s", name, logFile(o, name), Tail(logFile(o, name), 12))
			}
		}
		return cond(ctx), nil
	})
	if err != nil && wait.Interrupted(err) {
		return fmt.Errorf("waiting for %s: not ready after %s (logs in %s)", what, timeout, o.path("logs"))
	}
	return err
}

func nodeReady(ctx context.Context, c kubernetes.Interface, name string) bool {
	return nodeReadySince(ctx, c, name, time.Time{})
}

// nodeReadySince is nodeReady with a Ready condition its kubelet posted at
// or after since (to the second): not the one a kubelet that is gone left.
func nodeReadySince(ctx context.Context, c kubernetes.Interface, name string, since time.Time) bool {
	node, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	// The node lifecycle controller removes the not-ready taint a moment
	// after Ready turns true; until then the scheduler refuses pods.
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue && !cond.LastHeartbeatTime.Time.Before(since.Truncate(time.Second))
		}
	}
	return false
}

// Client returns a clientset for the lab's admin kubeconfig whose
// requests end after 10 s.
func (o *Options) Client() (*kubernetes.Clientset, error) {
	cfg, err := o.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 10 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// RESTConfig is the client config of the lab's admin kubeconfig, at 50
// requests a second (burst 100): client-go's default of 5 throttles the
// tests' bursts (the planner's property test sends ~1,600 dry-run patches),
// and the lab's API server serves one admin client at this rate easily.
func (o *Options) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig())
	if err != nil {
		return nil, fmt.Errorf("loading lab kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// runningComponents lists the recorded components that still run.
func runningComponents(o *Options) []string {
	var names []string
	for _, n := range componentNames {
		if p, ok := readProc(o, n); ok && p.alive() {
			names = append(names, n)
		}
	}
	return names
}

// Health of one component, for status.
type Health struct {
	Name    string
	PID     int
	Running bool
	Healthy bool
	Detail  string
	// RSSBytes is the process's resident memory (VmRSS), 0 if unknown.
	RSSBytes uint64
}

// RegistryURL is the lab registry's base URL (plain HTTP).
func (o *Options) RegistryURL() string { return "http://" + o.Registry() }

func kubeProxyHealthz(o *Options) string { return "http://" + o.NodeIP + ":10256/healthz" }

// kubeProxySynced reports whether kube-proxy has written its rules once.
// Its healthz says ok before that (nothing is pending until its informers
// have synced), and a pod dialling the kubernetes Service then times out;
// the first full sync, which has the Services and EndpointSlices that
// exist, sets the metric read here.
func kubeProxySynced(o *Options) bool {
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + o.NodeIP + ":10249/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return false
	}
	return lastSyncSeconds(string(body)) > 0
}

// lastSyncSeconds is kubeproxy_sync_proxy_rules_last_timestamp_seconds of
// the IPv4 rules in a Prometheus text exposition, 0 when absent.
func lastSyncSeconds(metrics string) float64 {
	const name = "kubeproxy_sync_proxy_rules_last_timestamp_seconds"
	for _, line := range strings.Split(metrics, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		if labels, after, ok := strings.Cut(rest, "}"); ok && strings.HasPrefix(labels, "{") {
			if !strings.Contains(labels, `ip_family="IPv4"`) {
				continue
			}
			rest = after
		}
		if !strings.HasPrefix(rest, " ") {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
			return v
		}
	}
	return 0
}

// probe GETs url and reports whether it answered 200, with the start of
// the body (or the error) as detail.
func probe(url string) (bool, string) {
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // self-signed healthz of lab components
	}}
	resp, err := insecure.Get(url)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	return resp.StatusCode == http.StatusOK, strings.TrimSpace(string(body))
}

// Status reports each component's PID and health.
func Status(ctx context.Context, o *Options) []Health {
	urls := map[string]string{
		"etcd":                    "http://" + o.NodeIP + ":2381/health",
		"kube-controller-manager": "https://" + o.NodeIP + ":10257/healthz",
		"kube-scheduler":          "https://" + o.NodeIP + ":10259/healthz",
		"registry":                o.RegistryURL() + "/v2/",
		"kubelet":                 "http://" + o.NodeIP + ":10248/healthz",
		"kube-proxy":              kubeProxyHealthz(o),
	}
	var out []Health
	for _, n := range componentNames {
		h := Health{Name: n}
		p, ok := readProc(o, n)
		if ok {
			h.PID = p.PID
			h.Running = p.alive()
			if h.Running {
				h.RSSBytes = rssBytes(p.PID)
			}
		}
		switch {
		case !h.Running:
			h.Detail = "not running"
		case n == "kube-apiserver":
			if c, err := o.Client(); err == nil {
				body, rerr := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
				h.Healthy, h.Detail = rerr == nil, strings.TrimSpace(string(body))
				if rerr != nil {
					h.Detail = rerr.Error()
				}
			}
		case n == "containerd":
			_, err := os.Stat(containerdSock(o))
			h.Healthy, h.Detail = err == nil, containerdSock(o)
		default:
			h.Healthy, h.Detail = probe(urls[n])
		}
		out = append(out, h)
	}
	if h, ok := v2Health(ctx, o); ok {
		out = append(out, h)
	}
	return out
}

// loadBinary finds the static snug-load binary for the lab image.
func (o *Options) loadBinary() (string, error) {
	if o.LoadBinary != "" {
		return o.LoadBinary, nil
	}
	exe, err := os.Executable()
	if err == nil {
		cand := filepath.Join(filepath.Dir(exe), "snug-load")
		if _, err := os.Stat(cand); err == nil {
			return cand, nil
		}
	}
	return "", errors.New("snug-load not found next to this binary; build it with 'make build' or pass --load-binary")
}

// rssBytes reads VmRSS of a process from /proc, 0 when it cannot.
func rssBytes(pid int) uint64 { return procKB(pid, "status", "VmRSS:") }

// procKB is the "KEY N kB" line of /proc/PID/FILE in bytes, 0 when it
// cannot be read.
func procKB(pid int, file, key string) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}
