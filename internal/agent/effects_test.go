package agent

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// TestExecutorOneEffectPerKey: a second effect with a running one's key
// is refused, other keys and unkeyed effects are not held up; results
// come back in the order the effects ended, a key is free again once its
// result was taken in (not when the effect ended), and wait joins every
// effect.
func TestExecutorOneEffectPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		x := newExecutor()
		var order []string
		release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
		fx := func(name string) effect {
			return func(context.Context) settleFunc {
				<-release[name]
				return func(context.Context, logr.Logger) { order = append(order, name) }
			}
		}
		if !x.start(ctx, "a", fx("a")) {
			t.Fatal("first effect with key a refused")
		}
		if x.start(ctx, "a", fx("a")) {
			t.Fatal("second effect with key a started while the first runs")
		}
		if !x.start(ctx, "b", fx("b")) {
			t.Fatal("effect with key b refused while a's runs")
		}
		var unkeyed atomic.Int32
		for range 2 {
			x.start(ctx, "", func(context.Context) settleFunc { unkeyed.Add(1); return nil })
		}
		synctest.Wait()
		if n := unkeyed.Load(); n != 2 {
			t.Errorf("%d unkeyed effects ran, want 2", n)
		}
		select {
		case <-x.ready:
			t.Fatal("ready fired with no result to take (unkeyed effects returned none)")
		default:
		}
		close(release["b"])
		synctest.Wait()
		close(release["a"])
		synctest.Wait()
		select {
		case <-x.ready:
		default:
			t.Fatal("results are in but ready did not fire")
		}
		if x.start(ctx, "a", fx("a")) {
			t.Fatal("key a free before its result was taken in")
		}
		for _, s := range x.take() {
			s(ctx, logr.Discard())
		}
		if !slices.Equal(order, []string{"b", "a"}) {
			t.Errorf("results taken in as %v, want b then a (the order they ended)", order)
		}
		release["a"] = make(chan struct{})
		if !x.start(ctx, "a", fx("a")) {
			t.Fatal("key a refused after its result was taken in")
		}
		if !x.busy("a") || x.busy("b") {
			t.Errorf("busy a %v b %v, want a only", x.busy("a"), x.busy("b"))
		}
		close(release["a"])
		x.wait()
		if got := x.take(); len(got) != 1 {
			t.Errorf("%d results after wait, want the one effect's", len(got))
		}
	})
}

// TestDeciderOneResizePerPod: a pod whose policy changes while its resize
// is in flight keeps the resize's InFlight phase in its new state, so the
// new policy's first wish is not sent beside it; once the outcome is in
// the pod is Idle and the next wish goes out.
func TestDeciderOneResizePerPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, pol)
		fk.undecided = true // the kubelet has not acted: the resize stays in flight
		now := d.clock.Now()
		d.Observe(ctx, refOf(pod), throttled(now, 100))
		d.PassDone(ctx)
		waitSent(t, fk, "no resize sent")
		if st := d.pods[pod.UID]; st.phase != phaseInFlight {
			t.Fatalf("phase %s after sending, want InFlight", st.phase)
		}
		pol.Generation++ // a new generation: the pod's state starts afresh
		cur := fk.get("p")
		d.Observe(ctx, refOf(cur), throttled(now.Add(time.Second), 100))
		d.PassDone(ctx)
		synctest.Wait()
		if n := len(fk.patches); n != 1 {
			t.Fatalf("%d patches while the first resize is in flight, want 1", n)
		}
		if st := d.pods[pod.UID]; st.policyGen != 2 || st.phase != phaseInFlight {
			t.Fatalf("new state: generation %d phase %s, want 2 and InFlight", st.policyGen, st.phase)
		}
		fk.mu.Lock()
		fk.undecided = false
		fk.mu.Unlock()
		grant(fk, "p")
		settle(t, d)
		if st := d.pods[pod.UID]; st.phase != phaseIdle {
			t.Fatalf("phase %s after the outcome, want Idle", st.phase)
		}
		d.Wait()
	})
}

// grant has the fake kubelet grant the pod's pending resize: its status
// takes the spec's resources and generation.
func grant(fk *fakeKubelet, name string) {
	p := fk.get(name)
	p.Status.ContainerStatuses[0].Resources = p.Spec.Containers[0].Resources.DeepCopy()
	p.Status.ContainerStatuses[0].AllocatedResources = p.Spec.Containers[0].Resources.Requests.DeepCopy()
	p.Status.ObservedGeneration = p.Generation
	fk.update(p)
}
