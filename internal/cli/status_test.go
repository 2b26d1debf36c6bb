package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
)

var statusNow = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

// withPending marks the fixture pod as resized to cpu 700m and pending.
func withPending(p *corev1.Pod, name, reason, msg string, age time.Duration) *corev1.Pod {
	p.Name = name
	p.Generation = 2
	p.Spec.Containers[0].Resources.Requests = rl("cpu", "700m", "memory", "64Mi")
	p.Spec.Containers[0].Resources.Limits = rl("cpu", "1400m", "memory", "128Mi")
	p.Status.ObservedGeneration = 2
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(statusNow.Add(-age)), ObservedGeneration: 2,
	})
	return p
}

func statusFixtures() []corev1.Pod {
	synced := fixturePod()
	synced.Name = "a-synced"
	deferred := withPending(fixturePod(), "deferred", corev1.PodReasonDeferred, "Node didn't have enough resource: cpu, requested: 700, used: 1400, capacity: 2000", 3*time.Minute+12*time.Second)
	infeasible := withPending(fixturePod(), "infeasible", corev1.PodReasonInfeasible, "Node didn't have enough capacity: cpu, requested: 2500, capacity: 2000", 40*time.Second)
	failing := fixturePod()
	failing.Name = "failing"
	failing.Spec.Containers[0].Resources.Limits = rl("cpu", "500m", "memory", "64Mi")
	failing.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodResizeInProgress, Status: corev1.ConditionTrue, Reason: corev1.PodReasonError,
		Message: "cannot decrease memory limits", LastTransitionTime: metav1.NewTime(statusNow.Add(-5 * time.Second)),
	}}
	failing.Status.ContainerStatuses[0].RestartCount = 2
	pending := fixturePod()
	pending.Name = "starting"
	pending.Status.Phase = corev1.PodPending
	pending.Status.ContainerStatuses[0].Resources = nil
	return []corev1.Pod{*synced, *deferred, *pending, *infeasible, *failing}
}

func TestStatusTable(t *testing.T) {
	var out bytes.Buffer
	if err := printStatus(&out, statusRows(statusFixtures(), statusNow), "table", false); err != nil {
		t.Fatal(err)
	}
	want := `POD         CONTAINER  QOS        CPU                                        MEMORY                         STATE                                    RESTARTS  NODE
infeasible  app        Burstable  700m/1400m (alloc 250m, actual 250m/500m)  64Mi/128Mi                     Infeasible 40s                           0         n1
failing     app        Burstable  250m/500m                                  64Mi/64Mi (actual 64Mi/128Mi)  Error 5s: cannot decrease memory limits  2         n1
deferred    app        Burstable  700m/1400m (alloc 250m, actual 250m/500m)  64Mi/128Mi                     Deferred 3m12s                           0         n1
starting    app        Burstable  250m/500m                                  64Mi/128Mi                     Pending                                  0         n1
a-synced    app        Burstable  250m/500m                                  64Mi/128Mi                     Synced                                   0         n1
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

func TestStatusWideAndJSON(t *testing.T) {
	rows := statusRows(statusFixtures()[:2], statusNow)
	var out bytes.Buffer
	if err := printStatus(&out, rows, "wide", true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if diff := cmp.Diff([]string{
		"NAMESPACE  POD       CONTAINER  QOS        CPU DESIRED  CPU ALLOC  CPU ACTUAL  MEM DESIRED  MEM ALLOC  MEM ACTUAL  STATE           RESTARTS  NODE  MESSAGE",
		"shop       deferred  app        Burstable  700m/1400m   250m       250m/500m   64Mi/128Mi   64Mi       64Mi/128Mi  Deferred 3m12s  0         n1    Node didn't have enough resource: cpu, requested: 700, used: 1400, capacity: 2000",
		"shop       a-synced  app        Burstable  250m/500m    250m       250m/500m   64Mi/128Mi   64Mi       64Mi/128Mi  Synced          0         n1    -",
	}, lines); diff != "" {
		t.Errorf("wide (-want +got):\n%s", diff)
	}
	out.Reset()
	if err := printStatus(&out, rows, "json", false); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("json: %v\n%s", err, out.String())
	}
	if len(got) != 2 || got[0]["state"] != "Deferred 3m12s" || got[0]["outcome"] != "Deferred" || got[0]["ageSeconds"] != 192.0 || got[1]["state"] != "Synced" {
		t.Errorf("json rows: %v", got)
	}
	out.Reset()
	if err := printStatus(&out, nil, "json", false); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("empty json = %q, %v", out.String(), err)
	}
}

func TestStatusOptionsValidate(t *testing.T) {
	for _, tt := range []struct {
		o    statusOptions
		want string
	}{
		{statusOptions{output: "table"}, ""},
		{statusOptions{output: "yaml"}, `-o "yaml": use table, wide or json`},
		{statusOptions{output: "wide", selector: "app in (a"}, `-l "app in (a"`},
		{statusOptions{output: "json", allNamespaces: true, kube: withNamespace("x")}, "-A and -n exclude each other"},
	} {
		err := tt.o.Validate()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.o, err, tt.want)
		}
	}
}

// TestStatusRestartWindow: a synced container that snug's agent holds a
// RestartContainer change of for a restart window shows RestartWanted,
// RestartGranted once the controller lets it restart; a container the
// condition does not name stays Synced.
func TestStatusRestartWindow(t *testing.T) {
	pod := fixturePod()
	pod.Name = "jvm"
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
		Type: v1alpha1.PodConditionRestartWanted, Status: corev1.ConditionTrue, Message: "resized only with a restart: app (memory)",
	})
	other := pod.DeepCopy()
	other.Name = "other"
	other.Status.Conditions[len(other.Status.Conditions)-1].Message = "resized only with a restart: sidecar (memory)"
	granted := pod.DeepCopy()
	granted.Name = "granted"
	granted.Status.Conditions = append(granted.Status.Conditions, corev1.PodCondition{
		Type: v1alpha1.PodConditionRestartGranted, Status: corev1.ConditionTrue, Message: "one pod of policy jvm at a time",
	})
	got := map[string]string{}
	for _, r := range statusRows([]corev1.Pod{*pod, *other, *granted}, statusNow) {
		got[r.Pod] = r.State
	}
	want := map[string]string{"jvm": "RestartWanted", "other": "Synced", "granted": "RestartGranted"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

// TestStatusPodLevel: a pod with pod-level resources has a (pod) row,
// Synced when the kubelet allocated the requests and applied the limits
// (the stale memory request the 1.35 and 1.36 kubelets report in
// status.resources does not count), InProgress while the pod cgroup still
// has the old cpu limit.
func TestStatusPodLevel(t *testing.T) {
	podLevel := func(name, statusCPULimit string) corev1.Pod {
		p := fixturePod()
		p.Name = name
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "250m", "memory", "64Mi"), Limits: rl("cpu", "500m", "memory", "128Mi")}
		p.Status.ContainerStatuses[0].Resources = &corev1.ResourceRequirements{}
		p.Status.ContainerStatuses[0].AllocatedResources = nil
		p.Status.AllocatedResources = rl("cpu", "250m", "memory", "64Mi")
		p.Status.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "250m", "memory", "48Mi"), Limits: rl("cpu", statusCPULimit, "memory", "128Mi")}
		return *p
	}
	var out bytes.Buffer
	if err := printStatus(&out, statusRows([]corev1.Pod{podLevel("applied", "500m"), podLevel("resizing", "400m")}, statusNow), "table", false); err != nil {
		t.Fatal(err)
	}
	want := `POD       CONTAINER  QOS        CPU                           MEMORY      STATE       RESTARTS  NODE
resizing  (pod)      Burstable  250m/500m (actual 250m/400m)  64Mi/128Mi  InProgress  0         n1
applied   app        Burstable  -/-                           -/-         Synced      0         n1
applied   (pod)      Burstable  250m/500m                     64Mi/128Mi  Synced      0         n1
resizing  app        Burstable  -/-                           -/-         Synced      0         n1
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}
