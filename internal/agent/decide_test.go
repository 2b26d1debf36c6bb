package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/actuate"
	"github.com/snug-dev/snug/internal/cgroup"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
)

// testPod is a running single-container pod with actual resources equal to
// its spec, as a resize-capable kubelet reports them.
func testPod(name string, labels map[string]string, req, lim corev1.ResourceList) *corev1.Pod {
	rr := corev1.ResourceRequirements{Requests: req, Limits: lim}
	qos := corev1.PodQOSBurstable
	switch {
	case len(req) == 0 && len(lim) == 0:
		qos = corev1.PodQOSBestEffort
	case len(lim) == 2 && req.Cpu().Cmp(*lim.Cpu()) == 0 && req.Memory().Cmp(*lim.Memory()) == 0:
		qos = corev1.PodQOSGuaranteed
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), Labels: labels, Generation: 1},
		Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "app", Resources: *rr.DeepCopy()}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, QOSClass: qos, ObservedGeneration: 1,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "app", ContainerID: "containerd://1", Resources: rr.DeepCopy(),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			}},
		},
	}
}

func rl(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

// policyList is a fixed set of policies; tests that change one change it
// in place (a binding holds the same pointer).
type policyList []*v1alpha1.SnugPolicy

func (p policyList) List(ns string) []*v1alpha1.SnugPolicy {
	var out []*v1alpha1.SnugPolicy
	for _, q := range p {
		if q.Namespace == ns {
			out = append(out, q)
		}
	}
	return out
}

func (p policyList) OnChange(func(string, string, bool)) error { return nil }

func selectorPolicy(name string, mode v1alpha1.UpdateMode) *v1alpha1.SnugPolicy {
	return &v1alpha1.SnugPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Generation: 1},
		Spec: v1alpha1.SnugPolicySpec{
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "load"}},
			UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: mode},
		},
	}
}

// fakeKubelet stands in for the API server and kubelet in the Decider's
// pure logic: its Patch (the only call internal/actuate makes here) checks
// the JSON patch's test operations against the stored pod (a failed test
// is the API server's generic 422) and, unless told to leave the resize
// undecided, stores the pod with the patch's values as spec and actual
// resources, as a kubelet that grants at once would.
type fakeKubelet struct {
	mu      sync.Mutex
	store   cache.Indexer
	patches [][]byte
	sent    chan struct{}
	// onUpdate is told of each version stored, as the pod informer tells
	// the agent (Agent.UpsertPod).
	onUpdate func(*corev1.Pod)
	// beforePatch, if set, runs before patch number n (from 0) is applied.
	beforePatch func(n int)
	// undecided leaves accepted resizes undecided: spec changes, status
	// does not (a kubelet that has not looked yet).
	undecided bool
	// refuse, if set, is the API server's answer to patch number n (from
	// 0); nil lets the patch through.
	refuse func(n int) error
	// statusPatches are the patches of pods/status (conditions), apart
	// from the resizes.
	statusPatches [][]byte
	rv            int
}

// fakeCore is the actuate.Client over a fakeKubelet; only PatchPod is
// implemented.
type fakeCore struct {
	actuate.Client
	fk *fakeKubelet
}

func (c fakeCore) PatchPod(ctx context.Context, _, name string, _ types.PatchType, patch []byte, _ metav1.PatchOptions, sub ...string) (*corev1.Pod, error) {
	if slices.Contains(sub, "status") {
		c.fk.mu.Lock()
		defer c.fk.mu.Unlock()
		c.fk.statusPatches = append(c.fk.statusPatches, patch)
		return c.fk.get(name), nil
	}
	return c.fk.patch(ctx, name, patch)
}

// update stores a new version of pod (with a new resourceVersion) and
// tells onUpdate.
func (f *fakeKubelet) update(pod *corev1.Pod) {
	f.mu.Lock()
	f.rv++
	pod.ResourceVersion = fmt.Sprint(f.rv)
	f.mu.Unlock()
	_ = f.store.Update(pod)
	if f.onUpdate != nil {
		f.onUpdate(pod)
	}
}

func (f *fakeKubelet) get(name string) *corev1.Pod {
	obj, ok, _ := f.store.GetByKey("ns/" + name)
	if !ok {
		return nil
	}
	return obj.(*corev1.Pod).DeepCopy()
}

func (f *fakeKubelet) patch(_ context.Context, name string, patch []byte) (*corev1.Pod, error) {
	f.mu.Lock()
	n := len(f.patches)
	f.patches = append(f.patches, patch)
	f.mu.Unlock()
	defer func() { f.sent <- struct{}{} }()
	if f.beforePatch != nil {
		f.beforePatch(n)
	}
	if f.refuse != nil {
		if err := f.refuse(n); err != nil {
			return nil, err
		}
	}
	var ops []struct {
		Op, Path string
		Value    any
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	p := f.get(name)
	if p == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
	}
	for _, op := range ops {
		var kind, res string
		// /spec/containers/0/resources/{requests,limits}/{cpu,memory}
		// or, pod-level, /spec/resources/{requests,limits}/{cpu,memory}
		podLevel := strings.HasPrefix(op.Path, "/spec/resources/")
		if podLevel {
			kind, res, _ = strings.Cut(strings.TrimPrefix(op.Path, "/spec/resources/"), "/")
		} else if _, err := fmtSscan(op.Path, &kind, &res); err != nil {
			continue
		}
		l := p.Spec.Containers[0].Resources.Requests
		sl := p.Status.ContainerStatuses[0].Resources.Requests
		if kind == "limits" {
			l, sl = p.Spec.Containers[0].Resources.Limits, p.Status.ContainerStatuses[0].Resources.Limits
		}
		if podLevel {
			// The kubelet reports the pod's allocated requests and the
			// pod cgroup's limits.
			l, sl = p.Spec.Resources.Requests, p.Status.AllocatedResources
			if kind == "limits" {
				l, sl = p.Spec.Resources.Limits, p.Status.Resources.Limits
			}
		}
		v, _ := op.Value.(string)
		q := resource.MustParse(v)
		switch op.Op {
		case "test":
			if cur := l[corev1.ResourceName(res)]; cur.Cmp(q) != 0 {
				// What the API server answers for a failed test.
				return nil, apierrors.NewGenericServerResponse(422, "", schema.GroupResource{}, "", "test failed", 0, false)
			}
		case "replace", "add":
			l[corev1.ResourceName(res)] = q
			if !f.undecided {
				sl[corev1.ResourceName(res)] = q
			}
		}
	}
	p.Generation++
	if !f.undecided {
		p.Status.ObservedGeneration = p.Generation
		// Granted: no resize is pending any more.
		p.Status.Conditions = slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodResizePending })
		p.Status.ContainerStatuses[0].AllocatedResources = p.Spec.Containers[0].Resources.Requests.DeepCopy()
	}
	f.update(p)
	return p.DeepCopy(), nil
}

func fmtSscan(path string, kind, res *string) (int, error) {
	const prefix = "/spec/containers/0/resources/"
	if len(path) <= len(prefix) || path[:len(prefix)] != prefix {
		return 0, errNoMatch
	}
	rest := path[len(prefix):]
	for i := range rest {
		if rest[i] == '/' {
			*kind, *res = rest[:i], rest[i+1:]
			return 2, nil
		}
	}
	return 0, errNoMatch
}

var errNoMatch = &json.UnsupportedValueError{Str: "no match"}

func newTestDecider(t *testing.T, dryRun bool, pods []*corev1.Pod, policies ...*v1alpha1.SnugPolicy) (*Agent, *Decider, *fakeKubelet) {
	t.Helper()
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := store.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	cfg := NewConfig()
	cfg.Node = "n"
	a, err := New(cfg, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	fk := &fakeKubelet{store: store, sent: make(chan struct{}, 64), onUpdate: a.UpsertPod}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: rl("2", "4Gi")}}
	d, err := a.Decide(DeciderConfig{
		Pods: corelisters.NewPodLister(store), Node: func() (*corev1.Node, error) { return node, nil },
		Policies: policyList(policies), ResizeClient: fakeCore{fk: fk}, DryRun: dryRun,
		Recommend: recommend.DefaultConfig(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return a, d, fk
}

func refOf(p *corev1.Pod) ContainerRef {
	return ContainerRef{Namespace: p.Namespace, Pod: p.Name, PodUID: p.UID, Container: "app",
		ContainerID: p.Status.ContainerStatuses[0].ContainerID, QOSClass: p.Status.QOSClass}
}

// throttled is a sample of a container pinned and throttled at its limit.
func throttled(at time.Time, limitMillis int64) Point {
	return Point{Signals: cgroup.Signals{
		Time: at, HasRate: true, IntervalSeconds: 1,
		CPUUsageMillicores: float64(limitMillis), CPUThrottledFraction: 1, CPUThrottledSecondsPerSecond: 1,
		CPULimitMillicores: limitMillis, MemoryWorkingSetBytes: 8 << 20, MemoryLimited: true,
		MemoryHeadroomBytes: 120 << 20, MemoryHeadroomFraction: 0.94,
	}, MemoryLimitBytes: 128 << 20, MemoryUsageBytes: 8 << 20}
}

// TestDeciderLeavesRoomForAHigherPriorityPod: on a node a grow would fill,
// the agent leaves free the claim of the pod there whose priority is
// higher (resize.PreemptionReserve), so that its replacement (a rolling
// update's surge pod) does not preempt the grown pod: the eleventh full
// run's TestChaos lost its workload that way, to snug's own controller.
// 2 cores: a filler of the same priority claims 1650m, a critical pod
// 100m; the throttled pod (50m) would get 250m, gets 150m.
func TestDeciderLeavesRoomForAHigherPriorityPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		filler := testPod("filler", map[string]string{"app": "filler"}, rl("1650m", "64Mi"), nil)
		critical := testPod("critical", map[string]string{"app": "critical"}, rl("100m", "64Mi"), nil)
		critical.Spec.Priority = new(int32(2000000000))
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod, filler, critical}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		now := time.Now()
		d.Observe(ctx, refOf(pod), throttled(now, 100))
		d.PassDone(ctx)
		waitSent(t, fk, "no resize sent after a fully throttled second")
		r := waitResizes(t, d, pod, 1).Resizes[0]
		got := ResourcesJSON{CPURequestMillicores: r.Containers["app"].CPURequestMillicores, CPULimitMillicores: r.Containers["app"].CPULimitMillicores}
		if diff := cmp.Diff(ResourcesJSON{CPURequestMillicores: 150, CPULimitMillicores: 300}, got); diff != "" {
			t.Errorf("new cpu (-want +got):\n%s\nplan: %s", diff, r.Plan)
		}
	})
}

// TestDeciderGrowsAThrottledContainer drives the decision step with
// throttled samples and checks the resize it sends and what it reports.
func TestDeciderGrowsAThrottledContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		a, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		now := time.Now()
		d.Observe(ctx, refOf(pod), throttled(now, 100))
		d.PassDone(ctx)
		waitSent(t, fk, "no resize sent after a fully throttled second")
		// The outcome comes back to the loop.
		v := waitResizes(t, d, pod, 1)
		r := v.Resizes[0]
		if r.Outcome != "Applied" {
			t.Errorf("outcome %s, want Applied", r.Outcome)
		}
		// A fully throttled second is censored: limit x5, request with it.
		want := ResourcesJSON{CPURequestMillicores: 250, CPULimitMillicores: 500}
		if diff := cmp.Diff(want, ResourcesJSON{CPURequestMillicores: r.Containers["app"].CPURequestMillicores, CPULimitMillicores: r.Containers["app"].CPULimitMillicores}); diff != "" {
			t.Errorf("new cpu (-want +got):\n%s", diff)
		}
		if r.DecidedAt != now {
			t.Errorf("decidedAt %v, want the sample's time %v", r.DecidedAt, now)
		}
		if n := metricValue(t, d.metrics, "snug_agent_resize_outcomes_total", "ns", "pol", "Applied"); n != 1 {
			t.Errorf("snug_agent_resize_outcomes_total{namespace=ns,policy=pol,outcome=Applied} %v, want 1", n)
		}
		if c := metricValue(t, d.metrics, "snug_agent_container_cpu_request_cores", "ns", "p", "app", "pol"); c != 0.05 {
			t.Errorf("snug_agent_container_cpu_request_cores %v, want the actual 0.05 when sampled", c)
		}
		if v.Policy != "ns/pol" || v.LastChange == nil || v.LastChange.CPU.Action != "Grow" || v.LastChange.CPU.Why != "Throttled" {
			t.Errorf("view %+v: want policy ns/pol and a last change cpu Grow Throttled", v)
		}
		stored, _ := corelisters.NewPodLister(fk.store).Pods("ns").Get("p")
		if q := stored.Status.QOSClass; q != corev1.PodQOSBurstable {
			t.Errorf("qos %s", q)
		}
		// The JSON API carries the view.
		a.mu.Lock()
		a.tracked[key{pod.UID, "app"}] = &tracked{ref: refOf(pod), ring: newRing(2)}
		a.tracked[key{pod.UID, "app"}].ring.push(throttled(now, 100))
		a.mu.Unlock()
		cs := a.Containers(Query{})
		if len(cs) != 1 {
			t.Fatalf("containers %d", len(cs))
		}
		if got := a.decider.View(cs[0].PodUID, cs[0].Container); got == nil || got.Recommendation == nil {
			t.Errorf("no recommendation in the view")
		}
	})
}

// TestDeciderLeavesAlone covers what must never be patched: a BestEffort
// pod, a pod under an Off policy, a dry run, a pod under no policy, a
// container whose policy mode is Off, and a policy that yields to a VPA.
func TestDeciderLeavesAlone(t *testing.T) {
	offContainer := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
	offContainer.Spec.ResourcePolicy = &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{
		{ContainerName: "app", Mode: v1alpha1.ContainerScalingModeOff},
		{ContainerName: "*"},
	}}
	yields := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
	yields.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionVPAConflict, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonYieldsToVPA}}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		policies []*v1alpha1.SnugPolicy
		dryRun   bool
		wantView bool
	}{
		{"best effort", testPod("p", map[string]string{"app": "load"}, nil, nil), []*v1alpha1.SnugPolicy{selectorPolicy("pol", v1alpha1.UpdateModeInPlace)}, false, true},
		{"mode Off", testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi")), []*v1alpha1.SnugPolicy{selectorPolicy("pol", v1alpha1.UpdateModeOff)}, false, true},
		{"mode Initial", testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi")), []*v1alpha1.SnugPolicy{selectorPolicy("pol", v1alpha1.UpdateModeInitial)}, false, true},
		{"dry run", testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi")), []*v1alpha1.SnugPolicy{selectorPolicy("pol", v1alpha1.UpdateModeInPlace)}, true, true},
		{"no policy", testPod("p", map[string]string{"app": "other"}, rl("50m", "64Mi"), rl("100m", "128Mi")), []*v1alpha1.SnugPolicy{selectorPolicy("pol", v1alpha1.UpdateModeInPlace)}, false, false},
		{"container Off", testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi")), []*v1alpha1.SnugPolicy{offContainer}, false, true},
		{"yields to a VPA", testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi")), []*v1alpha1.SnugPolicy{yields}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			_, d, fk := newTestDecider(t, tc.dryRun, []*corev1.Pod{tc.pod}, tc.policies...)
			now := time.Now()
			for i := range 5 {
				d.Observe(ctx, refOf(tc.pod), throttled(now.Add(time.Duration(i)*time.Second), 100))
				d.PassDone(ctx)
			}
			d.Wait()
			if len(fk.patches) != 0 {
				t.Errorf("sent %d patches, want none", len(fk.patches))
			}
			if v := d.View(tc.pod.UID, "app"); (v != nil) != tc.wantView {
				t.Errorf("view %+v, want one: %v", v, tc.wantView)
			}
		})
	}
}

// memoryHungry is a sample of a container throttled at its 100m cpu limit
// with its working set at its 128Mi memory limit: it wants both grown.
func memoryHungry(at time.Time) Point {
	p := throttled(at, 100)
	p.MemoryWorkingSetBytes, p.MemoryHeadroomBytes, p.MemoryHeadroomFraction = 126<<20, 2<<20, 2.0/128
	p.MemoryUsageBytes = 126 << 20
	return p
}

// TestDeciderHoldsRestartingResources: a change to a resource whose
// resizePolicy is RestartContainer would restart the container, so it is
// held (RestartRequired, told once per container instance) and nothing
// of it is sent; the container's other resource is still resized in place
// (before, the planner refused the pair and the CPU went unresized too).
func TestDeciderHoldsRestartingResources(t *testing.T) {
	for _, tc := range []struct {
		name       string
		restarting corev1.ResourceName
		wantHeld   string
	}{
		{"memory RestartContainer", corev1.ResourceMemory, "memory"},
		{"cpu RestartContainer", corev1.ResourceCPU, "cpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
				pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: tc.restarting, RestartPolicy: corev1.RestartContainer}}
				_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
				rec := record.NewFakeRecorder(16)
				d.cfg.Recorder = rec
				now := time.Now()
				for i := range 3 {
					d.Observe(ctx, refOf(pod), memoryHungry(now.Add(time.Duration(i)*time.Second)))
					d.PassDone(ctx)
					synctest.Wait()
				}
				d.Wait()
				fk.mu.Lock()
				patches := slices.Clone(fk.patches)
				fk.mu.Unlock()
				if len(patches) == 0 {
					t.Fatalf("no patch sent: the resource that does not restart was not resized")
				}
				for _, p := range patches {
					if strings.Contains(string(p), "/"+string(tc.restarting)) {
						t.Errorf("patch %s changes %s, whose resizePolicy is RestartContainer", p, tc.restarting)
					}
				}
				got := fk.get("p").Spec.Containers[0].Resources
				other := corev1.ResourceCPU
				if tc.restarting == corev1.ResourceCPU {
					other = corev1.ResourceMemory
				}
				if before, after := pod.Spec.Containers[0].Resources.Limits[other], got.Limits[other]; after.Cmp(before) <= 0 {
					t.Errorf("%s limit %s, want grown from %s", other, after.String(), before.String())
				}
				v := d.View(pod.UID, "app")
				ch := v.LastDecision.CPU
				if tc.restarting == corev1.ResourceMemory {
					ch = v.LastDecision.Memory
				}
				if ch.Action != "Hold" || ch.Why != "RestartRequired" {
					t.Errorf("last %s decision %+v, want Hold RestartRequired", tc.restarting, ch)
				}
				evs := slices.DeleteFunc(events(rec), func(e string) bool { return !strings.Contains(e, ReasonRestartRequired) })
				if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning RestartRequired snug leaves "+tc.wantHeld+" of container app as it is for now") ||
					!strings.Contains(evs[0], "its resizePolicy is RestartContainer") {
					t.Errorf("RestartRequired events %q, want one Warning holding %s", evs, tc.wantHeld)
				}
			})
		})
	}
}

// TestDeciderGrowsMemoryAfterOOMRestart: a container that comes back with a
// new ID and lastState OOMKilled grows memory on its next sample.
func TestDeciderGrowsMemoryAfterOOMRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		now := time.Now()
		idle := func(at time.Time) Point {
			return Point{Signals: cgroup.Signals{Time: at, HasRate: true, IntervalSeconds: 1, CPUUsageMillicores: 5, CPULimitMillicores: 100,
				MemoryWorkingSetBytes: 8 << 20, MemoryLimited: true, MemoryHeadroomBytes: 120 << 20, MemoryHeadroomFraction: 0.94}, MemoryLimitBytes: 128 << 20}
		}
		d.Observe(ctx, refOf(pod), idle(now))
		d.PassDone(ctx)

		restarted := pod.DeepCopy()
		restarted.Status.ContainerStatuses[0].ContainerID = "containerd://2"
		restarted.Status.ContainerStatuses[0].RestartCount = 1
		restarted.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}
		if err := fk.store.Update(restarted); err != nil {
			t.Fatal(err)
		}
		d.Observe(ctx, refOf(restarted), idle(now.Add(time.Second)))
		d.PassDone(ctx)
		waitSent(t, fk, "no resize sent after an OOM kill")
		v := d.View(pod.UID, "app")
		if v == nil || v.LastChange == nil || v.LastChange.Memory.Action != "Grow" || v.LastChange.Memory.Why != "OOMKill" {
			t.Fatalf("last change %+v, want memory Grow OOMKill", v.LastChange)
		}
		if got, want := v.LastChange.Memory.Limit, int64(192<<20); got != want {
			t.Errorf("memory limit %d, want %d (1.5 x 128Mi)", got, want)
		}
	})
}

// TestObservePending: a pod's PodResizePending condition (Deferred or
// Infeasible) is one series holding its start; a new reason replaces it,
// and none is left once the resize is no longer pending.
func TestObservePending(t *testing.T) {
	d := &Decider{metrics: newMetrics()}
	st := &podState{ns: "ns", name: "p", policy: "ns/pol"}
	pod := testPod("p", nil, rl("50m", "64Mi"), rl("100m", "128Mi"))
	since := time.Unix(1_700_000_000, 0)
	pending := func(reason string) {
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(since)}}
		d.observePending(st, pod)
	}
	pending(corev1.PodReasonDeferred)
	if n := len(gathered(t, d.metrics, "snug_agent_pod_resize_pending_since_timestamp_seconds")); n != 1 {
		t.Fatalf("%d pending series, want 1", n)
	}
	if v := metricValue(t, d.metrics, "snug_agent_pod_resize_pending_since_timestamp_seconds", "ns", "p", "pol", "Deferred"); v != 1_700_000_000 {
		t.Errorf("pending since %v, want the condition's lastTransitionTime", v)
	}
	pending(corev1.PodReasonInfeasible)
	if n := len(gathered(t, d.metrics, "snug_agent_pod_resize_pending_since_timestamp_seconds")); n != 1 {
		t.Fatalf("%d pending series after Deferred -> Infeasible, want 1", n)
	}
	if v := metricValue(t, d.metrics, "snug_agent_pod_resize_pending_since_timestamp_seconds", "ns", "p", "pol", "Infeasible"); v != 1_700_000_000 {
		t.Errorf("infeasible since %v", v)
	}
	pod.Status.Conditions = nil
	d.observePending(st, pod)
	if n := len(gathered(t, d.metrics, "snug_agent_pod_resize_pending_since_timestamp_seconds")); n != 0 {
		t.Errorf("%d pending series once nothing is pending, want 0", n)
	}
}

// gathered returns the series of the family name, each as its
// label values in order of the labels' names (as the registry sorts them).
func gathered(t *testing.T, m *Metrics, name string) map[string]float64 {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			var vals []string
			for _, l := range s.GetLabel() {
				vals = append(vals, l.GetValue())
			}
			v := s.GetGauge().GetValue()
			if s.Counter != nil {
				v = s.GetCounter().GetValue()
			}
			out[strings.Join(vals, "/")] = v
		}
	}
	return out
}

// metricValue is the value of one series, given its label values in the
// labels' order of declaration; -1 when absent.
func metricValue(t *testing.T, m *Metrics, name string, values ...string) float64 {
	t.Helper()
	// Gathered labels are sorted by name; match as a set.
	want := append([]string(nil), values...)
	slices.Sort(want)
	for k, v := range gathered(t, m, name) {
		got := strings.Split(k, "/")
		slices.Sort(got)
		if slices.Equal(got, want) {
			return v
		}
	}
	return -1
}

// TestDeciderSaysPodLevelResourcesOnce: a pod with pod-level resources
// (spec.resources) is not left silent: one PodLevelResources event names
// them, also across a new policy generation, and the container's view
// says snug does not resize them.
func TestDeciderSaysPodLevelResourcesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := podLevelPod()
		pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, pol)
		rec := record.NewFakeRecorder(16)
		d.cfg.Recorder = rec
		// What a 1.35 API server answers, with the feature off.
		fk.refuse = func(int) error {
			return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{field.Forbidden(field.NewPath(""),
				"resize of pods with pod-level resources is forbidden when InPlacePodLevelResourcesVerticalScalingEnabled feature gate is disabled")})
		}
		now := time.Now()
		d.Observe(ctx, podLevelRef(pod), throttled(now, 200))
		d.PassDone(ctx)
		waitSent(t, fk, "no resize sent")
		passUntil(t, d, "the refused resize's outcome", func() bool {
			v := d.View(pod.UID, resize.PodLevel)
			return v != nil && len(v.Resizes) == 1
		})
		for i := 1; i <= 3; i++ {
			if i == 2 {
				pol.Generation++ // a new policy generation says nothing again
			}
			d.Observe(ctx, podLevelRef(pod), throttled(now.Add(time.Duration(i)*time.Minute), 200))
			d.PassDone(ctx)
			d.Wait()
		}
		if n := len(fk.patches); n != 1 {
			t.Errorf("%d resizes sent, want 1: none after the API server said no", n)
		}
		var said []string
		for _, e := range events(rec) {
			if strings.HasPrefix(e, "Warning PodLevelResources") {
				said = append(said, e)
			}
		}
		if len(said) != 1 || !strings.Contains(said[0], "the pod sets pod-level resources (cpu 100m/200m, memory 128Mi/256Mi), and this cluster does not resize such pods in place") {
			t.Errorf("PodLevelResources events %q, want one naming cpu 100m/200m, memory 128Mi/256Mi", said)
		}
		if v := d.View(pod.UID, resize.PodLevel); v == nil || !strings.Contains(v.Note, "this cluster does not resize such pods in place") {
			t.Errorf("view %+v, want a note that the cluster does not resize it", v)
		}
	})
}

// podLevelPod is a running pod with pod-level resources (cpu 100m/200m,
// memory 128Mi/256Mi) and one container asking for 50m cpu and 64Mi of
// its own, as a 1.36 kubelet reports it.
func podLevelPod() *corev1.Pod {
	pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), nil)
	pod.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("100m", "128Mi"), Limits: rl("200m", "256Mi")}
	pod.Status.AllocatedResources = rl("100m", "128Mi")
	pod.Status.Resources = &corev1.ResourceRequirements{Requests: rl("100m", "128Mi"), Limits: rl("200m", "256Mi")}
	return pod
}

// podLevelRef is the pod cgroup's reference, as runningContainers makes it.
func podLevelRef(p *corev1.Pod) ContainerRef {
	return ContainerRef{Namespace: p.Namespace, Pod: p.Name, PodUID: p.UID, Container: resize.PodLevel,
		ContainerID: podLevelID(p.UID), QOSClass: p.Status.QOSClass}
}

// TestDeciderResizesPodLevelResources: the pod cgroup throttled at the
// pod-level cpu limit grows the pod-level values in place; its container,
// which the pod sizes at the pod level, is not resized.
func TestDeciderResizesPodLevelResources(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := podLevelPod()
		if refs := runningContainers(pod); len(refs) != 2 || refs[0] != podLevelRef(pod) {
			t.Fatalf("running containers %+v, want app and the pod cgroup", refs)
		}
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		now := time.Now()
		// The container at 200m (its share of the pod's limit), the pod
		// cgroup throttled at its 200m limit.
		d.Observe(ctx, refOf(pod), throttled(now, 200))
		d.Observe(ctx, podLevelRef(pod), throttled(now, 200))
		d.PassDone(ctx)
		waitSent(t, fk, "no resize sent")
		v := waitResizes(t, d, pod, 1)
		if r := v.Resizes[0]; r.Outcome != "Applied" || !strings.Contains(r.Plan, "(pod) cpu 100m/200m -> 500m/1") {
			t.Errorf("resize %+v, want the pod level's cpu grown and Applied", r)
		}
		patch := string(fk.patches[0])
		if !strings.Contains(patch, `"/spec/resources/limits/cpu"`) || strings.Contains(patch, "/spec/containers/0/resources/requests/cpu") {
			t.Errorf("patch %s: want the pod-level cpu changed and the container's not", patch)
		}
		stored := fk.get("p")
		if got := stored.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.String() != "50m" {
			t.Errorf("container cpu request %s, want 50m kept", got.String())
		}
		if pv := d.View(pod.UID, resize.PodLevel); pv == nil || !strings.Contains(pv.Note, "sized from the pod cgroup") {
			t.Errorf("pod-level view %+v, want its note", pv)
		}
		if cv := d.View(pod.UID, "app"); cv == nil || !strings.Contains(cv.Note, "at the pod level") {
			t.Errorf("container view %+v, want a note that the pod level sizes it", cv)
		} else if c := cv.LastDecision.CPU; c.Action != "Hold" || c.Why != "PodLevel" {
			t.Errorf("container's cpu decision %+v, want Hold PodLevel: the pod level sizes it", c)
		}
		// A grow of the pod level alone is a grow: the namespace's quotas
		// are read before it.
		if !planGrows(pod, &resize.Plan{Containers: []resize.ContainerPlan{{Name: resize.PodLevel, PodLevel: true,
			Requests: rl("500m", "128Mi"), Limits: rl("1", "256Mi")}}}) {
			t.Error("planGrows: a pod-level grow is no grow")
		}
	})
}

// TestPodLevelTarget: the pod level's target keeps what the pod sets at
// the pod level, less a limit change that would restart a container
// inheriting it.
func TestPodLevelTarget(t *testing.T) {
	pod := podLevelPod()
	pod.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("100m", ""), Limits: rl("200m", "")}
	target := rl("300m", "128Mi")
	podLevelTarget(pod, target)
	if _, ok := target[corev1.ResourceMemory]; ok || len(target) != 1 {
		t.Errorf("target %v, want cpu only: the pod sets no pod-level memory", target)
	}
	pod = podLevelPod()
	pod.Spec.Containers[0].Resources.Limits = nil
	pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	target = rl("300m", "200Mi")
	podLevelTarget(pod, target)
	if _, ok := target[corev1.ResourceMemory]; ok || len(target) != 1 {
		t.Errorf("target %v, want cpu only: a pod-level memory limit change would restart app", target)
	}
}
