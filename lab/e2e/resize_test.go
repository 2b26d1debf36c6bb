//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/internal/actuate"
	"github.com/snug-dev/snug/internal/resize"
	"github.com/snug-dev/snug/lab/internal/experiment"
)

// snug's actuation, outcome by outcome, on the lab's one node (2000m cpu
// allocatable). Each test makes and removes its own namespace.

func cpuTarget(name, cpu string) resize.ContainerWish {
	return resize.ContainerWish{Name: name, Target: list("cpu", cpu),
		Policy: &resize.Policy{ControlledResources: []corev1.ResourceName{corev1.ResourceCPU}}}
}

func TestResizeApplied(t *testing.T) {
	ns := testNamespace(t, "snug-rz-applied-")
	createRunning(t, ns, podShape{name: "web", cpuReq: "250m", cpuLim: "500m", memReq: "64Mi", memLim: "128Mi"}.pod())
	act := &actuate.Actuator{Client: core}
	target, p := plan(t, act, ns, "web", cpuTarget("app", "400m"), nil, resize.Options{})
	check(t, "prediction", p.Predicted, resize.WouldApply)
	r, err := act.Apply(context.Background(), target.Pod, p, actuate.ApplyOptions{Wait: true, WaitOptions: actuate.WaitOptions{Timeout: waitLimit}})
	if err != nil {
		t.Fatal(err)
	}
	logResult(t, r)
	check(t, "outcome", r.Outcome, resize.Applied)
	check(t, "actual", actual(r.Pod), "cpu 400m/800m mem 64Mi/128Mi")
	check(t, "restarts", r.Pod.Status.ContainerStatuses[0].RestartCount, int32(0))
	if r.Sent.IsZero() || r.Answered.Before(r.Sent) || r.AllocatedSeen.Before(r.Answered) || r.ActualSeen.Before(r.AllocatedSeen) || r.Decided.Before(r.ActualSeen) {
		t.Errorf("times out of order: sent %v answered %v allocated %v actual %v decided %v", r.Sent, r.Answered, r.AllocatedSeen, r.ActualSeen, r.Decided)
	}
	if r.Pod.Status.ObservedGeneration < r.Generation {
		t.Errorf("observedGeneration %d behind generation %d", r.Pod.Status.ObservedGeneration, r.Generation)
	}
}

// A filler takes 1400m; a resize of the test pod to 700m does not fit:
// Deferred. A wait through Deferred with a client whose requests (watches
// too) time out after 1s runs to its own 4s deadline: Timeout, proving the
// watch is restarted. Once the filler goes the kubelet applies the resize.
// A second deferred pod is deleted while waited on.
func TestResizeDeferredTimeoutDeleted(t *testing.T) {
	ns := testNamespace(t, "snug-rz-deferred-")
	createRunning(t, ns, podShape{name: "filler", cpuReq: "1400m", memReq: "16Mi"}.pod())
	createRunning(t, ns, podShape{name: "web", cpuReq: "250m", cpuLim: "250m", memReq: "64Mi", memLim: "64Mi"}.pod())
	// Made now: once web's resize is pending the scheduler counts it at
	// 700m and a new pod would not fit.
	createRunning(t, ns, podShape{name: "doomed", cpuReq: "100m", memReq: "16Mi"}.pod())
	act := &actuate.Actuator{Client: core}
	ctx := context.Background()

	_, refusal := func() (*resize.Plan, error) {
		target, err := act.Gather(ctx, ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		return resize.NewPlan(target.Input(resize.Wish{Containers: []resize.ContainerWish{cpuTarget("app", "700m")}}, nil, resize.Options{}))
	}()
	var ref *resize.Refusal
	if !errors.As(refusal, &ref) || ref.Reason != resize.ReasonWouldDefer {
		t.Fatalf("default options: got %v, want a WouldDefer refusal", refusal)
	}
	t.Logf("refused by default: %s", ref.Message)

	target, p := plan(t, act, ns, "web", cpuTarget("app", "700m"), nil, resize.Options{NoRoom: resize.NoRoomSend})
	check(t, "prediction", p.Predicted, resize.WouldDefer)
	sent, err := act.Send(ctx, target.Pod, p.Patch, actuate.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := act.Wait(ctx, sent, p.Containers, actuate.WaitOptions{Timeout: waitLimit})
	if err != nil {
		t.Fatal(err)
	}
	logResult(t, r)
	check(t, "outcome", r.Outcome, resize.Deferred)
	check(t, "message", r.Message, "Node didn't have enough resource: cpu, requested: 700, used: 1500, capacity: 2000")

	short := &actuate.Actuator{Client: clientWithTimeout(t, time.Second)}
	r, err = short.Wait(ctx, sent, p.Containers, actuate.WaitOptions{Timeout: 4 * time.Second, ThroughDeferred: true})
	if err != nil {
		t.Fatalf("wait through Deferred with 1s client timeouts: %v", err)
	}
	logResult(t, r)
	check(t, "outcome", r.Outcome, resize.Timeout)
	check(t, "last seen", r.Last, resize.Deferred)
	if d := r.Decided.Sub(r.Sent); d < 4*time.Second {
		t.Errorf("timeout decided %s after the patch, before the 4s deadline", d)
	}

	// A second pod whose resize is deferred too, deleted while waited on.
	dt, dp := plan(t, act, ns, "doomed", cpuTarget("app", "500m"), nil, resize.Options{NoRoom: resize.NoRoomSend})
	dsent, err := act.Send(ctx, dt.Pod, dp.Patch, actuate.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := act.Wait(ctx, dsent, dp.Containers, actuate.WaitOptions{Timeout: waitLimit, ThroughDeferred: true})
		waited <- err
	}()
	waitPod(t, ns, "doomed", "deferred", func(p *corev1.Pod) bool { return resize.State(p, time.Now()).Outcome == resize.Deferred })
	zero := int64(0)
	if err := client.CoreV1().Pods(ns).Delete(ctx, "doomed", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; !errors.Is(err, actuate.ErrPodDeleted) {
		t.Errorf("wait on a deleted pod: %v, want ErrPodDeleted", err)
	} else {
		t.Logf("deleted while waiting: %v", err)
	}

	if err := client.CoreV1().Pods(ns).Delete(ctx, "filler", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	r, err = act.Wait(ctx, sent, p.Containers, actuate.WaitOptions{Timeout: waitLimit, ThroughDeferred: true})
	if err != nil {
		t.Fatal(err)
	}
	logResult(t, r)
	check(t, "outcome once the filler is gone", r.Outcome, resize.Applied)
	check(t, "actual", actual(r.Pod), "cpu 700m/700m mem 64Mi/64Mi")
}

// Above allocatable: Infeasible on 1.35, then reverted; 403 on 1.36+.
func TestResizeInfeasibleOrRejected(t *testing.T) {
	ns := testNamespace(t, "snug-rz-infeasible-")
	createRunning(t, ns, podShape{name: "web", cpuReq: "250m", cpuLim: "250m", memReq: "64Mi", memLim: "64Mi"}.pod())
	act := &actuate.Actuator{Client: core}
	ctx := context.Background()
	target, p := plan(t, act, ns, "web", cpuTarget("app", "2500m"), nil, resize.Options{NoRoom: resize.NoRoomSend})
	check(t, "prediction", p.Predicted, resize.WouldBeInfeasible)
	r, err := act.Apply(ctx, target.Pod, p, actuate.ApplyOptions{Wait: true, WaitOptions: actuate.WaitOptions{Timeout: waitLimit}})
	if err != nil {
		t.Fatal(err)
	}
	logResult(t, r)
	if serverMinor(t) >= 36 {
		check(t, "outcome", r.Outcome, resize.Rejected)
		if r.APIError == nil {
			t.Fatal("no API error")
		}
		check(t, "code", r.APIError.Code, int32(403))
		checkContains(t, "message", r.APIError.Message, "node didn't have enough allocatable resources: cpu, requested: 2500, allocatable: 2000")
		check(t, "causes", strings.Join(r.APIError.Causes, ","), "NodeCapacity")
		after := waitPod(t, ns, "web", "read", func(*corev1.Pod) bool { return true })
		check(t, "generation after the refusal", after.Generation, target.Pod.Generation)
		return
	}
	check(t, "outcome", r.Outcome, resize.Infeasible)
	check(t, "message", r.Message, "Node didn't have enough capacity: cpu, requested: 2500, capacity: 2000")
	rv, err := act.Revert(ctx, r.Pod, actuate.ApplyOptions{Wait: true, WaitOptions: actuate.WaitOptions{Timeout: waitLimit}})
	if err != nil {
		t.Fatal(err)
	}
	logResult(t, rv)
	check(t, "revert outcome", rv.Outcome, resize.Applied)
	check(t, "desired after the revert", qs(rv.Pod.Spec.Containers[0].Resources.Requests, "cpu"), "250m")
	check(t, "state after the revert", resize.State(rv.Pod, time.Now()).String(), "Applied")
}

// A memory limit lowered below what the container holds: the plan is made
// with a lied, low usage figure; the kubelet refuses: Error.
func TestResizeKubeletError(t *testing.T) {
	ns := testNamespace(t, "snug-rz-error-")
	pod := createRunning(t, ns, podShape{name: "hog", cpuReq: "100m", cpuLim: "100m", memReq: "256Mi", memLim: "256Mi",
		image: loadImage, args: []string{"--memory=100Mi", "--listen="}}.pod())
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := pollUntil(ctx, 250*time.Millisecond, func() (bool, error) {
		u, err := experiment.ReadKubeletUsage(ctx, client, pod.Spec.NodeName, ns, "hog", "app")
		return u.PodBytes >= 100<<20 && u.ContainerBytes >= 100<<20, err
	}); err != nil {
		t.Fatalf("waiting for the kubelet's statistics to show 100Mi held: %v", err)
	}
	act := &actuate.Actuator{Client: core}
	lie := map[string]resize.Usage{"app": {MemoryWorkingSetBytes: 10 << 20}}
	wish := resize.ContainerWish{Name: "app", Limits: list("memory", "64Mi")}
	target, p := plan(t, act, ns, "hog", wish, lie, resize.Options{MaxMemoryDecreaseFraction: 1})
	r, err := act.Apply(ctx, target.Pod, p, actuate.ApplyOptions{Wait: true, WaitOptions: actuate.WaitOptions{Timeout: waitLimit}})
	if err != nil {
		t.Fatal(err)
	}
	logResult(t, r)
	check(t, "outcome", r.Outcome, resize.Error)
	checkContains(t, "message", r.Message, "cannot decrease memory limits")
	check(t, "actual", actual(r.Pod), "cpu 100m/100m mem 256Mi/256Mi")
	if r.AllocatedSeen.IsZero() {
		t.Errorf("allocated never seen; the kubelet allocates before it actuates")
	}
}

// A plan made from a stale read: someone else resized in between, the
// patch's test operations fail: Conflict, nothing changed.
func TestResizeConflict(t *testing.T) {
	ns := testNamespace(t, "snug-rz-conflict-")
	createRunning(t, ns, podShape{name: "web", cpuReq: "250m", cpuLim: "500m", memReq: "64Mi", memLim: "128Mi"}.pod())
	act := &actuate.Actuator{Client: core}
	ctx := context.Background()
	stale, staleplan := plan(t, act, ns, "web", cpuTarget("app", "300m"), nil, resize.Options{})
	fresh, freshplan := plan(t, act, ns, "web", cpuTarget("app", "350m"), nil, resize.Options{})
	if r, err := act.Apply(ctx, fresh.Pod, freshplan, actuate.ApplyOptions{Wait: true}); err != nil || r.Outcome != resize.Applied {
		t.Fatalf("the other resize: %v %v", r.Outcome, err)
	}
	r, err := act.Send(ctx, stale.Pod, staleplan.Patch, actuate.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	logResult(t, r)
	check(t, "outcome", r.Outcome, resize.Conflict)
	if r.APIError == nil {
		t.Fatal("no API error")
	}
	check(t, "code", r.APIError.Code, int32(422))
	t.Logf("the API server's answer to a failed test operation: %s (causes %q)", r.APIError, r.APIError.Causes)
	after := waitPod(t, ns, "web", "read", func(*corev1.Pod) bool { return true })
	check(t, "cpu request after the conflict", qs(after.Spec.Containers[0].Resources.Requests, "cpu"), "350m")

	// The same plan, but only a dry run: Conflict as well.
	r, err = act.Send(ctx, stale.Pod, staleplan.Patch, actuate.SendOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "dry-run outcome", r.Outcome, resize.Conflict)
}

// --cap-to-node turns a would-be Deferred and a would-be Infeasible (403 on
// 1.36+) resize into ones that apply; without it the CLI refuses (exit 2).
func TestResizeCLICapToNode(t *testing.T) {
	ns := testNamespace(t, "snug-rz-cap-")
	createRunning(t, ns, podShape{name: "filler", cpuReq: "1400m", memReq: "16Mi"}.pod())
	createRunning(t, ns, podShape{name: "web", cpuReq: "250m", cpuLim: "500m", memReq: "64Mi", memLim: "128Mi"}.pod())

	out, _, code := runSnug(t, "resize", "pod/web", "-n", ns, "--cpu", "700m", "--wait")
	check(t, "exit code without --cap-to-node", code, 2)
	checkContains(t, "output", out, "refused (WouldDefer)")

	out, _, code = runSnug(t, "resize", "pod/web", "-n", ns, "--cpu", "700m", "--cap-to-node", "--wait")
	check(t, "exit code (would defer, capped)", code, 0)
	checkContains(t, "output", out, "CappedToNodeRoom")
	checkContains(t, "output", out, "outcome: Applied")
	p := waitPod(t, ns, "web", "read", func(*corev1.Pod) bool { return true })
	check(t, "actual after the capped resize", actual(p), "cpu 600m/1200m mem 64Mi/128Mi")

	zero := int64(0)
	if err := client.CoreV1().Pods(ns).Delete(context.Background(), "filler", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "filler")
	out, _, code = runSnug(t, "resize", "pod/web", "-n", ns, "--cpu", "2500m", "--wait")
	check(t, "exit code above allocatable", code, 2)
	checkContains(t, "output", out, "refused (WouldBeInfeasible)")
	out, _, code = runSnug(t, "resize", "pod/web", "-n", ns, "--cpu", "2500m", "--cap-to-node", "--wait")
	check(t, "exit code (would be infeasible, capped)", code, 0)
	checkContains(t, "output", out, "outcome: Applied")
	p = waitPod(t, ns, "web", "read", func(*corev1.Pod) bool { return true })
	cpuReq := p.Status.ContainerStatuses[0].Resources.Requests[corev1.ResourceCPU]
	if cpuReq.Cmp(resource.MustParse("600m")) <= 0 || cpuReq.Cmp(resource.MustParse("2")) > 0 {
		t.Errorf("actual cpu request %s, want above 600m and at most the node's 2", cpuReq.String())
	}
}

func waitGone(t *testing.T, ns, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := pollUntil(ctx, 100*time.Millisecond, func() (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err != nil, nil
	}); err != nil {
		t.Fatalf("pod %s/%s still there: %v", ns, name, err)
	}
}

// `snug status` (and `kubectl snug status`) shows Deferred and Infeasible
// pods with the age of their condition, stuck ones first.
func TestStatusCLI(t *testing.T) {
	ns := testNamespace(t, "snug-rz-status-")
	createRunning(t, ns, podShape{name: "a-synced", cpuReq: "100m", memReq: "16Mi"}.pod())
	createRunning(t, ns, podShape{name: "filler", cpuReq: "1400m", memReq: "16Mi"}.pod())
	createRunning(t, ns, podShape{name: "deferred", cpuReq: "100m", cpuLim: "100m", memReq: "32Mi", memLim: "32Mi"}.pod())
	createRunning(t, ns, podShape{name: "infeasible", cpuReq: "100m", cpuLim: "100m", memReq: "32Mi", memLim: "32Mi"}.pod())
	minor := serverMinor(t)
	out, _, code := runSnug(t, "resize", "pod/deferred", "-n", ns, "--cpu", "700m", "--send-anyway", "--wait")
	check(t, "exit code of the deferred resize", code, 3)
	checkContains(t, "output", out, "outcome: Deferred")
	out, _, code = runSnug(t, "resize", "pod/infeasible", "-n", ns, "--cpu", "3", "--send-anyway", "--wait")
	if minor >= 36 {
		check(t, "exit code of the rejected resize", code, 6)
		checkContains(t, "output", out, "outcome: Rejected")
	} else {
		check(t, "exit code of the infeasible resize", code, 4)
		checkContains(t, "output", out, "outcome: Infeasible")
	}
	// Let the conditions age a little: the STATE column shows the age.
	waitPod(t, ns, "deferred", "deferred for 2s", func(p *corev1.Pod) bool {
		s := resize.State(p, time.Now())
		return s.Pending != nil && s.Pending.Age >= 2*time.Second
	})
	out, _, code = runSnug(t, "status", "-n", ns)
	check(t, "status exit code", code, 0)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	checkMatch(t, "header", lines[0], `^POD\s+CONTAINER\s+QOS\s+CPU\s+MEMORY\s+STATE\s+RESTARTS\s+NODE$`)
	node := `\s+` + regexp.QuoteMeta(labOpts.NodeName) + `$`
	first := 1
	if minor < 36 {
		checkMatch(t, "first row", lines[1], `^infeasible\s+app\s+Guaranteed\s+3/3 \(alloc 100m, actual 100m/100m\)\s+32Mi/32Mi\s+Infeasible \d+s\s+0`+node)
		first = 2
	}
	checkMatch(t, "deferred row", lines[first], `^deferred\s+app\s+Guaranteed\s+700m/700m \(alloc 100m, actual 100m/100m\)\s+32Mi/32Mi\s+Deferred \d+s\s+0`+node)
	checkMatch(t, "synced row", lines[first+1], `^a-synced\s+app\s+Burstable\s+100m/-\s+16Mi/-\s+Synced\s+0`+node)

	// --watch prints at once and keeps running until stopped.
	wctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	wcmd := exec.CommandContext(wctx, snugBin(t), "status", "-n", ns, "--watch", "--kubeconfig", labOpts.Kubeconfig())
	wout, _ := wcmd.Output()
	if wctx.Err() == nil {
		t.Errorf("snug status --watch ended by itself: %s", wout)
	}
	checkContains(t, "status --watch output", string(wout), "Deferred ")

	out, _, code = runSnug(t, "status", "-n", ns, "-o", "json")
	check(t, "json exit code", code, 0)
	checkContains(t, "json", out, `"state": "Deferred `)

	// As a kubectl plugin: kubectl finds kubectl-snug on PATH.
	kubectl := filepath.Join(labOpts.BinDir(), "kubectl")
	bin := filepath.Dir(snugBin(t))
	pout, _, code := runCmd(t, []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "KUBECONFIG=" + labOpts.Kubeconfig()},
		kubectl, "snug", "status", "-n", ns, "-o", "wide")
	check(t, "kubectl snug exit code", code, 0)
	checkMatch(t, "kubectl snug header", strings.SplitN(pout, "\n", 2)[0], `^POD\s+CONTAINER\s+QOS\s+CPU DESIRED\s+CPU ALLOC\s+CPU ACTUAL`)
	checkContains(t, "kubectl snug output", pout, "Node didn't have enough resource: cpu, requested: 700")
	_, perr, _ := runCmd(t, []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}, kubectl, "snug", "resize", "pod/x", "--kubeconfig", "/nonexistent", "--cpu", "1")
	checkContains(t, "kubectl snug error prefix", perr, "kubectl snug: ")
}

// Bad input: one message, nonzero exit, nothing patched.
func TestResizeCLIBadInput(t *testing.T) {
	ns := testNamespace(t, "snug-rz-bad-")
	web := createRunning(t, ns, podShape{name: "web", cpuReq: "250m", cpuLim: "500m", memReq: "64Mi", memLim: "128Mi"}.pod())
	gated := podShape{name: "pending", cpuReq: "100m", memReq: "16Mi", gated: true}.pod()
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), gated, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	down := filepath.Join(t.TempDir(), "down.kubeconfig")
	raw, err := os.ReadFile(labOpts.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(down, regexp.MustCompile(`server: https://[^\s]+`).ReplaceAll(raw, []byte("server: https://127.0.0.1:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown pod", []string{"resize", "pod/nope", "-n", ns, "--cpu", "300m"}, `reading pod ` + ns + `/nope: pod not found`},
		{"unknown namespace", []string{"resize", "pod/web", "-n", "no-such-ns", "--cpu", "300m"}, `namespace "no-such-ns" does not exist`},
		{"unknown container", []string{"resize", "pod/web", "-n", ns, "-c", "nope", "--cpu", "300m"}, `has no container "nope" (it has: app)`},
		{"malformed quantity", []string{"resize", "pod/web", "-n", ns, "--cpu", "lots"}, `--cpu "lots" is not a quantity`},
		{"milli memory", []string{"resize", "pod/web", "-n", ns, "--memory", "512m"}, `did you mean 512Mi?`},
		{"not a pod", []string{"resize", "deployment/web", "-n", ns, "--cpu", "300m"}, `snug resizes pods`},
		{"pod not running", []string{"resize", "pod/pending", "-n", ns, "--cpu", "300m"}, `is Pending, not Running`},
		{"status of an unknown namespace", []string{"status", "-n", "no-such-ns"}, `namespace "no-such-ns" does not exist`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runSnug(t, tt.args...)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			checkContains(t, "stderr", errOut, tt.want)
			if n := strings.Count(strings.TrimSpace(errOut), "\n"); n > 0 {
				t.Errorf("stderr has %d lines, want one message", n+1)
			}
		})
	}
	t.Run("API server down", func(t *testing.T) {
		_, errOut, code := runCmd(t, nil, snugBin(t), "resize", "pod/web", "-n", ns, "--cpu", "300m", "--kubeconfig", down)
		check(t, "exit code", code, 1)
		checkContains(t, "stderr", errOut, "cannot reach the API server at https://127.0.0.1:1")
		_, errOut, code = runCmd(t, nil, snugBin(t), "status", "-n", ns, "--kubeconfig", down)
		check(t, "status exit code", code, 1)
		checkContains(t, "stderr", errOut, "cannot reach the API server")
	})
	after := waitPod(t, ns, "web", "read", func(*corev1.Pod) bool { return true })
	check(t, "generation after the bad inputs", after.Generation, web.Generation)
}
