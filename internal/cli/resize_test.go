package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/internal/actuate"
	"github.com/snug-dev/snug/internal/resize"
)

func rl(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

func container(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func TestParsePodRef(t *testing.T) {
	for arg, want := range map[string]string{"web": "web", "pod/web": "web", "pods/web": "web", "po/web": "web", "Pod/web": "web"} {
		if got, err := parsePodRef(arg); err != nil || got != want {
			t.Errorf("parsePodRef(%q) = %q, %v; want %q", arg, got, err, want)
		}
	}
	for _, arg := range []string{"deployment/web", "pod/", "svc/web"} {
		if _, err := parsePodRef(arg); err == nil {
			t.Errorf("parsePodRef(%q): no error", arg)
		}
	}
}

func TestResizeOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*resizeOptions)
		want string // substring of the error; "" for none
	}{
		{"cpu target", func(o *resizeOptions) { o.cpu = "500m" }, ""},
		{"explicit pair", func(o *resizeOptions) { o.cpu, o.memory = "250m:1", "256Mi:512Mi" }, ""},
		{"limit only", func(o *resizeOptions) { o.memory = ":512Mi" }, ""},
		{"nothing", func(o *resizeOptions) {}, "nothing to change"},
		{"malformed", func(o *resizeOptions) { o.cpu = "fast" }, `--cpu "fast" is not a quantity`},
		{"negative", func(o *resizeOptions) { o.cpu = "-1" }, "must be positive"},
		{"zero", func(o *resizeOptions) { o.memory = "0" }, "must be positive"},
		{"milli memory", func(o *resizeOptions) { o.memory = "128m" }, "did you mean 128Mi?"},
		{"request above limit", func(o *resizeOptions) { o.cpu = "2:1" }, "the request is above the limit"},
		{"empty limit", func(o *resizeOptions) { o.cpu = "1:" }, "give REQUEST, REQUEST:LIMIT or :LIMIT"},
		{"requests-only with a limit", func(o *resizeOptions) { o.cpu, o.requestsOnly = "1:2", true }, "--requests-only never changes limits"},
		{"cap and send", func(o *resizeOptions) { o.cpu, o.capToNode, o.sendAnyway = "1", true, true }, "exclude each other"},
		{"dry run and wait", func(o *resizeOptions) { o.cpu, o.dryRun, o.wait = "1", true, true }, "nothing to --wait for"},
		{"bad timeout", func(o *resizeOptions) { o.cpu, o.timeout = "1", 0 }, "--timeout must be positive"},
		{"revert with values", func(o *resizeOptions) { o.cpu, o.revert = "1", true }, "--revert"},
		{"revert", func(o *resizeOptions) { o.revert = true }, ""},
		{"bad usage", func(o *resizeOptions) { o.memory, o.memoryUsage = "1Gi", "lots" }, "--memory-usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newResizeOptions()
			tt.edit(o)
			err := o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestWish(t *testing.T) {
	burstable := container("app", rl("cpu", "250m", "memory", "64Mi"), rl("cpu", "500m", "memory", "128Mi"))
	tests := []struct {
		name string
		edit func(*resizeOptions)
		c    corev1.Container
		want resize.ContainerWish
	}{
		{
			name: "plain values are a target under RequestsAndLimits",
			edit: func(o *resizeOptions) { o.cpu = "400m" },
			c:    burstable,
			want: resize.ContainerWish{Name: "app", Target: rl("cpu", "400m"),
				Policy: &resize.Policy{ControlledValues: resize.RequestsAndLimits, ControlledResources: []corev1.ResourceName{"cpu"}}},
		},
		{
			name: "requests-only",
			edit: func(o *resizeOptions) { o.memory, o.requestsOnly = "100Mi", true },
			c:    burstable,
			want: resize.ContainerWish{Name: "app", Target: rl("memory", "100Mi"),
				Policy: &resize.Policy{ControlledValues: resize.RequestsOnly, ControlledResources: []corev1.ResourceName{"memory"}}},
		},
		{
			name: "explicit pair",
			edit: func(o *resizeOptions) { o.cpu = "300m:1" },
			c:    burstable,
			want: resize.ContainerWish{Name: "app", Requests: rl("cpu", "300m"), Limits: rl("cpu", "1")},
		},
		{
			name: "a plain value beside an explicit one keeps its ratio here",
			edit: func(o *resizeOptions) { o.cpu, o.memory = ":1", "100Mi" },
			c:    burstable,
			want: resize.ContainerWish{Name: "app", Requests: rl("memory", "100Mi"), Limits: rl("cpu", "1", "memory", "200Mi")},
		},
		{
			name: "ratio rounds up to the millicore",
			edit: func(o *resizeOptions) { o.cpu, o.memory = "333m", ":1Gi" },
			c:    container("app", rl("cpu", "300m", "memory", "64Mi"), rl("cpu", "1", "memory", "128Mi")),
			want: resize.ContainerWish{Name: "app", Requests: rl("cpu", "333m"), Limits: rl("cpu", "1110m", "memory", "1Gi")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newResizeOptions()
			tt.edit(o)
			got, err := o.wish(&tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty(), cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("wish (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPickContainer(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	two := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
		Containers:     []corev1.Container{{Name: "app"}, {Name: "proxy"}},
		InitContainers: []corev1.Container{{Name: "log", RestartPolicy: &always}},
	}}
	if _, err := pickContainer(two, ""); err == nil || err.Error() != "pod ns/p has 2 containers (app, proxy, log (sidecar)): choose one with -c" {
		t.Errorf("two containers, none named: %v", err)
	}
	if got, err := pickContainer(two, "log"); err != nil || got != "log" {
		t.Errorf("sidecar by name: %q %v", got, err)
	}
	if _, err := pickContainer(two, "db"); err == nil || err.Error() != `pod ns/p has no container "db" (it has: app, proxy, log (sidecar))` {
		t.Errorf("unknown: %v", err)
	}
	two.Annotations = map[string]string{"kubectl.kubernetes.io/default-container": "proxy"}
	if got, err := pickContainer(two, ""); err != nil || got != "proxy" {
		t.Errorf("default-container: %q %v", got, err)
	}
}

// fixturePod is a running Burstable pod on node n1.
func fixturePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Generation: 1},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{
			container("app", rl("cpu", "250m", "memory", "64Mi"), rl("cpu", "500m", "memory", "128Mi")),
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			AllocatedResources: rl("cpu", "250m", "memory", "64Mi"),
			Resources:          &corev1.ResourceRequirements{Requests: rl("cpu", "250m", "memory", "64Mi"), Limits: rl("cpu", "500m", "memory", "128Mi")},
		}}},
	}
}

func TestPrintPlan(t *testing.T) {
	target := &actuate.Target{Pod: fixturePod(), NodeAllocatable: rl("cpu", "2", "memory", "4Gi"), OthersClaimed: rl("cpu", "1400m", "memory", "1Gi")}
	o := newResizeOptions()
	o.cpu, o.capToNode = "700m", true
	w, err := o.wish(&target.Pod.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	plan, err := resize.NewPlan(target.Input(resize.Wish{Containers: []resize.ContainerWish{w}}, nil, o.plannerOptions()))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printPlan(&out, target, plan)
	want := `pod shop/web  QoS Burstable  node n1 (cpu: 2 allocatable, 1400m claimed by other pods)
CONTAINER  RESOURCE  REQUEST       LIMIT          RESTART
app        cpu       250m -> 600m  500m -> 1200m  no
app        memory    64Mi          128Mi          no
QoS: Burstable -> Burstable
restarts: none
note (CappedToNodeRoom): container "app": cpu request increase to 700m cut to 600m to fit on the node
prediction: WouldApply
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("printPlan (-want +got):\n%s", diff)
	}
}

func TestPrintResult(t *testing.T) {
	sent := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return sent.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name   string
		r      actuate.Result
		waited bool
		want   string
	}{
		{
			name: "applied", waited: true,
			r:    actuate.Result{Outcome: resize.Applied, Last: resize.Applied, Generation: 2, Sent: sent, Answered: at(12), AllocatedSeen: at(310), ActualSeen: at(440), Decided: at(440)},
			want: "sent: the API server accepted the patch in 12ms (generation 2)\noutcome: Applied after 0.44s\n  seen after the patch: allocated 0.31s, actual 0.44s\n",
		},
		{
			name: "deferred", waited: true,
			r:    actuate.Result{Outcome: resize.Deferred, Last: resize.Deferred, Message: "Node didn't have enough resource", Generation: 2, Sent: sent, Answered: at(9), Decided: at(150)},
			want: "sent: the API server accepted the patch in 9ms (generation 2)\noutcome: Deferred after 0.15s\n  kubelet: Node didn't have enough resource\n  the kubelet retries by itself when room appears on the node\n",
		},
		{
			name: "timeout", waited: true,
			r:    actuate.Result{Outcome: resize.Timeout, Last: resize.InProgress, Generation: 3, Sent: sent, Answered: at(9), AllocatedSeen: at(100), Decided: at(5000)},
			want: "sent: the API server accepted the patch in 9ms (generation 3)\noutcome: Timeout after 5.00s (last seen: InProgress)\n  seen after the patch: allocated 0.10s\n",
		},
		{
			name: "rejected",
			r: actuate.Result{Outcome: resize.Rejected, Sent: sent, Answered: at(7),
				APIError: &actuate.APIError{Code: 403, Reason: metav1.StatusReasonForbidden, Message: "node didn't have enough allocatable resources", Causes: []string{"NodeCapacity"}}},
			want: "outcome: Rejected by the API server in 7ms: 403 Forbidden: node didn't have enough allocatable resources\n  cause: NodeCapacity\n",
		},
		{
			name: "not waiting",
			r:    actuate.Result{Outcome: resize.InProgress, Generation: 2, Sent: sent, Answered: at(11)},
			want: "sent: the API server accepted the patch in 11ms (generation 2); not waiting (use --wait)\n",
		},
		{
			name: "dry run",
			r:    actuate.Result{Outcome: resize.InProgress, DryRun: true, Sent: sent, Answered: at(11)},
			want: "dry run: the API server accepted the patch in 11ms (dryRun=All); nothing was changed\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			printResult(&out, tt.r, tt.waited)
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("printResult (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExitCodePerOutcome(t *testing.T) {
	seen := map[int]resize.Outcome{}
	for o, code := range outcomeExit {
		if code == exitOK {
			continue
		}
		if prev, dup := seen[code]; dup {
			t.Errorf("outcomes %v and %v share exit code %d", prev, o, code)
		}
		seen[code] = o
		if code == exitFailed || code == exitRefused {
			t.Errorf("outcome %v uses reserved exit code %d", o, code)
		}
	}
}

func TestRunAsKubectlPlugin(t *testing.T) {
	var out, errb bytes.Buffer
	if code := RunAs(context.Background(), "/usr/local/bin/kubectl-snug", []string{"status", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "kubectl snug status [-n NS | -A]") {
		t.Errorf("help does not present kubectl snug:\n%s", out.String())
	}
	out.Reset()
	code := RunAs(context.Background(), "kubectl-snug", []string{"resize", "pod/x", "--cpu", "1", "--kubeconfig", "/nonexistent/kubeconfig"}, &out, &errb)
	if code != 1 || !strings.HasPrefix(errb.String(), "kubectl snug: loading kubeconfig") {
		t.Errorf("exit %d, stderr %q; want 1 and a kubectl snug: prefix", code, errb.String())
	}
	errb.Reset()
	if code := Run(context.Background(), []string{"resize", "pod/x"}, &out, &errb); code != 1 || !strings.HasPrefix(errb.String(), "snug: nothing to change") {
		t.Errorf("as snug: exit %d, stderr %q", code, errb.String())
	}
}
