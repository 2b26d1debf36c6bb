package resize

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// podLevel gives a pod pod-level resources: requests and limits lists as
// rl takes them.
func podLevel(requests, limits []string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl(requests...), Limits: rl(limits...)}
	}
}

func TestNewPlanPodLevel(t *testing.T) {
	on := Options{PodLevelResize: true}
	// A pod sized at the pod level only: its container has no resources.
	bare := newPod("p").with(ctr("app", "", "")).edit(podLevel([]string{"cpu=200m", "memory=128Mi"}, []string{"cpu=400m", "memory=256Mi"})).get()
	// Its container asks for 150m/300m cpu of its own.
	inner := newPod("p").with(ctr("app", "150m/300m", "")).edit(podLevel([]string{"cpu=400m"}, []string{"cpu=800m"})).get()
	guaranteed := newPod("p").with(ctr("app", "", "")).edit(podLevel([]string{"cpu=500m", "memory=256Mi"}, []string{"cpu=500m", "memory=256Mi"})).get()
	restarting := newPod("p").with(ctr("app", "", "", restartOn(corev1.ResourceMemory))).edit(podLevel([]string{"memory=128Mi"}, []string{"memory=256Mi"})).get()
	runPlanCases(t, []planCase{
		{
			name: "grows cpu, limit keeps its ratio", pod: bare, opts: on,
			wish: []ContainerWish{aim(PodLevel, nil, "cpu=300m")},
			want: map[string]string{PodLevel: "cpu=300m/600m memory=128Mi/256Mi"},
		},
		{
			name: "not supported by the cluster", pod: bare,
			wish: []ContainerWish{aim(PodLevel, nil, "cpu=300m")}, wantReason: ReasonUnsupportedPod,
		},
		{
			name: "not supported: its containers are not resized either", pod: inner,
			wish: []ContainerWish{aim("app", nil, "cpu=200m")}, wantReason: ReasonUnsupportedPod,
		},
		{
			name: "a pod without pod-level resources", pod: newPod("p").with(ctr("app", "100m", "")).get(), opts: on,
			wish: []ContainerWish{aim(PodLevel, nil, "cpu=300m")}, wantReason: ReasonUnknownContainer,
		},
		{
			name: "shrink stops at the containers' requests and limits", pod: inner, opts: on,
			wish:    []ContainerWish{aim(PodLevel, nil, "cpu=100m")},
			want:    map[string]string{PodLevel: "cpu=150m/300m memory=-/-"},
			wantAdj: []Adjustment{KeptAboveContainers, KeptAboveContainers},
		},
		{
			name: "memory shrink stops above the pod cgroup's usage", pod: bare, opts: on,
			wish:    []ContainerWish{aim(PodLevel, nil, "memory=64Mi")},
			usage:   map[string]Usage{PodLevel: {MemoryWorkingSetBytes: 80 << 20}},
			want:    map[string]string{PodLevel: "cpu=200m/400m memory=96Mi/192Mi"},
			wantAdj: []Adjustment{KeptAboveUsage},
		},
		{
			name: "memory limit not lowered without the pod's usage", pod: bare, opts: on,
			wish: []ContainerWish{aim(PodLevel, nil, "memory=100Mi")}, wantReason: ReasonUsageUnknown,
		},
		{
			name: "a Guaranteed pod stays Guaranteed", pod: guaranteed, opts: on,
			wish: []ContainerWish{aim(PodLevel, requestsOnly, "cpu=700m")},
			want: map[string]string{PodLevel: "cpu=700m/700m memory=256Mi/256Mi"}, wantAdj: []Adjustment{LimitFollowsRequest},
		},
		{
			name: "a limit change that restarts a container that inherits it", pod: restarting, opts: Options{PodLevelResize: true, AllowRestart: true},
			wish: []ContainerWish{aim(PodLevel, nil, "memory=200Mi")}, wantReason: ReasonRestartRequired,
		},
		{
			name: "node room caps the pod-level request", pod: bare, opts: Options{PodLevelResize: true, NoRoom: NoRoomCap},
			wish: []ContainerWish{aim(PodLevel, nil, "cpu=2")}, node: rl("cpu=1", "memory=4Gi"), others: rl("cpu=500m"),
			want: map[string]string{PodLevel: "cpu=500m/1 memory=128Mi/256Mi"}, wantAdj: []Adjustment{CappedToNodeRoom},
		},
		{
			name: "node room refuses by default", pod: bare, opts: on,
			wish: []ContainerWish{aim(PodLevel, nil, "cpu=800m")}, node: rl("cpu=1", "memory=4Gi"), others: rl("cpu=500m"),
			wantReason: ReasonWouldDefer, wantPredicted: WouldDefer,
		},
		{
			name: "quota on limits counts the pod-level limit", pod: bare, opts: on,
			wish: []ContainerWish{aim(PodLevel, nil, "cpu=300m")}, ns: &Namespace{QuotaRoom: rl("limits.cpu=100m")},
			want: map[string]string{PodLevel: "cpu=250m/500m memory=128Mi/256Mi"}, wantAdj: []Adjustment{CappedToNamespace},
		},
	})
}

func TestNewPlanPodLevelPatch(t *testing.T) {
	pod := newPod("p").with(ctr("app", "100m", "")).edit(podLevel([]string{"cpu=200m"}, []string{"cpu=400m"})).get()
	in := Input{Pod: pod, NodeAllocatable: bigNode, Options: Options{PodLevelResize: true},
		Wish: Wish{Containers: []ContainerWish{aim(PodLevel, nil, "cpu=300m"), aim("app", nil, "cpu=150m")}}}
	plan, err := NewPlan(in)
	checkResult(t, in, plan, err)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Containers) != 2 || plan.Containers[0].Name != "app" || !plan.Containers[1].PodLevel || plan.Containers[1].Index != -1 {
		t.Fatalf("plan containers = %+v, want app then the pod level", plan.Containers)
	}
	var ops []jsonOp
	if err := json.Unmarshal(plan.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, op := range ops {
		paths = append(paths, op.Op+" "+op.Path)
	}
	got := strings.Join(paths, ", ")
	want := "test /spec/containers/0/name, test /spec/containers/0/resources/requests/cpu, test /spec/resources/requests/cpu, test /spec/resources/limits/cpu, " +
		"replace /spec/containers/0/resources/requests/cpu, replace /spec/resources/requests/cpu, replace /spec/resources/limits/cpu"
	if got != want {
		t.Errorf("patch ops:\n got %s\nwant %s", got, want)
	}
}

func TestNewPlanPodLevelKeys(t *testing.T) {
	on := Options{PodLevelResize: true}
	cpuOnly := newPod("p").with(ctr("app", "100m", "64Mi")).edit(podLevel([]string{"cpu=200m"}, []string{"cpu=400m"})).get()
	runPlanCases(t, []planCase{
		{
			name: "a resource the pod does not set at the pod level is not added", pod: cpuOnly, opts: on,
			wish:    []ContainerWish{aim(PodLevel, nil, "cpu=300m", "memory=128Mi")},
			want:    map[string]string{PodLevel: "cpu=300m/600m memory=-/-"},
			wantAdj: []Adjustment{NotControlled},
		},
		{
			name: "an explicit pod-level value is never added", pod: cpuOnly, opts: on,
			wish: []ContainerWish{exact(PodLevel, rl("memory=128Mi"), nil)}, wantReason: ReasonKeyChange,
		},
		{
			name: "a container grown above the pod-level request", pod: cpuOnly, opts: on,
			wish: []ContainerWish{exact("app", rl("cpu=300m"), nil)}, wantReason: ReasonPodLevelConflict,
		},
		{
			name: "a container grown beside the pod level, within it", pod: cpuOnly, opts: on,
			wish: []ContainerWish{exact("app", rl("cpu=300m"), nil), exact(PodLevel, rl("cpu=300m"), nil)},
			want: map[string]string{"app": "cpu=300m/- memory=64Mi/-", PodLevel: "cpu=300m/400m memory=-/-"},
		},
	})
}

func TestPodLevelActual(t *testing.T) {
	pod := newPod("p").with(ctr("app", "", "")).edit(podLevel([]string{"cpu=500m", "memory=128Mi"}, []string{"cpu=1", "memory=256Mi"})).get()
	if PodLevelActual(pod) != nil {
		t.Fatal("no pod-level status: want nil")
	}
	pod.Spec.Overhead = rl("cpu=50m")
	pod.Status.AllocatedResources = rl("cpu=250m", "memory=128Mi")
	// The kernel keeps the memory limit in whole pages: 256Mi less 4Ki.
	pod.Status.Resources = &corev1.ResourceRequirements{Requests: rl("cpu=250m", "memory=96Mi"), Limits: rl("cpu=400m", "memory=268431360")}
	got := PodLevelActual(pod)
	if s := summary(*got); s != "cpu=200m/400m memory=128Mi/256Mi" {
		t.Errorf("PodLevelActual = %s, want requests allocated less overhead, limits read back (memory within a page)", s)
	}
	pod.Status.Resources.Limits = rl("cpu=400m", "memory=200Mi")
	if s := summary(*PodLevelActual(pod)); s != "cpu=200m/400m memory=128Mi/200Mi" {
		t.Errorf("PodLevelActual = %s, want a memory limit more than a page short as it is", s)
	}
}

func TestRevertPodLevel(t *testing.T) {
	pod := newPod("p").with(ctr("app", "", "")).edit(podLevel([]string{"cpu=500m"}, []string{"cpu=1"})).get()
	pod.Status.AllocatedResources = rl("cpu=200m")
	pod.Status.Resources = &corev1.ResourceRequirements{Requests: rl("cpu=200m"), Limits: rl("cpu=400m")}
	patch, err := Revert(pod)
	if err != nil {
		t.Fatal(err)
	}
	got := patched(t, pod, patch)
	if s := summary(*got.Spec.Resources); s != "cpu=200m/400m memory=-/-" {
		t.Errorf("reverted pod-level resources %s, want what the kubelet reports applied, 200m/400m", s)
	}
	pod.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu=200m"), Limits: rl("cpu=400m")}
	if patch, err := Revert(pod); err != nil || patch != nil {
		t.Errorf("Revert of an applied pod level = %s, %v; want nothing to send", patch, err)
	}
}
