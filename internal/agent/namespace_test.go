package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// fakeQuotas is a namespace's one ResourceQuota on cpu limits, as
// ListQuotas reads it, counting the reads; err, if set, is the API
// server's answer instead.
type fakeQuotas struct {
	mu         sync.Mutex
	hard, used string
	// rv is the quota's resourceVersion.
	rv    string
	err   error
	reads int
}

func (f *fakeQuotas) list(_ context.Context, ns string) ([]corev1.ResourceQuota, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return nil, f.err
	}
	hard := corev1.ResourceList{"limits.cpu": resource.MustParse(f.hard)}
	return []corev1.ResourceQuota{{
		ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: ns, ResourceVersion: f.rv},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
		Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{"limits.cpu": resource.MustParse(f.used)}},
	}}, nil
}

func (f *fakeQuotas) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// settleRounds bounds the passes passUntil runs: an effect's result can
// start another (a resize's outcome writes a condition), a few deep.
const settleRounds = 5

// passUntil runs passes until cond holds (a read or a resize finishing
// off the loop), each after every effect that can run has ended (the test
// runs in a synctest bubble); it fails once more passes change nothing.
func passUntil(t *testing.T, d *Decider, what string, cond func() bool) {
	t.Helper()
	for range settleRounds {
		if cond() {
			return
		}
		synctest.Wait()
		d.PassDone(context.Background())
	}
	if !cond() {
		t.Fatalf("no %s once every effect had ended", what)
	}
}

// waitResizes runs passes until the pod's view shows n finished resizes.
func waitResizes(t *testing.T, d *Decider, pod *corev1.Pod, n int) *AutoscaleJSON {
	t.Helper()
	var v *AutoscaleJSON
	passUntil(t, d, fmt.Sprintf("%d finished resizes of %s", n, pod.Name), func() bool {
		v = d.View(pod.UID, "app")
		return v != nil && len(v.Resizes) == n
	})
	return v
}

// events drains the recorder's events.
func events(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestDeciderFitsToTheNamespace: the case, a throttled pod in a
// namespace whose quota has room for 150m more of cpu limits: the grow
// goes out once, cut to fit (request and limit by one fraction), with a
// FittedToNamespace event; the throttled samples after it, with the quota
// used up, send nothing more and record nothing more.
func TestDeciderFitsToTheNamespace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		rec := record.NewFakeRecorder(16)
		d.cfg.Recorder = rec
		q := &fakeQuotas{hard: "250m", used: "100m"} // 150m of cpu limits left
		d.cfg.ListQuotas = q.list
		now := time.Now()
		d.Observe(ctx, refOf(pod), throttled(now, 100))
		d.PassDone(ctx)
		v := waitResizes(t, d, pod, 1)
		r := v.Resizes[0]
		// Unfitted it would be 250m/500m (TestDeciderGrowsAThrottledContainer).
		if got := r.Containers["app"]; r.Outcome != "Applied" || got.CPURequestMillicores != 125 || got.CPULimitMillicores != 250 {
			t.Errorf("resize %s to cpu %dm/%dm, want Applied at 125m/250m", r.Outcome, got.CPURequestMillicores, got.CPULimitMillicores)
		}
		evs := events(rec)
		if len(evs) != 1 || !strings.HasPrefix(evs[0], "Normal FittedToNamespace ") || !strings.Contains(evs[0], "limits.cpu: 150m left") {
			t.Errorf("events %q, want one FittedToNamespace naming the quota's room", evs)
		}

		q.mu.Lock()
		q.used = "250m"
		q.mu.Unlock()
		for i := 1; i <= 5; i++ {
			d.Observe(ctx, refOf(pod), throttled(now.Add(time.Duration(i)*time.Second), 250))
			d.PassDone(ctx)
		}
		d.Wait()
		if len(fk.patches) != 1 {
			t.Errorf("%d patches, want the one fitted", len(fk.patches))
		}
		if evs := events(rec); len(evs) != 0 {
			t.Errorf("events after the fit %q, want none", evs)
		}
		checkConditions(t, fk, "True/FittedToNamespace")
		if n := q.count(); n != 1 {
			t.Errorf("%d reads of the quotas, want 1 (the grow's; the capped decisions after it plan nothing)", n)
		}
		if v := d.View(pod.UID, "app"); v.LastDecision == nil || v.LastDecision.CPU.Why != "Capped" {
			t.Errorf("last decision %+v, want cpu held Capped", v.LastDecision)
		}
	})
}

// TestDeciderQuotaFull: with no room left in the quota nothing is sent; one
// NamespaceFull event says why, and the next throttled samples record no
// more.
func TestDeciderQuotaFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		rec := record.NewFakeRecorder(16)
		d.cfg.Recorder = rec
		q := &fakeQuotas{hard: "100m", used: "100m"}
		d.cfg.ListQuotas = q.list
		now := time.Now()
		d.Observe(ctx, refOf(pod), throttled(now, 100))
		d.PassDone(ctx)
		passUntil(t, d, "NamespaceFull event", func() bool { return len(rec.Events) > 0 })
		for i := 1; i <= 5; i++ {
			d.Observe(ctx, refOf(pod), throttled(now.Add(time.Duration(i)*time.Second), 100))
			d.PassDone(ctx)
		}
		d.Wait()
		if len(fk.patches) != 0 {
			t.Errorf("%d patches, want none", len(fk.patches))
		}
		evs := events(rec)
		if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning NamespaceFull ") || !strings.Contains(evs[0], "no cpu increase fits") {
			t.Errorf("events %q, want one NamespaceFull", evs)
		}
		checkConditions(t, fk, "True/NamespaceFull")
		if v := d.View(pod.UID, "app"); v.LastDecision == nil || v.LastDecision.CPU.Why != "Capped" {
			t.Errorf("last decision %+v, want cpu held Capped", v.LastDecision)
		}
	})
}

// TestDeciderRefusedPatchNotRepeated: the API server refuses a resize (a
// quota the agent did not know of); once the backoff is over, the same
// plan is not sent again.
func TestDeciderRefusedPatchNotRepeated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		fk.refuse = func(int) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p",
				errors.New("exceeded quota: q, requested: limits.cpu=400m, used: limits.cpu=500m, limited: limits.cpu=600m"))
		}
		now := time.Now()
		d.Observe(ctx, refOf(pod), throttled(now, 100))
		d.PassDone(ctx)
		v := waitResizes(t, d, pod, 1)
		if v.Resizes[0].Outcome != "Rejected" {
			t.Fatalf("outcome %s, want Rejected", v.Resizes[0].Outcome)
		}
		for i := 1; i <= 5; i++ {
			// Past the 5 s backoff, within the 5 min the refused patch is
			// kept: the bubble's clock moves only by this sleep.
			time.Sleep(10 * time.Second)
			d.Observe(ctx, refOf(pod), throttled(time.Now(), 100))
			d.PassDone(ctx)
		}
		d.Wait()
		if len(fk.patches) != 1 {
			t.Errorf("%d patches, want the refused one only", len(fk.patches))
		}
		v = d.View(pod.UID, "app")
		if v.LastDecision == nil || v.LastDecision.CPU.Why != "Capped" {
			t.Errorf("last decision %+v, want cpu held Capped after the refusal", v.LastDecision)
		}
	})
}

// TestDeciderRefusedPatchNeverRepeatedOnSameQuotas: a patch the API
// server refused, planned on a quota the agent read, is not sent again
// while that quota is the same, however long the pod keeps asking (past
// the recommender's cap and the longest backoff); once the quota changes
// (its usage or limits moved: a new resourceVersion), the plan is new and
// goes out once more.
func TestDeciderRefusedPatchNeverRepeatedOnSameQuotas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		q := &fakeQuotas{hard: "10", used: "100m", rv: "1"}
		d.cfg.ListQuotas = q.list
		fk.refuse = func(int) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p",
				errors.New("admission webhook \"policy.example.com\" denied the request"))
		}
		sent := func() []string {
			fk.mu.Lock()
			defer fk.mu.Unlock()
			var out []string
			for _, b := range fk.patches {
				out = append(out, string(b))
			}
			return out
		}
		// ask observes a throttled pod every second (the agent's pass
		// interval) for d2: past the recommender's cap and the longest
		// backoff three times, and long enough for its memory to want a
		// shrink too (a second wish, refused as well).
		ask := func(d2 time.Duration) {
			for end := time.Now().Add(d2); time.Now().Before(end); {
				time.Sleep(time.Second)
				d.Observe(ctx, refOf(pod), throttled(time.Now(), 100))
				d.PassDone(ctx)
				d.Wait()
			}
		}
		twice := func(ps []string) string {
			for i, p := range ps {
				if slices.Contains(ps[:i], p) {
					return p
				}
			}
			return ""
		}
		d.Observe(ctx, refOf(pod), throttled(time.Now(), 100))
		d.PassDone(ctx)
		waitResizes(t, d, pod, 1)
		window := 3 * (d.cfg.Recommend.BackoffMax + d.cfg.Recommend.DeferredCapTTL)
		ask(window)
		before := sent()
		if p := twice(before); p != "" {
			t.Fatalf("patch %s sent twice on the same quota (%d patches)", p, len(before))
		}
		q.mu.Lock()
		reads := q.reads
		q.rv = "2"
		q.mu.Unlock()
		ask(window)
		after := sent()[len(before):]
		if p := twice(after); p != "" {
			t.Errorf("patch %s sent twice after the quota changed once", p)
		}
		if !slices.ContainsFunc(after, func(p string) bool { return slices.Contains(before, p) }) {
			t.Errorf("after the quota changed: %d patches, none of the refused ones again; want them planned anew and sent once more (last decision %+v)", len(after), d.View(pod.UID, "app").LastDecision)
		}
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.reads <= reads {
			t.Errorf("the quota not read again after it changed")
		}
	})
}

// TestDeciderQuotasUnreadable: an API server that does not answer the
// quota read: the grow goes out unfitted (the API server still judges it)
// and nothing else changes.
func TestDeciderQuotasUnreadable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		q := &fakeQuotas{err: errors.New("connection refused")}
		d.cfg.ListQuotas = q.list
		d.Observe(ctx, refOf(pod), throttled(time.Now(), 100))
		d.PassDone(ctx)
		v := waitResizes(t, d, pod, 1)
		if got := v.Resizes[0].Containers["app"]; v.Resizes[0].Outcome != "Applied" || got.CPULimitMillicores != 500 {
			t.Errorf("resize %s to a %dm cpu limit, want Applied at 500m, unfitted", v.Resizes[0].Outcome, got.CPULimitMillicores)
		}
		d.Wait()
		checkConditions(t, fk)
	})
}

// checkConditions holds the pods/status patches sent to want, each
// "status/reason" of ConditionNamespaceLimited.
func checkConditions(t *testing.T, fk *fakeKubelet, want ...string) {
	t.Helper()
	fk.mu.Lock()
	defer fk.mu.Unlock()
	var got []string
	for _, b := range fk.statusPatches {
		var p struct {
			Status struct{ Conditions []corev1.PodCondition }
		}
		if err := json.Unmarshal(b, &p); err != nil || len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Type != ConditionNamespaceLimited {
			t.Errorf("status patch %s: want one %s condition (%v)", b, ConditionNamespaceLimited, err)
			continue
		}
		c := p.Status.Conditions[0]
		got = append(got, string(c.Status)+"/"+c.Reason)
	}
	if !slices.Equal(got, want) {
		t.Errorf("conditions written %q, want %q", got, want)
	}
}

// TestNamespaceOf: a namespace with neither quotas nor LimitRanges plans as
// before (nil); a quota's room is status.hard - status.used.
func TestNamespaceOf(t *testing.T) {
	pod := testPod("p", nil, rl("50m", "64Mi"), rl("100m", "128Mi"))
	if ns := namespaceOf(pod, nil, nil); ns != nil {
		t.Errorf("namespace of no objects %+v, want nil", ns)
	}
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"limits.cpu": resource.MustParse("600m")}},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{"limits.cpu": resource.MustParse("600m")},
			Used: corev1.ResourceList{"limits.cpu": resource.MustParse("500m")},
		},
	}
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr", Namespace: "ns"}}
	ns := namespaceOf(pod, []corev1.ResourceQuota{*q}, []corev1.LimitRange{*lr})
	if room := ns.QuotaRoom["limits.cpu"]; room.Cmp(resource.MustParse("100m")) != 0 {
		t.Errorf("room %s, want 100m", room.String())
	}
	if len(ns.LimitRanges) != 1 || ns.LimitRanges[0].Name != "lr" {
		t.Errorf("limit ranges %+v, want lr", ns.LimitRanges)
	}
}
