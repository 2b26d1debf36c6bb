package vpa

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/snug-dev/snug/lab/internal/lab"
)

// ErrAlreadyUp is returned by Up when every process already runs; nothing
// was changed.
var ErrAlreadyUp = errors.New("VPA and metrics-server are already up")

// Process names, in start order (stop goes in reverse). They are the names
// under which the lab records the PIDs and logs.
const (
	MetricsServer       = "metrics-server"
	AdmissionController = "vpa-admission-controller"
	Recommender         = "vpa-recommender"
	Updater             = "vpa-updater"
)

var processNames = []string{MetricsServer, AdmissionController, Recommender, Updater}

// metricsAddresses are VPA's Prometheus and health-check addresses
// (--address). Upstream binds them to all interfaces (":8942"...); on the
// host they are kept on loopback.
var metricsAddresses = map[string]string{
	Recommender:         "127.0.0.1:8942",
	Updater:             "127.0.0.1:8943",
	AdmissionController: "127.0.0.1:8944",
}

// Up builds (once) and starts metrics-server and VPA against the lab, which
// must be up, and waits until metrics.k8s.io is served and the webhook is
// registered. On failure it stops what it started.
func Up(ctx context.Context, o *Options, log io.Writer) (err error) {
	if err := o.Validate(); err != nil {
		return err
	}
	switch running := runningProcesses(o); {
	case len(running) == len(processNames):
		return ErrAlreadyUp
	case len(running) > 0:
		return fmt.Errorf("VPA is partly up (%s running); run 'snug-lab vpa down' first", strings.Join(running, ", "))
	}
	c, dyn, err := clients(o)
	if err != nil {
		return err
	}
	if err := c.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
		return fmt.Errorf("the lab's API server is not ready (run 'snug-lab up' first): %w", err)
	}
	start := time.Now()
	if err := EnsureBinaries(ctx, o, log); err != nil {
		return err
	}
	certs, err := writeWebhookCerts(o.dir("certs"), net.ParseIP(o.Lab.HostIP), time.Now())
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			fmt.Fprintf(log, "vpa up failed; cleaning up (logs stay in %s)\n", filepath.Dir(lab.LogFile(o.Lab, MetricsServer)))
			if derr := Down(context.WithoutCancel(ctx), o, io.Discard); derr != nil {
				err = fmt.Errorf("%w; cleanup: %v", err, derr)
			}
		}
	}()

	fmt.Fprintf(log, "installing VPA v%s CRDs\n", o.VPAVersion)
	if err := o.establishCRDs(ctx, dyn); err != nil {
		return err
	}

	fmt.Fprintf(log, "starting %s v%s on %s:%d\n", MetricsServer, o.MetricsServerVersion, o.Lab.HostIP, o.MetricsServerPort)
	if err := applyMetricsAPI(ctx, c, dyn, o.Lab.HostIP, o.MetricsServerPort); err != nil {
		return err
	}
	if _, err := lab.StartProcess(o.Lab, MetricsServer, o.argv(MetricsServer, certs)); err != nil {
		return err
	}
	err = o.waitFor(ctx, "APIService "+metricsAPI+" available", func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(apiServiceGVR).Get(ctx, metricsAPI, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ok, _ := hasCondition(u, "Available")
		return ok, nil
	})
	if err != nil {
		return err
	}

	fmt.Fprintf(log, "starting %s (webhook https://%s:%d)\n", AdmissionController, o.Lab.HostIP, o.WebhookPort)
	if _, err := lab.StartProcess(o.Lab, AdmissionController, o.argv(AdmissionController, certs)); err != nil {
		return err
	}
	// It registers its webhook after a delay, and renews its status lease
	// from then on; the updater acts only while that lease is fresh.
	err = o.waitFor(ctx, "the VPA webhook registered", func(ctx context.Context) (bool, error) {
		_, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, webhookConfig, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return err
	}
	for _, name := range []string{Recommender, Updater} {
		fmt.Fprintf(log, "starting %s\n", name)
		if _, err := lab.StartProcess(o.Lab, name, o.argv(name, certs)); err != nil {
			return err
		}
	}
	for _, name := range []string{Recommender, Updater} {
		err := o.waitFor(ctx, name+" healthy", func(context.Context) (bool, error) {
			ok, _ := probe("http://" + metricsAddresses[name] + "/health-check")
			return ok, nil
		})
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "vpa up: VPA v%s and metrics-server v%s in %.1fs (logs: %s)\n",
		o.VPAVersion, o.MetricsServerVersion, time.Since(start).Seconds(), filepath.Dir(lab.LogFile(o.Lab, MetricsServer)))
	return nil
}

// argv is the command line of one process: upstream's defaults, with what
// running on the host instead of in a pod requires (kubeconfig, addresses,
// certificate files, registration by URL).
func (o *Options) argv(name string, certs webhookCerts) []string {
	kubeconfig := "--kubeconfig=" + o.Lab.Kubeconfig()
	switch name {
	case MetricsServer:
		return []string{filepath.Join(o.MetricsServerBinDir(), "metrics-server"),
			kubeconfig,
			"--authentication-kubeconfig=" + o.Lab.Kubeconfig(),
			"--authorization-kubeconfig=" + o.Lab.Kubeconfig(),
			"--bind-address=" + o.Lab.HostIP,
			"--secure-port=" + strconv.Itoa(o.MetricsServerPort),
			"--cert-dir=" + o.dir("metrics-server-certs"),
			// As its manifests ship, less the address types the lab's
			// node does not have.
			"--kubelet-preferred-address-types=InternalIP",
			"--kubelet-use-node-status-port",
			"--metric-resolution=" + o.MetricResolution.String(),
			// The kubelet's serving certificate is the lab CA's, but
			// metrics-server is not told about that CA.
			"--kubelet-insecure-tls",
		}
	case AdmissionController:
		return []string{filepath.Join(o.VPABinDir(), "admission-controller"),
			kubeconfig,
			"--address=" + metricsAddresses[name],
			"--client-ca-file=" + certs.CA,
			"--tls-cert-file=" + certs.Cert,
			"--tls-private-key=" + certs.Key,
			"--port=" + strconv.Itoa(o.WebhookPort),
			"--register-by-url=true",
			"--webhook-address=https://" + o.Lab.HostIP,
			"--webhook-port=" + strconv.Itoa(o.WebhookPort),
		}
	default: // recommender, updater
		return []string{filepath.Join(o.VPABinDir(), strings.TrimPrefix(name, "vpa-")),
			kubeconfig,
			"--address=" + metricsAddresses[name],
		}
	}
}

// Down stops the processes and removes the registrations that point the
// API server at them. A lab that is down, or VPA that is not up, is no
// error.
func Down(ctx context.Context, o *Options, log io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	var errs []error
	if running := runningProcesses(o); len(running) > 0 {
		fmt.Fprintf(log, "stopping %s\n", strings.Join(running, ", "))
	}
	for i := len(processNames) - 1; i >= 0; i-- {
		errs = append(errs, lab.StopProcess(o.Lab, processNames[i], 10*time.Second))
	}
	if c, dyn, err := clients(o); err == nil {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if c.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() == nil {
			errs = append(errs, deleteRegistrations(ctx, c, dyn))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("vpa down: %w", err)
	}
	return nil
}

// Health of one process, for Status.
type Health struct {
	Name    string
	PID     int
	Running bool
	Healthy bool
	Detail  string
}

// Status reports each process's PID and health, and whether the API server
// serves metrics.k8s.io.
func Status(ctx context.Context, o *Options) []Health {
	var out []Health
	for _, name := range processNames {
		h := Health{Name: name}
		h.PID, h.Running = lab.ProcessRunning(o.Lab, name)
		switch {
		case !h.Running:
			h.Detail = "not running"
		case name == MetricsServer:
			h.Healthy, h.Detail = probe(fmt.Sprintf("https://%s/readyz", net.JoinHostPort(o.Lab.HostIP, strconv.Itoa(o.MetricsServerPort))))
		default:
			h.Healthy, h.Detail = probe("http://" + metricsAddresses[name] + "/health-check")
		}
		out = append(out, h)
	}
	h := Health{Name: "apiservice/" + metricsAPI, Detail: "not registered"}
	if _, dyn, err := clients(o); err == nil {
		if u, err := dyn.Resource(apiServiceGVR).Get(ctx, metricsAPI, metav1.GetOptions{}); err == nil {
			h.Running = true
			h.Healthy, h.Detail = hasCondition(u, "Available")
		} else if !apierrors.IsNotFound(err) {
			h.Detail = err.Error()
		}
	}
	return append(out, h)
}

func runningProcesses(o *Options) []string {
	var names []string
	for _, n := range processNames {
		if _, ok := lab.ProcessRunning(o.Lab, n); ok {
			names = append(names, n)
		}
	}
	return names
}

func clients(o *Options) (*kubernetes.Clientset, *dynamic.DynamicClient, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Lab.Kubeconfig())
	if err != nil {
		return nil, nil, fmt.Errorf("loading lab kubeconfig: %w", err)
	}
	cfg.Timeout = 10 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("making a lab client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("making a lab client: %w", err)
	}
	return c, dyn, nil
}

// waitFor polls cond every 250ms until it holds, ReadyTimeout passes, or
// one of the started processes dies (then the error carries its log's end).
func (o *Options) waitFor(ctx context.Context, what string, cond wait.ConditionWithContextFunc) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, o.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range processNames {
			if pid, running := lab.ProcessRunning(o.Lab, name); pid > 0 && !running {
				path := lab.LogFile(o.Lab, name)
				return false, fmt.Errorf("%s exited; last lines of %s:\n%s", name, path, lab.Tail(path, 12))
			}
		}
		return cond(ctx)
	})
	if err != nil && wait.Interrupted(err) {
		return fmt.Errorf("waiting for %s: not ready after %s", what, o.ReadyTimeout)
	}
	return err
}

// probe GETs a health endpoint; the processes' certificates are
// self-signed, and only their answer matters here.
func probe(url string) (bool, string) {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // self-signed health endpoints of lab processes
	}}
	resp, err := client.Get(url)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	detail := strings.TrimSpace(string(body))
	if detail == "" {
		detail = resp.Status
	}
	return resp.StatusCode == http.StatusOK, detail
}

// InstallCRDs builds VPA (once, for its manifests) and installs only its
// CRDs in the lab, waiting until they are established: VPA objects can then
// be created, and nothing acts on them. Up installs the same CRDs.
func InstallCRDs(ctx context.Context, o *Options, log io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := o.vpa().Ensure(ctx, o.Lab.CacheDir, log); err != nil {
		return err
	}
	_, dyn, err := clients(o)
	if err != nil {
		return err
	}
	if err := o.establishCRDs(ctx, dyn); err != nil {
		return err
	}
	fmt.Fprintf(log, "VPA v%s CRDs installed\n", o.VPAVersion)
	return nil
}

// establishCRDs applies VPA's CRDs and waits until the API server serves
// each of them.
func (o *Options) establishCRDs(ctx context.Context, dyn dynamic.Interface) error {
	crds, err := applyCRDs(ctx, dyn, o.vpa().File(o.Lab.CacheDir, crdManifest))
	if err != nil {
		return err
	}
	for _, name := range crds {
		err := o.waitFor(ctx, "CRD "+name+" established", func(ctx context.Context) (bool, error) {
			u, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			ok, _ := hasCondition(u, "Established")
			return ok, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
