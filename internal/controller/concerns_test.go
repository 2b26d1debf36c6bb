package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/recommend"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

// annotated is pod with a snapshot of seconds at cpuMillis, taken now.
func (e *reconcileEnv) annotated(pod *corev1.Pod, seconds int, cpuMillis float64) *corev1.Pod {
	e.t.Helper()
	s, _ := json.Marshal(history.Snapshot{Time: e.clock.Now(), Containers: map[string]string{
		"app": snapshotOf(e.t, recommend.DefaultConfig(), seconds, cpuMillis, 40<<20, e.clock.Now())}})
	pod = pod.DeepCopy()
	pod.Annotations = map[string]string{history.SnapshotAnnotation: string(s)}
	return pod
}

// TestConcernErrorRetriesOnlyItsQueue: a checkpoint the API server refuses
// is an error of the checkpoints concern alone, retried through its
// queue's rate limiter, and an event at the first failure of the streak;
// the status concern still writes the policy's status, and the disruption
// concern has nothing to retry.
func TestConcernErrorRetriesOnlyItsQueue(t *testing.T) {
	e := newReconcileEnv(t)
	rec := record.NewFakeRecorder(100)
	e.c.recorder = rec
	creates := 0
	e.cs.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		if creates == 1 { // a conflict first: no failure, no event
			return true, nil, apierrors.NewAlreadyExists(corev1.Resource("configmaps"), "snug-checkpoint-web")
		}
		return true, nil, apierrors.NewForbidden(corev1.Resource("configmaps"), "snug-checkpoint-web", errors.New(`exceeded quota: cms, requested: count/configmaps=1, used: count/configmaps=10, limited: count/configmaps=10`))
	})
	e.add(e.annotated(tb.Pod("web-1").Labels("app", "web").Container("app", "100m", "", "64Mi", "").Ready().Get(), 600, 120),
		tb.Policy("web").Selector("app", "web").Get())
	k := key(tb.Namespace, "web")
	e.c.process(t.Context(), e.c.checkpointQ, k) // the conflict
	for _, cn := range e.c.concerns {
		e.c.process(t.Context(), cn, k)
	}
	if n := e.c.checkpointQ.queue.NumRequeues(k); n != 2 {
		t.Errorf("checkpoints: %d rate-limited requeues, want 2 (a conflict, a failure)", n)
	}
	for _, cn := range []*concern{e.c.statusQ, e.c.disruptionQ} {
		if n := cn.queue.NumRequeues(k); n != 0 {
			t.Errorf("%s: %d rate-limited requeues, want 0 (the checkpoint's error is not its)", cn.name, n)
		}
	}
	obj, _, _ := e.c.policyInf.GetIndexer().GetByKey(k)
	p := obj.(*v1alpha1.SnugPolicy)
	if p.Status.ObservedGeneration != p.Generation || meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady) == nil {
		t.Errorf("status not written beside a failing checkpoint: %+v", p.Status)
	}
	select {
	case ev := <-rec.Events:
		if !strings.Contains(ev, EventCheckpointFailed) || !strings.Contains(ev, "exceeded quota") {
			t.Errorf("event %q, want %s with the API server's reason", ev, EventCheckpointFailed)
		}
	default:
		t.Errorf("no %s event", EventCheckpointFailed)
	}
	// The retry fails again: one more requeue, no second event.
	e.c.process(t.Context(), e.c.checkpointQ, k)
	if n := e.c.checkpointQ.queue.NumRequeues(k); n != 3 {
		t.Errorf("checkpoints after a second failure: %d requeues, want 3", n)
	}
	select {
	case ev := <-rec.Events:
		t.Errorf("a second event for the same streak of failures: %q", ev)
	default:
	}

	// However long the streak, the key comes back within a resync
	// interval (client-go's default limiter waits up to 1000 s).
	for range 19 {
		e.c.process(t.Context(), e.c.checkpointQ, k)
	}
	if len(rec.Events) != 0 {
		t.Errorf("%d more events in one streak of failures", len(rec.Events))
	}
	q := e.c.checkpointQ.queue
	e.clock.Step(time.Second) // the streak's early, short retries come due: drain them
	waitLen(t, q, 1)
	item, _ := q.Get()
	q.Done(item)
	e.c.process(t.Context(), e.c.checkpointQ, k) // the 23rd failure: 5 ms * 2^22, capped
	if q.Len() != 0 {
		t.Fatalf("the 23rd failure's retry is due at once")
	}
	e.clock.Step(e.c.cfg.ResyncInterval)
	waitLen(t, q, 1)
}

// waitLen waits until q holds n keys ready to process (the delaying
// queue's own goroutine moves them there).
func waitLen(t *testing.T, q workqueue.TypedRateLimitingInterface[string], n int) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return q.Len() == n, nil
	}); err != nil {
		t.Fatalf("queue length %d, want %d", q.Len(), n)
	}
}

// TestConcernStatusShowsNewGeneration: after a change of spec, the status
// observes the new generation only together with the recommendation worked
// out under it, in one write, even when the status concern runs before the
// checkpoints concern has worked it out, and even on a new leader that has
// worked out nothing yet; and though it moved less than the band: here a
// cap on the upper bound lifted, which moves that bound by 5 %.
//
// refused: the checkpoint's write at the new generation is refused (a full
// quota): the recommendation still goes out with the generation.
func TestConcernStatusShowsNewGeneration(t *testing.T) {
	for _, tc := range []struct{ takeover, refused bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		takeover := tc.takeover
		t.Run(fmt.Sprintf("takeover=%v,refused=%v", tc.takeover, tc.refused), func(t *testing.T) {
			e := newReconcileEnv(t)
			writes := 0
			e.c.statuses = func(string) statusWriter { return countingStatus{storeStatus{e}, &writes} }
			pod := e.annotated(tb.Pod("web-1").Labels("app", "web").Container("app", "100m", "", "64Mi", "").Ready().Get(), 3600, 120)
			pol := tb.Policy("web").Selector("app", "web").Get()
			pol.Generation = 1
			e.add(pod, pol)
			p, _ := e.reconcile("web")
			if p.Status.Recommendation == nil {
				t.Fatal("no recommendation in status")
			}
			r := p.Status.Recommendation.ContainerRecommendations[0]
			uncapped := r.UpperBound.Cpu().MilliValue()
			capped := uncapped * 95 / 100
			if capped <= r.Target.Cpu().MilliValue() {
				t.Fatalf("upper bound %dm, target %v: want the bound more than 5 %% above the target", uncapped, r.Target.Cpu())
			}
			k := key(tb.Namespace, "web")
			get := func() *v1alpha1.SnugPolicy {
				obj, _, _ := e.c.policyInf.GetIndexer().GetByKey(k)
				return obj.(*v1alpha1.SnugPolicy)
			}
			upper := func() int64 {
				return get().Status.Recommendation.ContainerRecommendations[0].UpperBound.Cpu().MilliValue()
			}
			respec := func(gen int64, rp *v1alpha1.PodResourcePolicy) {
				t.Helper()
				pol := get().DeepCopy()
				pol.Generation = gen
				pol.Spec.ResourcePolicy = rp
				if err := e.c.policyInf.GetIndexer().Update(pol); err != nil {
					t.Fatal(err)
				}
			}
			respec(2, &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
				ContainerName: "*", MaxAllowed: &v1alpha1.ResourceAmounts{CPU: ptr.To(resource.MustParse(fmt.Sprintf("%dm", capped)))},
			}}})
			e.reconcile("web")
			if got := upper(); got != capped {
				t.Fatalf("capped: upper bound %dm, want %dm", got, capped)
			}

			// The cap lifted; the status concern runs first.
			if takeover {
				e.c.mu.Lock()
				clear(e.c.recs)
				e.c.mu.Unlock()
			}
			respec(3, nil)
			before := writes
			if _, err := e.c.statusQ.reconcile(t.Context(), k); err != nil {
				t.Fatal(err)
			}
			if p := get(); writes != before || p.Status.ObservedGeneration != 2 {
				t.Fatalf("status before the checkpoints: %d writes, generation %d observed; want none, still 2", writes-before, p.Status.ObservedGeneration)
			}
			// Nothing waits on the status queue before the checkpoints
			// concern hands the generation over.
			for e.c.statusQ.queue.Len() > 0 {
				item, _ := e.c.statusQ.queue.Get()
				e.c.statusQ.queue.Done(item)
			}
			if tc.refused {
				// The checkpoint gone from the cache, its re-creation
				// refused.
				cms := e.c.cmFactory.Core().V1().ConfigMaps().Informer().GetStore()
				for _, o := range cms.List() {
					if err := cms.Delete(o); err != nil {
						t.Fatal(err)
					}
				}
				e.cs.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(corev1.Resource("configmaps"), "snug-checkpoint-web", errors.New("exceeded quota"))
				})
			}
			if _, err := e.c.checkpointQ.reconcile(t.Context(), k); (err != nil) != tc.refused {
				t.Fatalf("checkpoints: error %v, want one: %v", err, tc.refused)
			}
			if e.c.statusQ.queue.Len() != 1 {
				t.Errorf("the checkpoints concern did not hand the new generation to the status queue (length %d)", e.c.statusQ.queue.Len())
			}
			if _, err := e.c.statusQ.reconcile(t.Context(), k); err != nil {
				t.Fatal(err)
			}
			if p := get(); writes != before+1 || p.Status.ObservedGeneration != 3 || upper() != uncapped {
				t.Errorf("after the checkpoints: %d writes, generation %d, upper bound %dm; want one write, 3 and the uncapped %dm",
					writes-before, p.Status.ObservedGeneration, upper(), uncapped)
			}
		})
	}
}

// TestConcernCadences: a concern's short requeue is its own: a pending
// eviction brings the disruption concern back within a second, while the
// checkpoints concern (and its fold) waits for its interval.
func TestConcernCadences(t *testing.T) {
	e := newReconcileEnv(t)
	e.add(tb.Deployment("web", "app", "web"),
		tb.Pod("web-1").Labels("app", "web").Ready().DeferredSince(t0).Get(),
		tb.Pod("web-2").Labels("app", "web").Ready().Get(),
		tb.Policy("web").Target("Deployment", "web").Mode(v1alpha1.UpdateModeInPlaceOrRecreate).Deferred(v1alpha1.DeferredActionEvict, 0).Get())
	k := key(tb.Namespace, "web")
	after := map[string]time.Duration{}
	for range 2 { // the first evicts, the second waits for the cache to show it
		for _, cn := range e.c.concerns {
			d, err := cn.reconcile(t.Context(), k)
			if err != nil {
				t.Fatal(err)
			}
			after[cn.name] = d
		}
	}
	if e.podExists("web-1") {
		t.Fatal("web-1 was not evicted")
	}
	if d := after["disruption"]; d <= 0 || d > time.Second {
		t.Errorf("disruption requeues after %s, want within a second (an eviction the cache does not show yet)", d)
	}
	for _, name := range []string{"checkpoints", "status"} {
		if d := after[name]; d < 10*time.Second {
			t.Errorf("%s requeues after %s: the disruption concern's cadence leaked into it", name, d)
		}
	}
}

// TestConcernRouting: an agent's snapshot annotation, the bulk of pod
// events at scale, wakes only the checkpoints concern (the one that reads
// it); any other change of the pod wakes all three. A policy's own status
// write wakes only that policy, not its namespace's others; a change that
// may move its selector wakes them all (overlap).
func TestConcernRouting(t *testing.T) {
	e := newReconcileEnv(t)
	pod := e.annotated(tb.Pod("web-1").Labels("app", "web").Container("app", "100m", "", "64Mi", "").Ready().Get(), 600, 120)
	web, api := tb.Policy("web").Selector("app", "web").Get(), tb.Policy("api").Selector("app", "api").Get()
	e.add(pod, web, api)
	lens := func() map[string]int {
		out := map[string]int{}
		for _, cn := range e.c.concerns {
			out[cn.name] = cn.queue.Len()
			for cn.queue.Len() > 0 {
				item, _ := cn.queue.Get()
				cn.queue.Done(item)
			}
		}
		return out
	}
	lens()
	later := e.annotated(pod, 1200, 130)
	later.ResourceVersion = "2"
	e.c.onPod(pod, later)
	if got, want := lens(), map[string]int{"checkpoints": 1, "status": 0, "disruption": 0}; !maps.Equal(got, want) {
		t.Errorf("a snapshot moved: queue lengths %v, want %v", got, want)
	}
	ready := later.DeepCopy()
	ready.Status.Conditions = nil
	e.c.onPod(later, ready)
	if got, want := lens(), map[string]int{"checkpoints": 1, "status": 1, "disruption": 1}; !maps.Equal(got, want) {
		t.Errorf("conditions changed: queue lengths %v, want %v", got, want)
	}
	both := ready.DeepCopy()
	both.Annotations[history.SnapshotAnnotation] = pod.Annotations[history.SnapshotAnnotation]
	both.Labels["tier"] = "front"
	e.c.onPod(ready, both)
	if got, want := lens(), map[string]int{"checkpoints": 1, "status": 1, "disruption": 1}; !maps.Equal(got, want) {
		t.Errorf("a snapshot and a label changed: queue lengths %v, want %v", got, want)
	}

	status := web.DeepCopy()
	status.Status.ObservedGeneration = 1
	e.c.onPolicy(web, status)
	if got, want := lens(), map[string]int{"checkpoints": 1, "status": 1, "disruption": 1}; !maps.Equal(got, want) {
		t.Errorf("a status write: queue lengths %v, want %v (the policy itself only)", got, want)
	}
	respec := status.DeepCopy()
	respec.Generation++
	e.c.onPolicy(status, respec)
	if got, want := lens(), map[string]int{"checkpoints": 2, "status": 2, "disruption": 2}; !maps.Equal(got, want) {
		t.Errorf("a new generation: queue lengths %v, want %v (both policies)", got, want)
	}
	e.c.onPolicy(respec, nil)
	if got, want := lens(), map[string]int{"checkpoints": 2, "status": 2, "disruption": 2}; !maps.Equal(got, want) {
		t.Errorf("a deletion: queue lengths %v, want %v (both policies)", got, want)
	}
}
