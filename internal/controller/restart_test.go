package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

const (
	wanted  = policy.ConditionRestartWanted
	granted = policy.ConditionRestartGranted
	isTrue  = corev1.ConditionTrue
	isFalse = corev1.ConditionFalse
)

// TestPlanWindows: one window per policy at a time, only while the other
// pods are Ready, never for the only pod without singleReplica, the
// longest asking first; grants end when the pod no longer asks, after the
// TTL, or when the policy loses its window.
func TestPlanWindows(t *testing.T) {
	now := t0.Add(time.Hour)
	// inFlight has a memory resize of a RestartContainer container that the
	// kubelet has not applied: spec 128Mi, status 64Mi.
	inFlight := tb.Pod("a").Ready().Container("app", "50m", "100m", "64Mi", "64Mi").Get()
	inFlight.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	inFlight.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
	infeasible := tb.Pod("a").Ready().Infeasible().Container("app", "50m", "100m", "64Mi", "64Mi").Get()
	infeasible.Spec.Containers[0].ResizePolicy = inFlight.Spec.Containers[0].ResizePolicy
	infeasible.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
	expiredLongAgo := tb.Pod("a").Ready().Condition(wanted, isTrue, now.Add(-time.Hour)).Get()
	expiredLongAgo.Status.Conditions = append(expiredLongAgo.Status.Conditions, corev1.PodCondition{
		Type: granted, Status: isFalse, Reason: reasonWindowExpired, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))})
	expired := tb.Pod("a").Ready().Get()
	expired.Status.Conditions = append(expired.Status.Conditions, corev1.PodCondition{
		Type: granted, Status: isFalse, Reason: reasonWindowExpired, LastTransitionTime: metav1.NewTime(now.Add(-10 * time.Second))})
	w := policy.RestartWindow{MinInterval: time.Hour, MinShrinkPercent: 20}
	single := w
	single.SingleReplica = true
	for _, tc := range []struct {
		name       string
		w          policy.RestartWindow
		noWindow   bool
		pods       []*corev1.Pod
		wantRevoke map[string]string // pod: reason
		wantCands  []string
		wantRefuse string
	}{
		{name: "the longest asking first", w: w, pods: []*corev1.Pod{
			tb.Pod("a").Ready().Condition(wanted, isTrue, now.Add(-time.Minute)).Get(),
			tb.Pod("b").Ready().Condition(wanted, isTrue, now.Add(-2*time.Minute)).Get(),
			tb.Pod("c").Ready().Get(),
		}, wantCands: []string{"b", "a"}},
		{name: "one at a time", w: w, pods: []*corev1.Pod{
			tb.Pod("a").Ready().Condition(wanted, isTrue, now.Add(-time.Minute)).Condition(granted, isTrue, now.Add(-time.Minute)).Get(),
			tb.Pod("b").Ready().Condition(wanted, isTrue, now.Add(-2*time.Minute)).Get(),
		}},
		{name: "closed, the next granted", w: w, pods: []*corev1.Pod{
			tb.Pod("a").Ready().Condition(wanted, isFalse, now).Condition(granted, isTrue, now.Add(-time.Minute)).Get(),
			tb.Pod("b").Ready().Condition(wanted, isTrue, now.Add(-2*time.Minute)).Get(),
		}, wantRevoke: map[string]string{"a": reasonWindowClosed}, wantCands: []string{"b"}},
		{name: "expired, none granted at once", w: w, pods: []*corev1.Pod{
			tb.Pod("a").Ready().Condition(wanted, isTrue, now.Add(-time.Hour)).Condition(granted, isTrue, now.Add(-policy.RestartGrantTTL)).Get(),
			tb.Pod("b").Ready().Condition(wanted, isTrue, now.Add(-time.Minute)).Get(),
		}, wantRevoke: map[string]string{"a": reasonWindowExpired}},
		{name: "no window: grants revoked", noWindow: true, pods: []*corev1.Pod{
			tb.Pod("a").Ready().Condition(wanted, isTrue, now).Condition(granted, isTrue, now).Get(),
			tb.Pod("b").Ready().Get(),
		}, wantRevoke: map[string]string{"a": reasonWindowRevoked}},
		{name: "another pod not ready", w: w, pods: []*corev1.Pod{
			tb.Pod("a").Ready().Condition(wanted, isTrue, now).Get(),
			tb.Pod("b").Get(),
		}, wantRefuse: "notready"},
		{name: "another pod being deleted", w: w, pods: []*corev1.Pod{
			tb.Pod("a").Ready().Condition(wanted, isTrue, now).Get(),
			tb.Pod("b").Ready().Deleting().Get(),
		}, wantRefuse: "notready"},
		{name: "the only pod", w: w, pods: []*corev1.Pod{
			tb.Pod("a").Ready().Condition(wanted, isTrue, now).Get(),
		}, wantRefuse: "single"},
		{name: "the only pod, singleReplica", w: single, pods: []*corev1.Pod{
			tb.Pod("a").Ready().Condition(wanted, isTrue, now).Get(),
		}, wantCands: []string{"a"}},
		{name: "a restarting resize not applied yet holds the window", w: w, pods: []*corev1.Pod{
			inFlight,
			tb.Pod("b").Ready().Condition(wanted, isTrue, now).Get(),
		}, wantRefuse: "inflight"},
		{name: "an Infeasible one does not", w: w, pods: []*corev1.Pod{
			infeasible,
			tb.Pod("b").Ready().Condition(wanted, isTrue, now).Get(),
		}, wantCands: []string{"b"}},
		{name: "a pod whose window expired unused goes behind the others", w: w, pods: []*corev1.Pod{
			expiredLongAgo,
			tb.Pod("b").Ready().Condition(wanted, isTrue, now.Add(-10*time.Minute)).Get(),
		}, wantCands: []string{"b", "a"}},
		{name: "no grant within the pause after an expiry", w: w, pods: []*corev1.Pod{
			expired,
			tb.Pod("b").Ready().Condition(wanted, isTrue, now).Get(),
		}},
		{name: "the only running pod", w: w, pods: []*corev1.Pod{
			tb.Pod("a").Ready().Condition(wanted, isTrue, now).Get(),
			tb.Pod("b").Phase(corev1.PodPending).Get(),
		}, wantRefuse: "single"},
		{name: "a not-ready pod that asks may be granted while the others are Ready", w: w, pods: []*corev1.Pod{
			tb.Pod("a").Condition(wanted, isTrue, now).Get(),
			tb.Pod("b").Ready().Get(),
		}, wantCands: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := planWindows(tc.w, !tc.noWindow, tc.pods, now)
			revoked := map[string]string{}
			for _, r := range plan.revoke {
				revoked[r.pod.Name] = r.reason
			}
			if len(tc.wantRevoke) == 0 {
				tc.wantRevoke = map[string]string{}
			}
			if fmt.Sprint(revoked) != fmt.Sprint(tc.wantRevoke) {
				t.Errorf("revoked %v, want %v", revoked, tc.wantRevoke)
			}
			var cands []string
			for _, p := range plan.candidates {
				cands = append(cands, p.Name)
			}
			if fmt.Sprint(cands) != fmt.Sprint(tc.wantCands) {
				t.Errorf("candidates %v, want %v", cands, tc.wantCands)
			}
			if plan.refused != tc.wantRefuse {
				t.Errorf("refused %q (%s), want %q", plan.refused, plan.why, tc.wantRefuse)
			}
		})
	}
}

// TestReconcileRestartWindows: the controller grants a window by patching
// the pod's status, asks the PodDisruptionBudgets with a dry-run eviction
// that evicts nothing, grants none while a budget refuses, and closes the
// window once the agent no longer asks.
func TestReconcileRestartWindows(t *testing.T) {
	e := newReconcileEnv(t)
	blocked := false
	var dryRuns int
	e.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		if ev.DeleteOptions == nil || len(ev.DeleteOptions.DryRun) != 1 || ev.DeleteOptions.DryRun[0] != metav1.DryRunAll {
			t.Errorf("eviction of %s without dryRun All: a restart window must evict nothing", ev.Name)
			return true, nil, nil
		}
		dryRuns++
		if blocked {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		return true, nil, nil
	})
	p := tb.Policy("web").Target("Deployment", "web").Get()
	if p.Spec.UpdatePolicy == nil {
		p.Spec.UpdatePolicy = &v1alpha1.PodUpdatePolicy{}
	}
	p.Spec.UpdatePolicy.RestartWindow = &v1alpha1.RestartWindow{}
	e.add(
		tb.Deployment("web", "app", "web"),
		tb.Pod("web-1").Labels("app", "web").Ready().Condition(wanted, isTrue, t0).Get(),
		tb.Pod("web-2").Labels("app", "web").Ready().Get(),
		p,
	)
	// sync brings the clientset's pods (patched) into the informer.
	sync := func() {
		t.Helper()
		l, err := e.cs.CoreV1().Pods(tb.Namespace).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			if err := e.c.factory.Core().V1().Pods().Informer().GetStore().Update(&l.Items[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	grant := func(name string) *corev1.PodCondition {
		t.Helper()
		pod, err := e.cs.CoreV1().Pods(tb.Namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return policy.PodCondition(pod, granted)
	}

	blocked = true
	e.reconcile("web")
	if g := grant("web-1"); g != nil {
		t.Fatalf("granted %+v while the budget refuses", g)
	}
	if dryRuns != 1 {
		t.Fatalf("dry runs %d, want one", dryRuns)
	}

	blocked = false
	e.clock.Step(time.Minute)
	_, requeue := e.reconcile("web")
	if g := grant("web-1"); g == nil || g.Status != isTrue || g.Reason != reasonWindowGranted {
		t.Fatalf("web-1 RestartGranted %+v, want True", g)
	}
	if requeue > policy.RestartGrantTTL {
		t.Errorf("requeue after %s, want at most the grant's TTL", requeue)
	}

	// The agent restarted the container and no longer asks.
	sync()
	pod, _ := e.cs.CoreV1().Pods(tb.Namespace).Get(t.Context(), "web-1", metav1.GetOptions{})
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == wanted {
			pod.Status.Conditions[i].Status, pod.Status.Conditions[i].Reason = isFalse, v1alpha1.PodReasonRestarted
		}
	}
	if err := e.cs.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, pod, tb.Namespace); err != nil {
		t.Fatal(err)
	}
	sync()
	e.reconcile("web")
	if g := grant("web-1"); g == nil || g.Status != isFalse || g.Reason != reasonWindowClosed {
		t.Errorf("web-1 RestartGranted %+v, want False, Closed", g)
	}
	// The next reconcile (the pod's update) records it, once.
	closedAt := e.clock.Now()
	sync()
	e.clock.Step(time.Second)
	e.reconcile("web")
	got, _ := e.reconcile("web")
	if r := got.Status.Restarts; len(r) != 1 || r[0].PodName != "web-1" || !r[0].Time.Time.Equal(closedAt) || !strings.Contains(r[0].Message, "granted") {
		t.Errorf("status.restarts %+v, want web-1's restart once, at its close", r)
	}
}

// TestWithRestarts: the policy's status keeps the last ten restarts, each
// once, oldest first; one dropped is not added back.
func TestWithRestarts(t *testing.T) {
	at := func(i int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(i) * time.Minute)) }
	var records []v1alpha1.RestartRecord
	for i := range 12 {
		records = withRestarts(records, []v1alpha1.RestartRecord{{PodName: fmt.Sprint(i), Time: at(i)}})
	}
	if len(records) != maxRestartRecords || records[0].PodName != "2" || records[9].PodName != "11" {
		t.Errorf("records %+v, want the last ten, 2 to 11", records)
	}
	same := withRestarts(records, []v1alpha1.RestartRecord{{PodName: "11", Time: at(11)}, {PodName: "0", Time: at(0)}})
	if &same[0] != &records[0] {
		t.Errorf("a record kept and one dropped before: got %+v, want the records unchanged", same)
	}
	mixed := withRestarts(nil, []v1alpha1.RestartRecord{{PodName: "b", Time: at(2)}, {PodName: "a", Time: at(1)}})
	if len(mixed) != 2 || mixed[0].PodName != "a" {
		t.Errorf("records %+v, want oldest first", mixed)
	}
}

// TestReconcileRestartWindowTriesNext: a pod whose budget refuses does not
// block the policy: the next pod that asks is granted.
func TestReconcileRestartWindowTriesNext(t *testing.T) {
	e := newReconcileEnv(t)
	e.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		if ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction); ev.Name == "web-1" {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		return true, nil, nil
	})
	p := tb.Policy("web").Target("Deployment", "web").Get()
	if p.Spec.UpdatePolicy == nil {
		p.Spec.UpdatePolicy = &v1alpha1.PodUpdatePolicy{}
	}
	p.Spec.UpdatePolicy.RestartWindow = &v1alpha1.RestartWindow{}
	e.add(
		tb.Deployment("web", "app", "web"),
		tb.Pod("web-1").Labels("app", "web").Ready().Condition(wanted, isTrue, t0).Get(),
		tb.Pod("web-2").Labels("app", "web").Ready().Condition(wanted, isTrue, t0.Add(time.Second)).Get(),
		p,
	)
	e.reconcile("web")
	for name, want := range map[string]bool{"web-1": false, "web-2": true} {
		pod, err := e.cs.CoreV1().Pods(tb.Namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := policy.PodConditionTrue(pod, granted); got != want {
			t.Errorf("%s granted: %v, want %v", name, got, want)
		}
	}
}

// TestReconcileRestartWindowStaleCache: a reconcile whose cache does not
// show the grant this controller just made (the pod's update not in yet)
// grants no other pod: found on the lab (1.36.3), where two pods that
// asked in the same second were both granted and restarted at once.
func TestReconcileRestartWindowStaleCache(t *testing.T) {
	e := newReconcileEnv(t)
	e.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return a.GetSubresource() == "eviction", nil, nil // dry runs allowed
	})
	p := tb.Policy("web").Target("Deployment", "web").Get()
	if p.Spec.UpdatePolicy == nil {
		p.Spec.UpdatePolicy = &v1alpha1.PodUpdatePolicy{}
	}
	p.Spec.UpdatePolicy.RestartWindow = &v1alpha1.RestartWindow{}
	e.add(
		tb.Deployment("web", "app", "web"),
		tb.Pod("web-1").Labels("app", "web").Ready().Condition(wanted, isTrue, t0).Get(),
		tb.Pod("web-2").Labels("app", "web").Ready().Get(),
		p,
	)
	granted := func() []string {
		var names []string
		for _, name := range []string{"web-1", "web-2"} {
			pod, err := e.cs.CoreV1().Pods(tb.Namespace).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if policy.PodConditionTrue(pod, policy.ConditionRestartGranted) {
				names = append(names, name)
			}
		}
		return names
	}
	e.reconcile("web")
	if g := granted(); len(g) != 1 {
		t.Fatalf("granted %v after the first reconcile, want one pod", g)
	}
	// The informer has not brought web-1's grant back, but it brings
	// web-2's ask, written a second before web-1's (its place in the
	// queue is first), and web-2's update reconciles the policy again.
	web2 := tb.Pod("web-2").Labels("app", "web").Ready().Condition(wanted, isTrue, t0.Add(-time.Second)).Get()
	if err := e.c.factory.Core().V1().Pods().Informer().GetStore().Update(web2); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Second)
	_, requeue := e.reconcile("web")
	if g := granted(); len(g) != 1 {
		t.Errorf("granted %v on a stale cache, want still one pod", g)
	}
	if requeue > 2*time.Second {
		t.Errorf("requeue after %s, want soon (until the cache shows the grant)", requeue)
	}
}
