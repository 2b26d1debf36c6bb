package agent

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// testOps are a JSON patch's test operations on resources, path -> value.
func testOps(t *testing.T, patch []byte) map[string]string {
	t.Helper()
	var ops []struct {
		Op, Path string
		Value    any
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, op := range ops {
		if v, ok := op.Value.(string); ok && op.Op == "test" {
			out[op.Path] = v
		}
	}
	return out
}

// settle lets every effect that can run end (the test runs in a synctest
// bubble) and takes their results in, as Run does between passes; it
// fails if none came back.
func settle(t *testing.T, d *Decider) {
	t.Helper()
	synctest.Wait()
	select {
	case <-d.Settled():
		d.Settle(context.Background())
	default:
		t.Fatal("no effect's result came back")
	}
}

// waitSent lets every effect that can run end and fails with msg unless
// the fake kubelet was sent a resize meanwhile.
func waitSent(t *testing.T, fk *fakeKubelet, msg string) {
	t.Helper()
	synctest.Wait()
	select {
	case <-fk.sent:
	default:
		t.Fatal(msg)
	}
}

// humanCPU sets the pod's cpu request and limit in the store as a
// person's kubectl patch of the resize subresource would (a new
// generation).
func humanCPU(fk *fakeKubelet, name, request, limit string) {
	p := fk.get(name)
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = rl(request, "")[corev1.ResourceCPU]
	p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = rl(limit, "")[corev1.ResourceCPU]
	p.Generation++
	fk.update(p)
}

// assertFromPerson checks that the patch after a Conflict was planned from
// the person's 60m/180m: it tests those values and keeps their 1:3 ratio.
func assertFromPerson(t *testing.T, fk *fakeKubelet, v *AutoscaleJSON) {
	t.Helper()
	ops := testOps(t, fk.patches[1])
	if req, lim := ops["/spec/containers/0/resources/requests/cpu"], ops["/spec/containers/0/resources/limits/cpu"]; req != "60m" || lim != "180m" {
		t.Errorf("second patch tests cpu %q/%q, want the person's 60m/180m", req, lim)
	}
	if got := v.Resizes[1].Containers["app"]; got.CPURequestMillicores != 250 || got.CPULimitMillicores != 750 {
		t.Errorf("second resize cpu %d/%d, want 250/750 (the person's 1:3 ratio)", got.CPURequestMillicores, got.CPULimitMillicores)
	}
	if stored := fk.get("p"); stored.Spec.Containers[0].Resources.Limits.Cpu().MilliValue() != 750 {
		t.Errorf("stored cpu limit %v, want 750m", stored.Spec.Containers[0].Resources.Limits.Cpu())
	}
}

// TestDeciderConflictReplansAtOnce: a person changes the pod's cpu
// between the decider's plan and its patch; the API server refuses the
// patch's test (its generic 422), which is a Conflict, not a rejection.
// The very next pass plans again from the new spec, with no backoff, and
// that resize is applied.
func TestDeciderConflictReplansAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		fk.beforePatch = func(n int) {
			if n == 0 {
				humanCPU(fk, "p", "60m", "180m")
			}
		}
		now := time.Now()
		d.Observe(ctx, refOf(pod), throttled(now, 100))
		d.PassDone(ctx)
		settle(t, d)
		v := d.View(pod.UID, "app")
		if v == nil || len(v.Resizes) != 1 || v.Resizes[0].Outcome != "Conflict" {
			t.Fatalf("after the first patch: view %+v, want one Conflict resize", v)
		}
		// The next pass: a new decision, planned from the person's spec.
		d.Observe(ctx, refOf(pod), throttled(now.Add(time.Second), 100))
		d.PassDone(ctx)
		settle(t, d)
		v = d.View(pod.UID, "app")
		if len(fk.patches) != 2 {
			t.Fatalf("%d patches, want 2 (the re-plan right after the Conflict); last decision %+v", len(fk.patches), v.LastDecision)
		}
		if len(v.Resizes) != 2 || v.Resizes[1].Outcome != "Applied" {
			t.Fatalf("resizes %+v, want Conflict then Applied", v.Resizes)
		}
		assertFromPerson(t, fk, v)
	})
}

// TestDeciderConflictWhileWaiting: the decider's patch is accepted but the
// kubelet has not acted on it when a person changes the same container;
// the wait (fed by the pod informer's update) ends as Conflict, and the
// next pass plans again from the person's spec at once.
func TestDeciderConflictWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		fk.undecided = true
		now := time.Now()
		d.Observe(ctx, refOf(pod), throttled(now, 100))
		d.PassDone(ctx)
		waitSent(t, fk, "no resize sent")
		if got := fk.get("p").Spec.Containers[0].Resources.Limits.Cpu().MilliValue(); got != 500 {
			t.Fatalf("accepted spec cpu limit %dm, want the decider's 500m", got)
		}
		// Still waiting: the kubelet has not looked.
		synctest.Wait()
		select {
		case <-d.Settled():
			t.Fatal("an outcome came back before the kubelet acted")
		default:
		}
		fk.mu.Lock()
		fk.undecided = false
		fk.mu.Unlock()
		humanCPU(fk, "p", "60m", "180m")
		settle(t, d)
		v := d.View(pod.UID, "app")
		if len(v.Resizes) != 1 || v.Resizes[0].Outcome != "Conflict" {
			t.Fatalf("resizes %+v, want one Conflict", v.Resizes)
		}
		d.Observe(ctx, refOf(pod), throttled(now.Add(time.Second), 100))
		d.PassDone(ctx)
		settle(t, d)
		v = d.View(pod.UID, "app")
		if len(v.Resizes) != 2 || v.Resizes[1].Outcome != "Applied" {
			t.Fatalf("resizes %+v, want Conflict then Applied", v.Resizes)
		}
		assertFromPerson(t, fk, v)
	})
}

// TestCacheSourceSkipsOlderVersions: a cache that still holds the version
// before the patch is not taken for someone else's change; the newer
// version, once the informer has it, is.
func TestCacheSourceSkipsOlderVersions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", nil, rl("50m", "64Mi"), rl("100m", "128Mi"))
		a, _, fk := newTestDecider(t, false, []*corev1.Pod{pod})
		from := pod.DeepCopy()
		from.Generation, from.ResourceVersion = 2, "patched"
		src := cacheSource{feed: &a.feed, pods: nil}
		src.pods = listerOf(fk)
		var seen []int64
		done := make(chan error, 1)
		go func() {
			done <- src.Follow(context.Background(), from, func(p *corev1.Pod) bool {
				seen = append(seen, p.Generation)
				return p.Generation == 2
			})
		}()
		newer := fk.get("p")
		newer.Generation = 2
		fk.update(newer)
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("Follow did not see the newer version")
		}
		if !slices.Equal(seen, []int64{2}) {
			t.Errorf("saw generations %v, want only 2 (generation 1 is older than the patch)", seen)
		}
	})
}

func listerOf(fk *fakeKubelet) corelisters.PodLister { return corelisters.NewPodLister(fk.store) }
