//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/internal/actuate"
	"github.com/snug-dev/snug/internal/kube"
	"github.com/snug-dev/snug/internal/resize"
	"github.com/snug-dev/snug/lab/internal/experiment"
)

const (
	busybox   = "docker.io/library/busybox:1.36"
	loadImage = "snug.dev/snug-load:latest"
	sleepSh   = `trap 'exit 0' TERM; sleep 3600 & wait`
	waitLimit = 2 * time.Minute
)

// testNamespace makes a namespace for one test and, at cleanup, deletes it
// and waits until it is gone: other tests measure the node's room.
func testNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := experiment.DeleteNamespace(context.Background(), client, ns.Name, 2*time.Minute); err != nil {
			t.Error(err)
		}
	})
	return ns.Name
}

// pollUntil calls cond every interval until it is true, fails, or ctx ends.
func pollUntil(ctx context.Context, interval time.Duration, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// podShape describes a test pod's one container ("" leaves a value out).
type podShape struct {
	name                           string
	cpuReq, cpuLim, memReq, memLim string
	cpuPolicy, memPolicy           corev1.ResourceResizeRestartPolicy
	restartPolicy                  corev1.RestartPolicy
	image                          string
	args                           []string
	gated                          bool
}

func list(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
		}
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

func (s podShape) pod() *corev1.Pod {
	grace := int64(1)
	c := corev1.Container{
		Name: "app", Image: busybox, ImagePullPolicy: corev1.PullNever,
		Command: []string{"sh", "-c", sleepSh},
		Resources: corev1.ResourceRequirements{
			Requests: list("cpu", s.cpuReq, "memory", s.memReq),
			Limits:   list("cpu", s.cpuLim, "memory", s.memLim),
		},
	}
	if s.image != "" {
		c.Image, c.Command, c.Args = s.image, nil, s.args
	}
	if s.cpuPolicy != "" {
		c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: corev1.ResourceCPU, RestartPolicy: s.cpuPolicy})
	}
	if s.memPolicy != "" {
		c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: corev1.ResourceMemory, RestartPolicy: s.memPolicy})
	}
	rp := s.restartPolicy
	if rp == "" {
		rp = corev1.RestartPolicyAlways
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}, RestartPolicy: rp, TerminationGracePeriodSeconds: &grace},
	}
	if s.gated {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "snug.dev/never"}}
	}
	return p
}

// createRunning creates the pod and waits until every container runs and
// reports its resources.
func createRunning(t *testing.T, ns string, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return waitPod(t, ns, pod.Name, "running", func(p *corev1.Pod) bool {
		if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
			return false
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil || cs.Resources == nil {
				return false
			}
		}
		return true
	})
}

// waitPod polls the pod until cond holds.
func waitPod(t *testing.T, ns, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var last *corev1.Pod
	err := pollUntil(ctx, 100*time.Millisecond, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		if cond(p) {
			return true, nil
		}
		return false, errV2Hung()
	})
	if err != nil {
		skipIfV2Hung(t, "waiting for pod %s/%s %s: %v", ns, name, what, err)
		t.Fatalf("waiting for pod %s/%s %s: %v (last status: %+v)", ns, name, what, err, statusOf(last))
	}
	return last
}

func statusOf(p *corev1.Pod) any {
	if p == nil {
		return nil
	}
	return struct {
		Phase      corev1.PodPhase
		Conditions []corev1.PodCondition
	}{p.Status.Phase, p.Status.Conditions}
}

// plan gathers the pod's input and plans the wish.
func plan(t *testing.T, act *actuate.Actuator, ns, name string, wish resize.ContainerWish, usage map[string]resize.Usage, opts resize.Options) (*actuate.Target, *resize.Plan) {
	t.Helper()
	target, err := act.Gather(context.Background(), ns, name)
	if err != nil {
		t.Fatalf("gathering %s/%s: %v", ns, name, err)
	}
	p, err := resize.NewPlan(target.Input(resize.Wish{Containers: []resize.ContainerWish{wish}}, usage, opts))
	if err != nil {
		t.Fatalf("planning %s/%s: %v", ns, name, err)
	}
	t.Logf("plan for %s: %s; predicted %s; notes %v", name, p.Patch, p.Predicted, p.Notes)
	return target, p
}

func serverMinor(t *testing.T) int {
	t.Helper()
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("reading server version: %v", err)
	}
	var minor int
	fmt.Sscanf(strings.TrimRight(v.Minor, "+"), "%d", &minor)
	return minor
}

// clientWithTimeout is a core/v1 client (internal/kube, as the agent's)
// for the lab whose every request (watches too) ends after timeout.
func clientWithTimeout(t *testing.T, timeout time.Duration) *kube.Client {
	t.Helper()
	c, err := coreClient(timeout)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// coreClient is a core/v1 client (internal/kube) for the lab whose
// requests end after timeout; 0 means no timeout.
func coreClient(timeout time.Duration) (*kube.Client, error) {
	cfg, err := labOpts.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = timeout
	return kube.NewForConfig(cfg)
}

// builtBin is the built binary name ($SNUG_BIN, else ../../bin): snug,
// snug-agent, snug-controller or snug-lab.
func builtBin(t *testing.T, name string) string {
	t.Helper()
	bin := os.Getenv("SNUG_BIN")
	if bin == "" {
		bin, _ = filepath.Abs("../../bin")
	}
	p := filepath.Join(bin, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s binary: %v (run make build)", name, err)
	}
	return p
}

// snugBin is the built snug binary, the user's CLI.
func snugBin(t *testing.T) string { t.Helper(); return builtBin(t, "snug") }

// snugLabBin is the built snug-lab binary: the lab, demo and benches.
func snugLabBin(t *testing.T) string { t.Helper(); return builtBin(t, "snug-lab") }

// runSnug runs bin/snug with args against the lab and returns its output
// and exit code.
func runSnug(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCmd(t, nil, snugBin(t), append(args, "--kubeconfig", labOpts.Kubeconfig())...)
}

func runCmd(t *testing.T, env []string, name string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s %v: %v", name, args, err)
	}
	t.Logf("$ %s %s\n%s%s(exit %d)", filepath.Base(name), strings.Join(args, " "), out.String(), errb.String(), code)
	return out.String(), errb.String(), code
}

func actual(p *corev1.Pod) string {
	r := p.Status.ContainerStatuses[0].Resources
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("cpu %s/%s mem %s/%s", qs(r.Requests, "cpu"), qs(r.Limits, "cpu"), qs(r.Requests, "memory"), qs(r.Limits, "memory"))
}

func qs(l corev1.ResourceList, name string) string {
	if q, ok := l[corev1.ResourceName(name)]; ok {
		return q.String()
	}
	return "-"
}

func logResult(t *testing.T, r actuate.Result) {
	t.Helper()
	since := func(x time.Time) string {
		if x.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%.3fs", x.Sub(r.Sent).Seconds())
	}
	t.Logf("outcome %s (last %s) message %q; answered %s, allocated %s, actual %s, decided %s; API error %v",
		r.Outcome, r.Last, r.Message, since(r.Answered), since(r.AllocatedSeen), since(r.ActualSeen), since(r.Decided), r.APIError)
}
