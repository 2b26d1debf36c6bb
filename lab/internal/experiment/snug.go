package experiment

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SnugOptions says how to run snug's agent and controller as processes of
// this machine against a cluster whose node is this machine (the lab).
type SnugOptions struct {
	// BinDir holds the snug-agent and snug-controller binaries to run.
	BinDir string
	// Node is the name of this machine's node, for the agent's --node.
	Node string
	// Kubeconfig is the agent's kubeconfig.
	Kubeconfig string
	// ControllerKubeconfig is the controller's kubeconfig; empty means
	// Kubeconfig.
	ControllerKubeconfig string
	// AgentArgs and ControllerArgs are appended to each command line
	// (they may override the defaults, the last flag wins).
	AgentArgs, ControllerArgs []string
	// LogDir receives agent.log and controller.log; it is created.
	LogDir string
	// LeaseNamespace is where the controller's leader election Lease lives;
	// empty means kube-system.
	LeaseNamespace string
	// Timeout bounds each start-up wait; zero means DefaultTimeout.
	Timeout time.Duration
}

// Snug is a running agent and controller, started by StartSnug.
type Snug struct {
	// AgentURL is the agent's HTTP base (http://127.0.0.1:port): /metrics,
	// /readyz, /snug/v1/.
	AgentURL string
	// ControllerMetricsURL is the controller's /metrics URL.
	ControllerMetricsURL string
	// Token is the bearer token of a ServiceAccount bound to
	// snug-metrics-reader (NewReader), for /metrics and /snug/v1/ of
	// both: they run with --auth unless AgentArgs or ControllerArgs
	// turn it off.
	Token string
	// HTTP is the client for those endpoints;
	// an in-cluster install's speak HTTPS with self-signed certificates.
	HTTP *http.Client
	// AgentLog and ControllerLog are the paths of their output (for an
	// in-cluster install, written by Stop).
	AgentLog, ControllerLog string
	// AgentPod and ControllerPod name the pods of an in-cluster install
	// (the agent on the node, the controller that leads).
	AgentPod, ControllerPod string

	agent, controller *proc
	// install is set for an in-cluster install, which Stop uninstalls.
	install *InstallOptions
	client  kubernetes.Interface
	reader  *Reader
}

// proc is one started process and the channel its Wait result arrives on.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    *os.File
	exited chan error
}

func startProc(name, logPath, bin string, args ...string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting snug-%s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: f, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	return p, nil
}

// exitedErr reports whether the process has already exited, without waiting.
func (p *proc) exitedErr() error {
	select {
	case err := <-p.exited:
		p.exited <- err
		return fmt.Errorf("snug %s exited early: %v (log %s)", p.name, err, p.log.Name())
	default:
		return nil
	}
}

// stop sends SIGTERM to the process by its PID and waits up to grace for it
// to exit, then kills it.
func (p *proc) stop(grace time.Duration) error {
	defer p.log.Close()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err
		if err != nil {
			return fmt.Errorf("snug %s exited with %v after SIGTERM (log %s)", p.name, err, p.log.Name())
		}
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		err := <-p.exited
		p.exited <- err
		return fmt.Errorf("snug %s did not stop within %v of SIGTERM (log %s)", p.name, grace, p.log.Name())
	}
}

// StartSnug starts `snug-agent --autoscale` and `snug-controller
// --install-crds` from o.BinDir and returns once the agent is ready and the controller
// holds its Lease. Both guard their endpoints (--auth); Snug.Token is a
// reader's token for them, of the ServiceAccount default/snug-lab-reader
// (NewReader). Stop ends both and deletes the reader.
func StartSnug(ctx context.Context, client kubernetes.Interface, o SnugOptions) (s *Snug, err error) {
	if o.BinDir == "" || o.Node == "" || o.Kubeconfig == "" || o.LogDir == "" {
		return nil, errors.New("start snug: BinDir, Node, Kubeconfig and LogDir are required")
	}
	if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return nil, err
	}
	timeout := Env{Timeout: o.Timeout}.timeout()
	addrs, err := freeAddrs(3)
	if err != nil {
		return nil, err
	}
	s = &Snug{
		HTTP:                 &http.Client{Timeout: 15 * time.Second},
		AgentURL:             "http://" + addrs[0],
		ControllerMetricsURL: "http://" + addrs[1] + "/metrics",
		AgentLog:             filepath.Join(o.LogDir, "agent.log"),
		ControllerLog:        filepath.Join(o.LogDir, "controller.log"),
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
		}
	}()
	s.reader, err = NewReader(ctx, client, metav1.NamespaceDefault, "snug-lab-reader")
	if err != nil {
		return s, fmt.Errorf("making a reader of snug's endpoints: %w", err)
	}
	s.Token = s.reader.Token
	ckube := o.ControllerKubeconfig
	if ckube == "" {
		ckube = o.Kubeconfig
	}
	leaseNS := o.LeaseNamespace
	if leaseNS == "" {
		leaseNS = "kube-system"
	}
	s.controller, err = startProc("controller", s.ControllerLog, filepath.Join(o.BinDir, "snug-controller"), append([]string{
		"--kubeconfig", ckube, "--install-crds", "--leader-election-namespace", leaseNS,
		"--metrics-addr", addrs[1], "--health-addr", addrs[2]}, o.ControllerArgs...)...)
	if err != nil {
		return s, err
	}
	s.agent, err = startProc("agent", s.AgentLog, filepath.Join(o.BinDir, "snug-agent"), append([]string{"--autoscale",
		"--node", o.Node, "--kubeconfig", o.Kubeconfig, "--listen", addrs[0], "-v", "1"}, o.AgentArgs...)...)
	if err != nil {
		return s, err
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = poll(wctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		if err := errors.Join(s.agent.exitedErr(), s.controller.exitedErr()); err != nil {
			return false, err
		}
		if !httpOK(s.AgentURL+"/readyz") || !httpOK("http://"+addrs[2]+"/healthz") {
			return false, nil
		}
		l, err := client.CoordinationV1().Leases(leaseNS).Get(ctx, "snug-controller", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
	})
	if err != nil {
		return s, fmt.Errorf("waiting for snug's agent to be ready and its controller to lead: %w", err)
	}
	return s, nil
}

// Stop ends the agent and the controller: host processes by their PIDs
// (SIGTERM, then SIGKILL after 30 s), reporting an unclean exit; an
// in-cluster install by helm uninstall, after saving the pods' logs. Both
// delete the reader.
func (s *Snug) Stop() error {
	if s.install != nil {
		err := s.uninstall(context.Background())
		s.install = nil
		return err
	}
	var errs []error
	for _, p := range []*proc{s.agent, s.controller} {
		if p != nil {
			errs = append(errs, p.stop(30*time.Second))
		}
	}
	if s.reader != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, s.reader.Delete(ctx))
		cancel()
	}
	s.agent, s.controller, s.reader = nil, nil, nil
	return errors.Join(errs...)
}

func httpOK(url string) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// freeAddrs returns n distinct free loopback addresses.
func freeAddrs(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}
