package experiment

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/cgroup"
)

// InstallOptions says how to install snug's Helm chart into a cluster whose
// nodes this machine can reach by pod IP (the lab), the way a user installs
// it: images from a registry, the agent a DaemonSet, the controller a
// Deployment.
type InstallOptions struct {
	// Helm is the helm binary; Chart the chart directory.
	Helm, Chart string
	// Kubeconfig is the admin kubeconfig helm uses.
	Kubeconfig string
	// Namespace and Release name the installation; empty means snug-system
	// and snug.
	Namespace, Release string
	// Registry and Tag name the images (image.registry, image.tag).
	Registry, Tag string
	// Node is the node whose agent AgentURL points at.
	Node string
	// AgentArgs and ControllerArgs become agent.extraArgs and
	// controller.extraArgs.
	AgentArgs, ControllerArgs []string
	// Set holds more --set key=value pairs.
	Set []string
	// NoController installs the agent only (controller.enabled=false).
	NoController bool
	// LogDir receives agent.log and controller.log when Stop runs; it is
	// created.
	LogDir string
	// Timeout bounds the install and each wait; zero means DefaultTimeout.
	Timeout time.Duration
}

// The chart's labels and ports, as charts/snug names them.
const (
	componentLabel   = "app.kubernetes.io/component"
	agentPort        = 9464
	controllerPort   = 9465
	leaseName        = "snug-controller"
	defaultRelease   = "snug"
	defaultInstallNS = "snug-system"
	// readerName is the ServiceAccount (and ClusterRoleBinding) whose
	// token reads the install's endpoints.
	readerName = "snug-lab-reader"
)

func (o *InstallOptions) release() string {
	if o.Release == "" {
		return defaultRelease
	}
	return o.Release
}

func (o *InstallOptions) namespace() string {
	if o.Namespace == "" {
		return defaultInstallNS
	}
	return o.Namespace
}

// helmArgs is the command line of `helm upgrade --install` for o.
func (o *InstallOptions) helmArgs(timeout time.Duration) ([]string, error) {
	args := []string{"upgrade", "--install", o.release(), o.Chart,
		"--namespace", o.namespace(), "--create-namespace", "--kubeconfig", o.Kubeconfig,
		"--wait", "--timeout", timeout.String()}
	if o.Registry != "" {
		args = append(args, "--set", "image.registry="+o.Registry)
	}
	if o.Tag != "" {
		args = append(args, "--set", "image.tag="+o.Tag)
	}
	if strings.HasSuffix(o.Tag, "-dirty") {
		// A tree with changes gives every build the same tag: pull each
		// time, or a node keeps running the image of an earlier build.
		args = append(args, "--set", "agent.image.pullPolicy=Always", "--set", "controller.image.pullPolicy=Always")
	}
	for key, list := range map[string][]string{"agent.extraArgs": o.AgentArgs, "controller.extraArgs": o.ControllerArgs} {
		if len(list) == 0 {
			continue
		}
		b, err := json.Marshal(list)
		if err != nil {
			return nil, err
		}
		args = append(args, "--set-json", key+"="+string(b))
	}
	if o.NoController {
		args = append(args, "--set", "controller.enabled=false")
	}
	for _, s := range o.Set {
		args = append(args, "--set", s)
	}
	return args, nil
}

// InstallSnug installs (or upgrades) the chart and returns once the agent
// on o.Node is ready and, unless NoController, a controller leads. Stop
// uninstalls it.
func InstallSnug(ctx context.Context, client kubernetes.Interface, o InstallOptions) (s *Snug, err error) {
	if o.Helm == "" || o.Chart == "" || o.Kubeconfig == "" || o.Node == "" || o.LogDir == "" {
		return nil, errors.New("install snug: Helm, Chart, Kubeconfig, Node and LogDir are required")
	}
	if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return nil, err
	}
	timeout := Env{Timeout: o.Timeout}.timeout()
	args, err := o.helmArgs(timeout)
	if err != nil {
		return nil, err
	}
	s = installed(client, o)
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
		}
	}()
	if out, herr := helm(ctx, o.Helm, args...); herr != nil {
		return s, fmt.Errorf("helm install of %s: %w\n%s", o.Chart, herr, out)
	}
	// The chart's endpoints want a reader's token and speak HTTPS with a
	// certificate each pod makes for itself at start.
	s.reader, err = NewReader(ctx, client, metav1.NamespaceDefault, readerName)
	if err != nil {
		return s, fmt.Errorf("making a reader of snug's endpoints: %w", err)
	}
	s.Token, s.HTTP = s.reader.Token, SelfSignedClient()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = poll(wctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		agentPod, err := s.readyPod(ctx, "agent", o.Node)
		if err != nil || agentPod == nil {
			return false, err
		}
		s.AgentPod = agentPod.Name
		s.AgentURL = fmt.Sprintf("https://%s:%d", agentPod.Status.PodIP, agentPort)
		if !s.httpOK(s.AgentURL + "/readyz") {
			return false, nil
		}
		if o.NoController {
			return true, nil
		}
		return s.leads(ctx, func(*corev1.Pod) bool { return true }), nil
	})
	if err != nil {
		return s, fmt.Errorf("waiting for snug's agent on %s to be ready and its controller to lead: %w", o.Node, err)
	}
	return s, nil
}

// Upgrade runs helm upgrade of the install to image tag (the other values
// kept) and returns once the DaemonSet's and Deployment's pods run it: a
// Ready agent on the node other than the one before, and a leader that is
// one of the new controller pods. AgentPod, AgentURL and ControllerPod
// follow.
func (s *Snug) Upgrade(ctx context.Context, tag string) error {
	if s.install == nil {
		return errors.New("upgrade snug: it is not installed in-cluster")
	}
	o := *s.install
	o.Tag = tag
	timeout := Env{Timeout: o.Timeout}.timeout()
	args, err := o.helmArgs(timeout)
	if err != nil {
		return err
	}
	if out, err := helm(ctx, o.Helm, args...); err != nil {
		return fmt.Errorf("helm upgrade to %s: %w\n%s", tag, err, out)
	}
	s.install.Tag = tag
	if err := s.WaitAgent(ctx, s.AgentPod); err != nil {
		return err
	}
	if o.NoController {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = poll(wctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		return s.leads(ctx, func(p *corev1.Pod) bool {
			return len(p.Spec.Containers) > 0 && strings.HasSuffix(p.Spec.Containers[0].Image, ":"+tag)
		}), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for a controller of %s to lead: %w", tag, err)
	}
	return nil
}

// leads reports whether the controllers' Lease names a Ready pod that is
// not terminating and that ok accepts, and points ControllerPod and
// ControllerMetricsURL at it. The holder identity starts with the pod's
// name; a Lease that an earlier install's controller still holds names a
// pod that is terminating or gone.
func (s *Snug) leads(ctx context.Context, ok func(*corev1.Pod) bool) bool {
	ns := s.install.namespace()
	l, err := s.client.CoordinationV1().Leases(ns).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return false
	}
	leader, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	p, err := s.client.CoreV1().Pods(ns).Get(ctx, leader, metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil || p.Status.PodIP == "" || !podReady(p) || !ok(p) {
		return false
	}
	s.ControllerPod = p.Name
	s.ControllerMetricsURL = controllerMetricsURL(p)
	return true
}

// ControllerMetricsURLs are the /metrics URLs of every Ready controller
// pod that is not terminating, by pod name: each serves snug's webhook,
// the leader and the standby alike.
func (s *Snug) ControllerMetricsURLs(ctx context.Context) (map[string]string, error) {
	if s.install == nil {
		return nil, errors.New("the controllers' metrics: snug is not installed in-cluster")
	}
	pods, err := s.client.CoreV1().Pods(s.install.namespace()).List(ctx, metav1.ListOptions{LabelSelector: componentLabel + "=controller"})
	if err != nil {
		return nil, fmt.Errorf("listing the controller pods: %w", err)
	}
	out := map[string]string{}
	for i := range pods.Items {
		if p := &pods.Items[i]; serving(p) {
			out[p.Name] = controllerMetricsURL(p)
		}
	}
	return out, nil
}

// controllerMetricsURL is controller pod p's /metrics URL.
func controllerMetricsURL(p *corev1.Pod) string {
	return fmt.Sprintf("https://%s:%d/metrics", p.Status.PodIP, controllerPort)
}

// KillLeader crashes the leading controller: SIGKILL to every process of
// its container, found through the pod's cgroup under cgroupRoot (the
// lab's node is this machine), so that it neither releases the Lease nor
// finishes its work, as on a node lost or an OOM kill; then the pod is
// deleted with a grace period of 0 so that the Deployment replaces it. The
// standby takes over when the Lease expires. (A pod deletion alone is a
// SIGTERM: the controller would hand the Lease over cleanly.) It returns
// the pod's name.
func (s *Snug) KillLeader(ctx context.Context, cgroupRoot string) (string, error) {
	if s.install == nil {
		return "", errors.New("kill the leader: snug is not installed in-cluster")
	}
	if !s.leads(ctx, func(*corev1.Pod) bool { return true }) {
		return "", errors.New("kill the leader: no Ready controller pod holds the Lease")
	}
	leader := s.ControllerPod
	ns := s.install.namespace()
	p, err := s.client.CoreV1().Pods(ns).Get(ctx, leader, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("kill the leader: %w", err)
	}
	var killed int
	for _, st := range p.Status.ContainerStatuses {
		path, err := cgroup.Reader{Root: cgroupRoot}.Find(string(p.UID), string(p.Status.QOSClass), st.ContainerID)
		if err != nil {
			return "", fmt.Errorf("kill the leader: finding container %s's cgroup: %w", st.Name, err)
		}
		dir := path.Memory
		if dir == "" {
			dir = path.Unified
		}
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return "", fmt.Errorf("kill the leader: %w", err)
		}
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed++
			}
		}
	}
	if killed == 0 {
		return "", fmt.Errorf("kill the leader: no process of pod %s found to kill", leader)
	}
	err = s.client.CoreV1().Pods(ns).Delete(ctx, leader, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("deleting the killed controller pod %s: %w", leader, err)
	}
	return leader, nil
}

// WaitLeader waits until a Ready controller pod other than old holds the
// Lease, points ControllerPod and ControllerMetricsURL at it and returns
// its name.
func (s *Snug) WaitLeader(ctx context.Context, old string) (string, error) {
	if s.install == nil {
		return "", errors.New("wait for a leader: snug is not installed in-cluster")
	}
	err := poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		return s.leads(ctx, func(p *corev1.Pod) bool { return p.Name != old }), nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for a controller other than %s to lead: %w", old, err)
	}
	return s.ControllerPod, nil
}

// WaitAgent waits until a Ready agent pod other than old runs on the
// install's node and answers /readyz (the DaemonSet replaced a deleted
// one), and points AgentPod and AgentURL at it.
func (s *Snug) WaitAgent(ctx context.Context, old string) error {
	if s.install == nil {
		return errors.New("wait for the agent: snug is not installed in-cluster")
	}
	pod, url, err := s.waitAgentOn(ctx, s.install.Node, old)
	if err != nil {
		return fmt.Errorf("waiting for an agent pod to replace %s: %w", old, err)
	}
	s.AgentPod, s.AgentURL = pod, url
	return nil
}

// AgentOn waits until the agent pod on node is Ready and answers /readyz,
// and returns its name and HTTPS base URL: the agent of another node than
// the install's.
func (s *Snug) AgentOn(ctx context.Context, node string) (pod, url string, err error) {
	if s.install == nil {
		return "", "", errors.New("the agent on a node: snug is not installed in-cluster")
	}
	pod, url, err = s.waitAgentOn(ctx, node, "")
	if err != nil {
		return "", "", fmt.Errorf("waiting for snug's agent on %s to be ready: %w", node, err)
	}
	return pod, url, nil
}

// waitAgentOn waits, within the install's timeout, until a Ready agent pod
// other than old runs on node and answers /readyz, and returns its name and
// HTTPS base URL.
func (s *Snug) waitAgentOn(ctx context.Context, node, old string) (pod, url string, err error) {
	ctx, cancel := context.WithTimeout(ctx, Env{Timeout: s.install.Timeout}.timeout())
	defer cancel()
	err = poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		p, err := s.readyPod(ctx, "agent", node)
		if err != nil || p == nil || p.Name == old {
			return false, err
		}
		pod, url = p.Name, fmt.Sprintf("https://%s:%d", p.Status.PodIP, agentPort)
		return s.httpOK(url + "/readyz"), nil
	})
	return pod, url, err
}

// readyPod returns the component's Ready pod (on node, when given), nil
// while there is none.
func (s *Snug) readyPod(ctx context.Context, component, node string) (*corev1.Pod, error) {
	lo := metav1.ListOptions{LabelSelector: componentLabel + "=" + component}
	if node != "" {
		lo.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
	}
	pods, err := s.client.CoreV1().Pods(s.install.namespace()).List(ctx, lo)
	if err != nil {
		return nil, nil // the API server may be starting; keep polling
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; serving(p) {
			return p, nil
		}
	}
	return nil, nil
}

// serving reports whether p is Ready with an IP and not terminating.
func serving(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.PodIP != "" && podReady(p)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// saveLogs writes the current logs of the agent and controller pods to
// AgentLog and ControllerLog.
func (s *Snug) saveLogs(ctx context.Context) error {
	var errs []error
	for component, path := range map[string]string{"agent": s.AgentLog, "controller": s.ControllerLog} {
		pods, err := s.client.CoreV1().Pods(s.install.namespace()).List(ctx, metav1.ListOptions{LabelSelector: componentLabel + "=" + component})
		if err != nil {
			errs = append(errs, fmt.Errorf("listing snug's %s pods: %w", component, err))
			continue
		}
		var buf bytes.Buffer
		for _, p := range pods.Items {
			fmt.Fprintf(&buf, "=== pod %s (node %s)\n", p.Name, p.Spec.NodeName)
			rc, err := s.client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).Stream(ctx)
			if err != nil {
				fmt.Fprintf(&buf, "(no log: %v)\n", err)
				continue
			}
			_, _ = io.Copy(&buf, rc)
			rc.Close()
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SelfSignedClient is an HTTP client for endpoints that serve a
// certificate their process made at start (--tls without files): the lab's
// clients check the bearer-token path, not the certificate.
func SelfSignedClient() *http.Client {
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // self-signed, made by the pod at start
	}}
}

func (s *Snug) httpOK(url string) bool {
	c := s.HTTP
	if c == nil {
		c = &http.Client{Timeout: 2 * time.Second}
	}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// AgentAPI is a client of the agent's JSON API with the reader's token.
func (s *Snug) AgentAPI() *agent.APIClient {
	return agentClient(s.AgentURL, s.Token, s.HTTP)
}

// uninstall saves the pods' logs, runs `helm uninstall --wait` and
// deletes the reader.
func (s *Snug) uninstall(ctx context.Context) error {
	o := s.install
	timeout := Env{Timeout: o.Timeout}.timeout()
	ctx, cancel := context.WithTimeout(ctx, 2*timeout)
	defer cancel()
	lerr := s.saveLogs(ctx)
	out, err := helm(ctx, o.Helm, "uninstall", o.release(), "--namespace", o.namespace(),
		"--kubeconfig", o.Kubeconfig, "--wait", "--timeout", timeout.String())
	if err != nil {
		lerr = errors.Join(lerr, fmt.Errorf("helm uninstall %s: %w\n%s", o.release(), err, out))
	} else {
		// helm's --wait sees the DaemonSet and Deployment go; their pods
		// terminate after. The next install must not meet them (an old
		// controller still holding the Lease, an old agent resizing).
		lerr = errors.Join(lerr, s.waitPodsGone(ctx))
	}
	if s.reader != nil {
		lerr = errors.Join(lerr, s.reader.Delete(ctx))
		s.reader = nil
	}
	return lerr
}

// waitPodsGone waits until no agent or controller pod of the install is
// left in its namespace.
func (s *Snug) waitPodsGone(ctx context.Context) error {
	var left []string
	err := poll(ctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		pods, err := s.client.CoreV1().Pods(s.install.namespace()).List(ctx, metav1.ListOptions{LabelSelector: componentLabel + " in (agent,controller)"})
		if err != nil {
			return false, nil // the API server may be restarting; keep polling
		}
		left = left[:0]
		for _, p := range pods.Items {
			left = append(left, p.Name)
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("snug's pods %v still there after helm uninstall: %w", left, err)
	}
	return nil
}

// helm runs the helm binary and returns its combined output.
func helm(ctx context.Context, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	out, err := cmd.CombinedOutput()
	return bytes.TrimSpace(out), err
}

// installed is the Snug of the chart install o: its pods' logs go to
// o.LogDir when it is uninstalled.
func installed(client kubernetes.Interface, o InstallOptions) *Snug {
	return &Snug{
		AgentLog:      filepath.Join(o.LogDir, "agent.log"),
		ControllerLog: filepath.Join(o.LogDir, "controller.log"),
		install:       &o,
		client:        client,
	}
}

// UninstallSnug removes an install that InstallSnug made and left running
// (snug-lab install): it saves the pods' logs to o.LogDir, runs helm
// uninstall, waits until the agent and controller pods are gone and
// deletes the reader InstallSnug made. An install that is not there is an
// error that says so, and nothing changes.
func UninstallSnug(ctx context.Context, client kubernetes.Interface, o InstallOptions) error {
	if o.Helm == "" || o.Kubeconfig == "" || o.LogDir == "" {
		return errors.New("uninstall snug: Helm, Kubeconfig and LogDir are required")
	}
	if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return err
	}
	out, err := helm(ctx, o.Helm, "status", o.release(), "--namespace", o.namespace(), "--kubeconfig", o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("no release %s in namespace %s to uninstall: %w\n%s", o.release(), o.namespace(), err, out)
	}
	s := installed(client, o)
	s.reader = &Reader{Namespace: metav1.NamespaceDefault, Name: readerName, client: client}
	return s.uninstall(ctx)
}
