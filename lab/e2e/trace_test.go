//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/snug-dev/snug/internal/trace"
)

// `snug trace` on the lab: the recorder in process and the real binary,
// following resizes the kubelet really performs. Set SNUG_TRACE_KEEP to a
// directory to keep the deferred test's outputs (JSON, SVG, CSV, table)
// there, named by Kubernetes version.

// traceTimeout bounds every wait in these tests.
const traceTimeout = 2 * time.Minute

// sleeper is a busybox pod that sleeps until deleted, with the given cpu
// and memory (request/limit; "" leaves a value unset) and resizePolicy
// NotRequired.
func sleeper(name, cpuReq, cpuLim, memReq, memLim string) *corev1.Pod {
	grace := int64(1)
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, v := range []struct {
		l    corev1.ResourceList
		name corev1.ResourceName
		q    string
	}{{res.Requests, corev1.ResourceCPU, cpuReq}, {res.Limits, corev1.ResourceCPU, cpuLim}, {res.Requests, corev1.ResourceMemory, memReq}, {res.Limits, corev1.ResourceMemory, memLim}} {
		if v.q != "" {
			v.l[v.name] = resource.MustParse(v.q)
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "traced"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name:            "app",
				Image:           "docker.io/library/busybox:1.36",
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
				Resources:       res,
				ResizePolicy: []corev1.ContainerResizePolicy{
					{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
					{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
				},
			}},
		},
	}
}

// resizeCPU patches the pod's resize subresource.
func resizeCPU(t *testing.T, ns, name, req, lim string) {
	t.Helper()
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/containers/0/resources/requests/cpu","value":%q},{"op":"replace","path":"/spec/containers/0/resources/limits/cpu","value":%q}]`, req, lim)
	if _, err := client.CoreV1().Pods(ns).Patch(context.Background(), name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}, "resize"); err != nil {
		t.Fatalf("resizing %s to cpu %s/%s: %v", name, req, lim, err)
	}
}

// firstAt is the time of the first sample of the pod for which cond holds
// on its container "app".
func firstAt(rec *trace.Recording, pod string, cond func(trace.Container) bool) (time.Time, bool) {
	for _, s := range rec.Samples {
		if s.Pod == pod && len(s.Containers) > 0 && cond(s.Containers[0]) {
			return s.At, true
		}
	}
	return time.Time{}, false
}

func hasEvent(rec *trace.Recording, reason string) bool {
	for _, e := range rec.Events {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

func table(t *testing.T, rec *trace.Recording) string {
	t.Helper()
	var b bytes.Buffer
	if err := trace.WriteTable(&b, rec, trace.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkDesiredBeforeActual expects the spec to change first: a sample with
// the new desired cpu request and the old actual one.
func checkDesiredBeforeActual(t *testing.T, rec *trace.Recording, pod string, fromMillis, toMillis int64) {
	t.Helper()
	desiredAt, ok := firstAt(rec, pod, func(c trace.Container) bool { return c.Desired.CPURequestMillis == toMillis })
	if !ok {
		t.Fatalf("no sample with desired cpu request %dm", toMillis)
	}
	actualAt, ok := firstAt(rec, pod, func(c trace.Container) bool { return c.Actual != nil && c.Actual.CPURequestMillis == toMillis })
	if !ok {
		t.Fatalf("no sample with actual cpu request %dm", toMillis)
	}
	if !desiredAt.Before(actualAt) {
		t.Errorf("desired changed at %s, actual at %s: want desired first", desiredAt, actualAt)
	}
	if _, ok := firstAt(rec, pod, func(c trace.Container) bool {
		return c.Desired.CPURequestMillis == toMillis && c.Actual != nil && c.Actual.CPURequestMillis == fromMillis
	}); !ok {
		t.Errorf("no sample with desired %dm and actual still %dm", toMillis, fromMillis)
	}
	t.Logf("desired -> actual: %.3fs", actualAt.Sub(desiredAt).Seconds())
}

// checkNoRestart expects restart count 0 and one container ID throughout.
func checkNoRestart(t *testing.T, rec *trace.Recording) {
	t.Helper()
	ids := map[string]bool{}
	for _, s := range rec.Samples {
		for _, c := range s.Containers {
			if c.RestartCount != 0 {
				t.Errorf("restart count %d at %s", c.RestartCount, s.At)
			}
			if c.ContainerID != "" {
				ids[c.ContainerID] = true
			}
		}
	}
	if len(ids) != 1 {
		t.Errorf("container IDs %v, want one", ids)
	}
}

// TestTraceCPUResize records a CPU resize (request 100m -> 200m) with the
// recorder in process.
func TestTraceCPUResize(t *testing.T) {
	ns := testNamespace(t, "snug-trace-")
	createRunning(t, ns, sleeper("traced", "100m", "300m", "32Mi", "64Mi"))
	r, err := trace.NewRecorder(client, trace.Options{Namespace: ns, Pod: "traced"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), traceTimeout)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()

	r.Mark("resize patch sent")
	resizeCPU(t, ns, "traced", "200m", "300m")
	err = r.Wait(ctx, func(rec *trace.Recording) bool {
		n := len(rec.Samples)
		c := rec.Samples[n-1].Containers[0]
		return c.Actual != nil && c.Actual.CPURequestMillis == 200 && hasEvent(rec, "ResizeCompleted")
	})
	if err != nil {
		t.Fatalf("waiting for the trace to show the resize: %v", err)
	}
	rec, err := r.Stop()
	if err != nil {
		t.Fatal(err)
	}
	tbl := table(t, rec)
	t.Logf("table:\n%s", tbl)

	checkDesiredBeforeActual(t, rec, "traced", 100, 200)
	checkNoRestart(t, rec)
	last := rec.Samples[len(rec.Samples)-1]
	check(t, "generation at the end", last.Generation, int64(2))
	check(t, "allocated cpu at the end", last.Containers[0].Allocated.CPURequestMillis, int64(200))
	check(t, "outcome at the end", last.Outcome, "Applied")
	for _, want := range []string{
		"mark: resize patch sent",
		"desired cpu 100m/300m -> 200m/300m",
		"allocated cpu 100m -> 200m",
		"actual cpu 100m/300m -> 200m/300m",
		"event ResizeCompleted [kubelet]",
	} {
		checkContains(t, "table", tbl, want)
	}
}

// TestTraceDeferredCLI runs the real binary while a resize is Deferred
// beside a filler pod and completes once the filler is deleted; Ctrl-C
// (SIGINT) ends the trace and the outputs are still written.
func TestTraceDeferredCLI(t *testing.T) {
	ns := testNamespace(t, "snug-trace-")
	createRunning(t, ns, sleeper("deferred", "100m", "100m", "32Mi", "32Mi"))
	filler := sleeper("filler", "1700m", "", "16Mi", "")
	filler.Labels = map[string]string{"app": "filler"}
	createRunning(t, ns, filler)

	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	cmd := exec.Command(snugBin(t), "trace", "-n", ns, "deferred",
		"--out", out("run.json"), "--svg", out("run.svg"), "--csv", out("run.csv"), "--table", "--for", "10m")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+labOpts.Kubeconfig())
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "tracing pod "+ns+"/deferred") {
		t.Fatalf("snug trace did not start: %q %v", lines.Text(), lines.Err())
	}
	t.Log(lines.Text())
	var errOut bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		for lines.Scan() {
			errOut.WriteString(lines.Text() + "\n")
		}
	}()

	// A second recorder, in process, follows the same pod so the test can
	// wait on what a trace sees: two periodic samples before the patch,
	// and three while the resize is Deferred.
	watcher, err := trace.NewRecorder(client, trace.Options{Namespace: ns, Pod: "deferred"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), traceTimeout)
	defer cancel()
	if err := watcher.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer watcher.Stop()
	ticks := func(outcome string, n int) func(*trace.Recording) bool {
		return func(rec *trace.Recording) bool {
			c := 0
			for _, s := range rec.Samples {
				if s.Cause == trace.CauseTick && s.Outcome == outcome {
					c++
				}
			}
			return c >= n
		}
	}
	if err := watcher.Wait(ctx, ticks("Applied", 2)); err != nil {
		t.Fatal(err)
	}
	resizeCPU(t, ns, "deferred", "400m", "400m")
	if err := watcher.Wait(ctx, ticks("Deferred", 3)); err != nil {
		t.Fatalf("waiting for three samples of the Deferred resize: %v", err)
	}
	waitEvent(t, ns, "deferred", "ResizeDeferred")
	if err := client.CoreV1().Pods(ns).Delete(context.Background(), "filler", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the filler: %v", err)
	}
	waitPod(t, ns, "deferred", "resized", func(p *corev1.Pod) bool {
		r := p.Status.ContainerStatuses[0].Resources
		return r != nil && r.Requests.Cpu().MilliValue() == 400 && !hasResizeCondition(p)
	})
	waitEvent(t, ns, "deferred", "ResizeCompleted")

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-copied
	if err := cmd.Wait(); err != nil {
		t.Fatalf("snug trace after Ctrl-C: %v\nstderr:\n%s", err, errOut.String())
	}
	t.Logf("stderr:\n%s", errOut.String())
	checkContains(t, "stderr", errOut.String(), "interrupted: ending the trace")
	tbl := stdout.String()
	t.Logf("table:\n%s", tbl)

	rec, err := trace.LoadFile(out("run.json"))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "end reason", rec.EndReason, "stopped")
	checkDesiredBeforeActual(t, rec, "deferred", 100, 400)
	checkNoRestart(t, rec)
	tracks := rec.Pods()
	if len(tracks) != 1 {
		t.Fatalf("%d pods traced, want 1", len(tracks))
	}
	msg := "Node didn't have enough resource: cpu, requested: 400, used: 1700, capacity: 2000"
	var deferred *trace.Span
	for _, s := range tracks[0].Spans(rec.End()) {
		if s.Kind == trace.SpanDeferred {
			deferred = &s
		}
	}
	if deferred == nil {
		t.Fatal("no Deferred span in the recording")
	}
	check(t, "Deferred message", deferred.Message, msg)
	check(t, "Deferred observedGeneration", deferred.ObservedGeneration, int64(2))
	if deferred.Open {
		t.Error("the Deferred span never ended")
	}
	inSpan := 0
	for _, s := range rec.Samples {
		if s.Cause == trace.CauseTick && !s.At.Before(deferred.From) && s.At.Before(deferred.To) {
			inSpan++
		}
	}
	if inSpan < 3 {
		t.Errorf("%d periodic samples while Deferred, want at least 3 (one a second)", inSpan)
	}
	t.Logf("Deferred for %.2fs", deferred.To.Sub(deferred.From).Seconds())
	for _, reason := range []string{"ResizeDeferred", "ResizeCompleted"} {
		if !hasEvent(rec, reason) {
			t.Errorf("the recording has no %s event", reason)
		}
	}
	for _, want := range []string{
		"desired cpu 100m/100m -> 400m/400m",
		"+PodResizePending Deferred (gen 2): " + msg,
		"-PodResizePending",
		"actual cpu 100m/100m -> 400m/400m",
		"ResizeDeferred [kubelet]: Pod resize ",
		"app cpu 400m/400m mem 32Mi/32Mi, gen 2: " + msg,
		"event ResizeCompleted [kubelet]",
		"trace ended: stopped",
	} {
		checkContains(t, "table", tbl, want)
	}

	// The saved recording renders the same table again.
	render := exec.Command(snugBin(t), "trace", "render", out("run.json"), "--table")
	again, err := render.Output()
	if err != nil {
		t.Fatalf("snug trace render: %v", err)
	}
	check(t, "table rendered from the saved recording", string(again), tbl)

	svg, err := os.ReadFile(out("run.svg"))
	if err != nil {
		t.Fatal(err)
	}
	checkContains(t, "text of the svg", svgText(t, svg), "Deferred (gen 2): "+msg)
	csv, err := os.ReadFile(out("run.csv"))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "csv rows", strings.Count(string(csv), "\n"), len(rec.Samples)+1)

	if keep := os.Getenv("SNUG_TRACE_KEEP"); keep != "" {
		v := labOpts.KubernetesVersion
		for name, data := range map[string][]byte{"json": mustRead(t, out("run.json")), "svg": svg, "csv": csv, "table.txt": []byte(tbl)} {
			if err := os.WriteFile(filepath.Join(keep, "deferred-"+v+"."+name), data, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
}

func hasResizeCondition(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if (c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// svgText parses the SVG as XML and returns its text, one element a line.
func svgText(t *testing.T, svg []byte) string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return text.String()
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		if cd, ok := tok.(xml.CharData); ok {
			text.Write(cd)
			text.WriteByte('\n')
		}
	}
}

// TestTraceSelectorFollowsPods traces by label selector across the client's
// 10 s timeout: a pod deleted ends, a new one joins.
func TestTraceSelectorFollowsPods(t *testing.T) {
	ns := testNamespace(t, "snug-trace-")
	createRunning(t, ns, sleeper("first", "50m", "", "16Mi", ""))
	r, err := trace.NewRecorder(client, trace.Options{Namespace: ns, Selector: "app=traced"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), traceTimeout)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	// The lab's client ends every request, watches too, after 10 s: wait
	// until both watches have been restarted at least once.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, traceTimeout, true, func(context.Context) (bool, error) {
		return r.Rewatches() >= 2, nil
	}); err != nil {
		t.Fatalf("no watch was restarted: %v", err)
	}
	t.Logf("rewatches before the changes: %d", r.Rewatches())

	if err := client.CoreV1().Pods(ns).Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createRunning(t, ns, sleeper("second", "50m", "", "16Mi", ""))
	if _, err := client.CoreV1().Pods(ns).Create(ctx, func() *corev1.Pod { p := sleeper("other", "50m", "", "16Mi", ""); p.Labels = nil; return p }(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = r.Wait(ctx, func(rec *trace.Recording) bool {
		firstGone := false
		secondRunning := false
		for _, s := range rec.Samples {
			firstGone = firstGone || (s.Pod == "first" && s.Deleted)
			secondRunning = secondRunning || (s.Pod == "second" && len(s.Containers) == 1 && s.Containers[0].State == "running")
		}
		return firstGone && secondRunning && hasEvent(rec, "Started")
	})
	if err != nil {
		t.Fatalf("waiting for the trace to follow the pods: %v", err)
	}
	rec, err := r.Stop()
	if err != nil {
		t.Fatal(err)
	}
	tbl := table(t, rec)
	t.Logf("table:\n%s", tbl)
	var names []string
	for _, p := range rec.Pods() {
		names = append(names, p.Pod)
	}
	check(t, "pods traced", strings.Join(names, ","), "first,second")
	for _, e := range rec.Events {
		if e.Pod == "other" {
			t.Errorf("event of a pod outside the selector recorded: %+v", e)
		}
	}
	checkContains(t, "table", tbl, "first: deletion requested")
	checkContains(t, "table", tbl, "first: pod deleted")
	checkContains(t, "table", tbl, "second: pod second joined")
	checkContains(t, "table", tbl, "second: event Started [kubelet]")
}

// TestTraceBadInput expects a clear error and a nonzero exit.
func TestTraceBadInput(t *testing.T) {
	down := filepath.Join(t.TempDir(), "down.kubeconfig")
	if err := os.WriteFile(down, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {token: x}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no such namespace", []string{"-n", "snug-no-such-namespace", "app"}, `namespace "snug-no-such-namespace" not found`},
		{"no such pod", []string{"-n", "default", "snug-no-such-pod"}, `pod "snug-no-such-pod" not found in namespace "default"`},
		{"bad selector", []string{"-n", "default", "-l", "app in (x"}, "bad label selector"},
		{"API server down", []string{"--kubeconfig", down, "app"}, "reaching the API server"},
	} {
		cmd := exec.Command(snugBin(t), append([]string{"trace", "--for", "5s"}, c.args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+labOpts.Kubeconfig())
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%s: snug trace %v succeeded: %s", c.name, c.args, out)
			continue
		}
		checkContains(t, c.name, string(out), c.want)
	}
}
