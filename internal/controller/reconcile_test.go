package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/recommend"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

// reconcileEnv is a Controller whose informer stores the test fills
// directly, on a fake clock. Status writes land in the policy store (as
// the watch would bring them back); pods, ConfigMaps and evictions go to a
// fake clientset, whose objects the tests read for the resulting state.
type reconcileEnv struct {
	t     testing.TB
	c     *Controller
	cs    *fake.Clientset
	clock *clocktesting.FakeClock
}

func newReconcileEnv(t testing.TB) *reconcileEnv {
	t.Helper()
	cs := fake.NewClientset()
	// The Eviction API deletes the pod (no budget in these tests).
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(interface{ GetName() string })
		err := cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), a.GetNamespace(), ev.GetName())
		return true, nil, err
	})
	clk := clocktesting.NewFakeClock(t0)
	c := New(cs, nil, record.NewFakeRecorder(100), NewMetrics(prometheus.NewRegistry()), Config{Clock: clk})
	e := &reconcileEnv{t: t, c: c, cs: cs, clock: clk}
	// The checkpoint informer would bring the controller's writes back.
	cms := c.cmFactory.Core().V1().ConfigMaps().Informer().GetStore()
	for _, verb := range []string{"create", "update"} {
		cs.PrependReactor(verb, "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
			cm := a.(interface{ GetObject() runtime.Object }).GetObject().(*corev1.ConfigMap)
			return false, nil, cms.Update(cm.DeepCopy())
		})
	}
	c.statuses = func(string) statusWriter { return storeStatus{e} }
	return e
}

// storeStatus writes a status into the controller's policy store.
type storeStatus struct{ e *reconcileEnv }

func (s storeStatus) UpdateStatus(_ context.Context, p *v1alpha1.SnugPolicy, _ metav1.UpdateOptions) (*v1alpha1.SnugPolicy, error) {
	if err := s.e.c.policyInf.GetIndexer().Update(p.DeepCopy()); err != nil {
		return nil, err
	}
	return p, nil
}

// add puts objects into the controller's informer stores, and pods into
// the fake clientset too (evictions act on those).
func (e *reconcileEnv) add(objs ...runtime.Object) {
	e.t.Helper()
	f := e.c.factory
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *v1alpha1.SnugPolicy:
			err = e.c.policyInf.GetIndexer().Add(o)
		case *corev1.Pod:
			if err = f.Core().V1().Pods().Informer().GetStore().Add(o); err == nil {
				_, err = e.cs.CoreV1().Pods(o.Namespace).Create(e.t.Context(), o, metav1.CreateOptions{})
			}
		case *appsv1.Deployment:
			err = f.Apps().V1().Deployments().Informer().GetStore().Add(o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			err = f.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetStore().Add(o)
		default:
			e.t.Fatalf("add: %T not handled", o)
		}
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

// reconcile reconciles the policy name for every concern, as the queues
// would take it after one event (checkpoints, disruption, then the status
// that shows what the checkpoints worked out), and returns it as stored
// after, and the soonest of the concerns' requeues.
func (e *reconcileEnv) reconcile(name string) (*v1alpha1.SnugPolicy, time.Duration) {
	e.t.Helper()
	var requeue time.Duration
	for _, cn := range []*concern{e.c.checkpointQ, e.c.disruptionQ, e.c.statusQ} {
		after, err := cn.reconcile(e.t.Context(), key(tb.Namespace, name))
		if err != nil {
			e.t.Fatalf("reconciling %s (%s): %v", name, cn.name, err)
		}
		if after > 0 && (requeue == 0 || after < requeue) {
			requeue = after
		}
	}
	obj, ok, err := e.c.policyInf.GetIndexer().GetByKey(key(tb.Namespace, name))
	if err != nil || !ok {
		e.t.Fatalf("policy %s not in the store: %v", name, err)
	}
	return obj.(*v1alpha1.SnugPolicy), requeue
}

// podExists reports whether the pod is still in the fake clientset.
func (e *reconcileEnv) podExists(name string) bool {
	e.t.Helper()
	_, err := e.cs.CoreV1().Pods(tb.Namespace).Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	return err == nil
}

// cond is a condition's status and reason, for comparing.
type cond struct{ Status, Reason string }

func conds(p *v1alpha1.SnugPolicy, types ...string) map[string]cond {
	out := map[string]cond{}
	for _, t := range types {
		if c := meta.FindStatusCondition(p.Status.Conditions, t); c != nil {
			out[t] = cond{string(c.Status), c.Reason}
		}
	}
	return out
}

func TestReconcileResolvesTarget(t *testing.T) {
	for _, tc := range []struct {
		name         string
		objs         []runtime.Object
		wantSelector string
		want         map[string]cond
	}{
		{
			name: "deployment with pods",
			objs: []runtime.Object{
				tb.Deployment("web", "app", "web"),
				tb.Pod("web-1").Labels("app", "web").Ready().Get(),
				tb.Pod("api-1").Labels("app", "api").Ready().Get(),
			},
			wantSelector: "app=web",
			want: map[string]cond{
				v1alpha1.ConditionReady:         {"True", v1alpha1.ReasonResolved},
				v1alpha1.ConditionNoPodsMatched: {"False", reasonPodsMatched},
				v1alpha1.ConditionOverlapping:   {"False", reasonNoOverlap},
				v1alpha1.ConditionHPAConflict:   {"False", reasonNoHPA},
			},
		},
		{
			name:         "deployment without pods",
			objs:         []runtime.Object{tb.Deployment("web", "app", "web"), tb.Pod("api-1").Labels("app", "api").Get()},
			wantSelector: "app=web",
			want: map[string]cond{
				v1alpha1.ConditionReady:         {"True", v1alpha1.ReasonResolved},
				v1alpha1.ConditionNoPodsMatched: {"True", reasonNoPodsMatched},
			},
		},
		{
			name: "finished pods do not count",
			objs: []runtime.Object{
				tb.Deployment("web", "app", "web"),
				tb.Pod("web-1").Labels("app", "web").Phase(corev1.PodSucceeded).Get(),
			},
			wantSelector: "app=web",
			want:         map[string]cond{v1alpha1.ConditionNoPodsMatched: {"True", reasonNoPodsMatched}},
		},
		{
			name: "no such deployment",
			want: map[string]cond{
				v1alpha1.ConditionReady:         {"False", v1alpha1.ReasonTargetNotFound},
				v1alpha1.ConditionNoPodsMatched: {"Unknown", reasonTargetUnresolved},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newReconcileEnv(t)
			e.add(append(tc.objs, tb.Policy("web").Target("Deployment", "web").Get())...)
			got, _ := e.reconcile("web")
			if got.Status.Selector != tc.wantSelector {
				t.Errorf("status.selector %q, want %q", got.Status.Selector, tc.wantSelector)
			}
			if got.Status.ObservedGeneration != 1 {
				t.Errorf("observedGeneration %d, want 1", got.Status.ObservedGeneration)
			}
			var types []string
			for k := range tc.want {
				types = append(types, k)
			}
			if diff := cmp.Diff(tc.want, conds(got, types...)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReconcileOverlap: of two policies over the same pods the older
// governs them; each says so in its Overlapping condition, and the
// younger counts none of the shared pods.
func TestReconcileOverlap(t *testing.T) {
	e := newReconcileEnv(t)
	e.add(
		tb.Deployment("web", "app", "web"),
		tb.Pod("web-1").Labels("app", "web").Ready().Get(),
		tb.Policy("first").Target("Deployment", "web").Created(t0.Add(-time.Hour)).Get(),
		tb.Policy("second").Selector("app", "web").Get(),
	)
	// The older one first: its status.selector is what the younger sees.
	first, _ := e.reconcile("first")
	second, _ := e.reconcile("second")
	first, _ = e.reconcile("first")
	want := map[string]map[string]cond{
		"first":  {v1alpha1.ConditionOverlapping: {"True", v1alpha1.ReasonOlderPolicyWins}, v1alpha1.ConditionNoPodsMatched: {"False", reasonPodsMatched}},
		"second": {v1alpha1.ConditionOverlapping: {"True", v1alpha1.ReasonYieldsToOlderPolicy}, v1alpha1.ConditionNoPodsMatched: {"True", reasonNoPodsMatched}},
	}
	got := map[string]map[string]cond{
		"first":  conds(first, v1alpha1.ConditionOverlapping, v1alpha1.ConditionNoPodsMatched),
		"second": conds(second, v1alpha1.ConditionOverlapping, v1alpha1.ConditionNoPodsMatched),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}

// TestReconcileHPAConflict: an HPA that scales the target on cpu makes cpu
// uncontrolled, which the agents read from the status.
func TestReconcileHPAConflict(t *testing.T) {
	e := newReconcileEnv(t)
	e.add(
		tb.Deployment("web", "app", "web"),
		tb.Pod("web-1").Labels("app", "web").Ready().Get(),
		tb.HPA("web", "web", "cpu"),
		tb.HPA("other", "api", "memory"),
		tb.Policy("web").Target("Deployment", "web").Get(),
	)
	got, _ := e.reconcile("web")
	if diff := cmp.Diff([]corev1.ResourceName{corev1.ResourceCPU}, got.Status.UncontrolledResources); diff != "" {
		t.Errorf("uncontrolledResources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]cond{v1alpha1.ConditionHPAConflict: {"True", v1alpha1.ReasonHPAScalesResource}},
		conds(got, v1alpha1.ConditionHPAConflict)); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}

// TestReconcileEvictsDeferred: a pod whose resize stays Deferred is evicted
// once afterSeconds have passed, and only under InPlaceOrRecreate with
// deferred action Evict; the fake clock steps time.
func TestReconcileEvictsDeferred(t *testing.T) {
	for _, tc := range []struct {
		name      string
		policy    *v1alpha1.SnugPolicy
		wantEvict bool
	}{
		{"evict", tb.Policy("web").Target("Deployment", "web").Mode(v1alpha1.UpdateModeInPlaceOrRecreate).
			Deferred(v1alpha1.DeferredActionEvict, 60).Get(), true},
		{"fit to node", tb.Policy("web").Target("Deployment", "web").Mode(v1alpha1.UpdateModeInPlaceOrRecreate).
			Deferred(v1alpha1.DeferredActionFitToNode, 60).Get(), false},
		{"in place", tb.Policy("web").Target("Deployment", "web").Mode(v1alpha1.UpdateModeInPlace).
			Deferred(v1alpha1.DeferredActionEvict, 60).Get(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newReconcileEnv(t)
			e.add(
				tb.Deployment("web", "app", "web"),
				tb.Pod("web-1").Labels("app", "web").Ready().DeferredSince(t0).Get(),
				tb.Pod("web-2").Labels("app", "web").Ready().Get(),
				tc.policy,
			)
			e.clock.Step(30 * time.Second)
			_, requeue := e.reconcile("web")
			if !e.podExists("web-1") {
				t.Fatal("evicted after 30s of a 60s afterSeconds")
			}
			if tc.wantEvict && requeue != 30*time.Second {
				t.Errorf("requeue after %s, want 30s (when the deferral is old enough)", requeue)
			}
			e.clock.Step(31 * time.Second)
			e.reconcile("web")
			if got := !e.podExists("web-1"); got != tc.wantEvict {
				t.Errorf("web-1 evicted: %v, want %v", got, tc.wantEvict)
			}
			if !e.podExists("web-2") {
				t.Error("web-2, not deferred, was evicted")
			}
		})
	}
}

// TestReconcileRecordsEvictedSize: before evicting an owned pod for a
// Deferred resize, the controller records the size that resize asked for
// in the checkpoint, and evicts only once its cache shows the record; the
// record goes once a replacement was admitted with it, or after
// history.EvictedTTL.
func TestReconcileRecordsEvictedSize(t *testing.T) {
	e := newReconcileEnv(t)
	pol := tb.Policy("web").Target("Deployment", "web").Mode(v1alpha1.UpdateModeInPlaceOrRecreate).Deferred(v1alpha1.DeferredActionEvict, 0).Get()
	victim := tb.Pod("web-1").Labels("app", "web").OwnedBy("web-rs").Container("app", "700m", "", "64Mi", "").Ready().DeferredSince(t0).Get()
	e.add(tb.Deployment("web", "app", "web"), victim,
		tb.Pod("web-2").Labels("app", "web").OwnedBy("web-rs").Container("app", "100m", "", "64Mi", "").Ready().Get(), pol)
	records := func() []history.Evicted {
		cm, err := e.cs.CoreV1().ConfigMaps(tb.Namespace).Get(t.Context(), history.CheckpointName("web"), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading the checkpoint: %v", err)
		}
		list, err := history.CheckpointEvicted(cm.Data)
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	e.clock.Step(time.Second)
	e.reconcile("web") // writes the checkpoint, then the record
	if !e.podExists("web-1") {
		t.Fatal("evicted before the size was recorded")
	}
	list := records()
	if len(list) != 1 || list[0].UID != victim.UID || list[0].Owner != "uid-web-rs" {
		t.Fatalf("records %+v, want one for web-1 owned by web-rs", list)
	}
	if q := list[0].Requests["app"][corev1.ResourceCPU]; q.String() != "700m" {
		t.Errorf("recorded cpu %s, want the asked-for 700m", q.String())
	}
	e.reconcile("web")
	if e.podExists("web-1") {
		t.Fatal("not evicted once the record was in the cache")
	}
	if got := records(); len(got) != 1 {
		t.Errorf("records %+v after the eviction, want the one kept for the replacement", got)
	}

	// The replacement, admitted with the record, takes it up.
	a, _ := json.Marshal(history.Admission{Policy: "web", Containers: []history.AdmittedContainer{{Name: "app"}}, Evicted: "web-1"})
	repl := tb.Pod("web-3").Labels("app", "web").OwnedBy("web-rs").Container("app", "700m", "", "64Mi", "").Ready().Get()
	repl.Annotations = map[string]string{history.AdmissionAnnotation: string(a)}
	if err := e.c.factory.Core().V1().Pods().Informer().GetStore().Delete(victim); err != nil {
		t.Fatal(err)
	}
	e.add(repl)
	e.reconcile("web")
	if got := records(); len(got) != 0 {
		t.Errorf("records %+v after the replacement was admitted with it, want none", got)
	}

	// Expiry: a record nobody took up goes after the TTL.
	left := []history.Evicted{{Pod: "web-9", UID: "uid-web-9", Owner: "uid-web-rs", Time: e.clock.Now()}}
	if got := liveEvicted(left, nil, e.clock.Now().Add(history.EvictedTTL-time.Second)); len(got) != 1 {
		t.Errorf("record dropped before its TTL: %+v", got)
	}
	if got := liveEvicted(left, nil, e.clock.Now().Add(history.EvictedTTL)); len(got) != 0 {
		t.Errorf("record kept past its TTL: %+v", got)
	}
}

// TestReconcileStatusRecommendationBanded: status.recommendation is
// rewritten only when it moves out of the hysteresis band
// (recommendationMoved): the same load learnt for longer (bounds
// narrowing, a status write after every fold before) leaves the status
// alone; a load twice as large replaces it; a new spec shows at once.
func TestReconcileStatusRecommendationBanded(t *testing.T) {
	e := newReconcileEnv(t)
	writes := 0
	e.c.statuses = func(string) statusWriter { return countingStatus{storeStatus{e}, &writes} }
	cfg := recommend.DefaultConfig()
	pod := tb.Pod("web-1").Labels("app", "web").Container("app", "100m", "", "64Mi", "").Ready().Get()
	annotate := func(seconds int, cpuMillis float64) {
		t.Helper()
		s, _ := json.Marshal(history.Snapshot{Time: e.clock.Now(), Containers: map[string]string{"app": snapshotOf(t, cfg, seconds, cpuMillis, 40<<20, e.clock.Now())}})
		p := pod.DeepCopy()
		p.Annotations = map[string]string{history.SnapshotAnnotation: string(s)}
		if err := e.c.factory.Core().V1().Pods().Informer().GetStore().Update(p); err != nil {
			t.Fatal(err)
		}
	}
	pol := tb.Policy("web").Selector("app", "web").Get()
	pol.Generation = 1
	e.add(pod, pol)
	targetCPU := func(p *v1alpha1.SnugPolicy) int64 {
		t.Helper()
		if p.Status.Recommendation == nil {
			t.Fatal("no recommendation in status")
		}
		return p.Status.Recommendation.ContainerRecommendations[0].Target.Cpu().MilliValue()
	}
	step := func() { e.clock.Step(10 * time.Minute) } // past the checkpoint interval

	// An hour learnt: the bounds have mostly narrowed.
	annotate(3600, 120)
	p, _ := e.reconcile("web")
	first, firstWrites := targetCPU(p), writes
	for _, seconds := range []int{3900, 4200, 4500} {
		step()
		annotate(seconds, 120)
		p, _ = e.reconcile("web")
	}
	if writes != firstWrites || targetCPU(p) != first {
		t.Errorf("the same load learnt for longer: %d status writes after the first %d, target %dm (was %dm); want none, the same",
			writes-firstWrites, firstWrites, targetCPU(p), first)
	}
	// What would have been written: the bounds did move, inside the band.
	rec, _, err := e.c.history(t.Context(), p, []*corev1.Pod{pod}, nil, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if equality.Semantic.DeepEqual(rec, p.Status.Recommendation) {
		t.Error("the recommendation did not change at all: the test does not exercise the band")
	}

	step()
	annotate(4800, 240)
	p, _ = e.reconcile("web")
	if writes != firstWrites+1 || targetCPU(p) < 2*first*9/10 {
		t.Errorf("twice the load: %d status writes, target %dm; want one, about %dm", writes-firstWrites, targetCPU(p), 2*first)
	}

	// A new generation (maxAllowed 150m) shows at once, inside the band too.
	pol = p.DeepCopy()
	pol.Generation = 2
	pol.Spec.ResourcePolicy = &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
		ContainerName: "*", MaxAllowed: &v1alpha1.ResourceAmounts{CPU: ptr.To(resource.MustParse(fmt.Sprintf("%dm", targetCPU(p)*95/100)))},
	}}}
	if err := e.c.policyInf.GetIndexer().Update(pol); err != nil {
		t.Fatal(err)
	}
	want := targetCPU(p) * 95 / 100
	if p, _ = e.reconcile("web"); targetCPU(p) != want {
		t.Errorf("after a new maxAllowed: target %dm, want %dm", targetCPU(p), want)
	}
	// A cap shows exactly even when status already observed the
	// generation (a reconcile whose history step failed, say).
	pol = p.DeepCopy()
	want = want * 95 / 100
	pol.Spec.ResourcePolicy.ContainerPolicies[0].MaxAllowed.CPU = ptr.To(resource.MustParse(fmt.Sprintf("%dm", want)))
	if err := e.c.policyInf.GetIndexer().Update(pol); err != nil {
		t.Fatal(err)
	}
	if p, _ = e.reconcile("web"); targetCPU(p) != want {
		t.Errorf("a cap inside the band, generation observed: target %dm, want %dm", targetCPU(p), want)
	}
}

// TestReconcileWritesFinalSnapshotAtOnce: a terminating pod's newer
// snapshot (its agent's last) is folded into the checkpoint at once, not
// held for the checkpoint interval, so that it is what is retired.
func TestReconcileWritesFinalSnapshotAtOnce(t *testing.T) {
	e := newReconcileEnv(t)
	cfg := recommend.DefaultConfig()
	pod := tb.Pod("web-1").Labels("app", "web").Container("app", "100m", "", "64Mi", "").Ready().Get()
	annotate := func(p *corev1.Pod, seconds int) *corev1.Pod {
		s, _ := json.Marshal(history.Snapshot{Time: e.clock.Now(), Containers: map[string]string{"app": snapshotOf(t, cfg, seconds, 120, 40<<20, e.clock.Now())}})
		p = p.DeepCopy()
		p.Annotations = map[string]string{history.SnapshotAnnotation: string(s)}
		return p
	}
	e.add(annotate(pod, 600), tb.Policy("web").Selector("app", "web").Get())
	e.reconcile("web")
	stored := func() time.Time {
		cm, err := e.cs.CoreV1().ConfigMaps(tb.Namespace).Get(t.Context(), history.CheckpointName("web"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var pods map[string]history.Snapshot
		if err := json.Unmarshal([]byte(cm.Data["pods.json"]), &pods); err != nil {
			t.Fatal(err)
		}
		return pods[string(pod.UID)].Time
	}
	first := stored()
	store := e.c.factory.Core().V1().Pods().Informer().GetStore()
	e.clock.Step(5 * time.Second)
	if err := store.Update(annotate(pod, 605)); err != nil {
		t.Fatal(err)
	}
	e.reconcile("web")
	if got := stored(); !got.Equal(first) {
		t.Fatalf("a live pod's newer snapshot written within the interval (%v, was %v)", got, first)
	}
	e.clock.Step(5 * time.Second)
	last := annotate(pod, 610)
	last.DeletionTimestamp = &metav1.Time{Time: e.clock.Now()}
	if err := store.Update(last); err != nil {
		t.Fatal(err)
	}
	e.reconcile("web")
	if got := stored(); !got.Equal(e.clock.Now()) {
		t.Errorf("the terminating pod's last snapshot not written at once: stored %v, want %v", got, e.clock.Now())
	}
}

type countingStatus struct {
	statusWriter
	n *int
}

func (c countingStatus) UpdateStatus(ctx context.Context, p *v1alpha1.SnugPolicy, o metav1.UpdateOptions) (*v1alpha1.SnugPolicy, error) {
	*c.n++
	return c.statusWriter.UpdateStatus(ctx, p, o)
}

// TestReconcileNamespaceTerminating: a checkpoint refused because its
// namespace is being deleted is no failure: no CheckpointFailed event (the
// pods' last snapshots go out as the namespace goes, so this happens at
// every namespace deletion).
func TestReconcileNamespaceTerminating(t *testing.T) {
	e := newReconcileEnv(t)
	rec := record.NewFakeRecorder(10)
	e.c.recorder = rec
	e.cs.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		err := apierrors.NewForbidden(corev1.Resource("configmaps"), "snug-checkpoint-web", errors.New("unable to create new content in namespace ns because it is being terminated"))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Message: "ns", Field: "metadata.namespace"})
		return true, nil, err
	})
	cfg := recommend.DefaultConfig()
	pod := tb.Pod("web-1").Labels("app", "web").Container("app", "100m", "", "64Mi", "").Ready().Get()
	s, _ := json.Marshal(history.Snapshot{Time: e.clock.Now(), Containers: map[string]string{"app": snapshotOf(t, cfg, 600, 120, 40<<20, e.clock.Now())}})
	pod.Annotations = map[string]string{history.SnapshotAnnotation: string(s)}
	e.add(pod, tb.Policy("web").Selector("app", "web").Get())
	e.reconcile("web")
	for {
		select {
		case ev := <-rec.Events:
			if strings.Contains(ev, EventCheckpointFailed) {
				t.Errorf("event %q for a namespace being deleted", ev)
			}
		default:
			return
		}
	}
}
