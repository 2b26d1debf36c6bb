package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/cgroup"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/recommend"
)

// calm is a sample of a container using cpuMillis under a 100m limit,
// unthrottled.
func calm(at time.Time, cpuMillis float64) Point {
	return Point{Signals: cgroup.Signals{
		Time: at, HasRate: true, IntervalSeconds: 1,
		CPUUsageMillicores: cpuMillis, CPULimitMillicores: 100, MemoryWorkingSetBytes: 8 << 20, MemoryLimited: true,
		MemoryHeadroomBytes: 120 << 20, MemoryHeadroomFraction: 0.94,
	}, MemoryLimitBytes: 128 << 20, MemoryUsageBytes: 8 << 20}
}

// workloadAggregate is what a workload at cpuMillis for seconds has learnt,
// ending at end, in the text form of a checkpoint key.
func workloadAggregate(t *testing.T, cfg recommend.Config, cpuMillis float64, seconds int, end time.Time) string {
	t.Helper()
	a := recommend.NewAggregate(cfg)
	for i := range seconds {
		at := end.Add(time.Duration(i-seconds) * time.Second)
		a.CPU.Add(cpuMillis, 1, at)
		a.Memory.Add(40<<20, 1, at)
	}
	a.CPUSeconds, a.MemorySeconds = float64(seconds), float64(seconds)
	text, err := a.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

func TestSeedFrom(t *testing.T) {
	cfg := recommend.DefaultConfig()
	other := cfg
	other.CPUHalfLife = 10 * time.Second
	now := time.Now()
	good := workloadAggregate(t, cfg, 300, 600, now)
	empty, _ := recommend.NewAggregate(cfg).MarshalText()
	for _, tc := range []struct {
		name    string
		data    map[string]string
		readErr error
		want    string
	}{
		{"seeded", map[string]string{"aggregate.app": good}, nil, seedUsed},
		{"no checkpoint", nil, nil, seedNone},
		{"another container", map[string]string{"aggregate.sidecar": good}, nil, seedNone},
		{"no samples", map[string]string{"aggregate.app": string(empty)}, nil, seedEmpty},
		{"unreadable", nil, errors.New("forbidden"), seedUnreadable},
		{"bad", map[string]string{"aggregate.app": "@@"}, nil, seedBad},
		{"other half-life", map[string]string{"aggregate.app": workloadAggregate(t, other, 300, 600, now)}, nil, seedIncompatible},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, why, err := seedFrom(tc.data, tc.readErr, "app", cfg)
			if why != tc.want {
				t.Fatalf("why %q (err %v), want %q", why, err, tc.want)
			}
			if (a != nil) != (why == seedUsed) {
				t.Errorf("seed %v with %q", a, why)
			}
			if failed := why != seedUsed && why != seedNone && why != seedEmpty; failed != (err != nil) {
				t.Errorf("%q with error %v", why, err)
			}
		})
	}
}

// fakeCheckpoints stands in for the API server: checkpoint data to read, and
// snapshot patches applied to the pods of the Decider's lister.
type fakeCheckpoints struct {
	mu        sync.Mutex
	data      map[string]string
	published int
	store     interface{ Update(any) error }
	pods      corelisters.PodLister
}

func (f *fakeCheckpoints) read(_ context.Context, ns, name string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name != history.CheckpointName("pol") {
		return nil, nil
	}
	return f.data, nil
}

func (f *fakeCheckpoints) patch(_ context.Context, ns, name string, patch []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var p struct {
		Metadata struct {
			UID         string            `json:"uid"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return err
	}
	pod, err := f.pods.Pods(ns).Get(name)
	if err != nil {
		return err
	}
	if string(pod.UID) != p.Metadata.UID {
		return errors.New("uid precondition failed")
	}
	pod = pod.DeepCopy()
	pod.Annotations = p.Metadata.Annotations
	f.published++
	return f.store.Update(pod)
}

func (f *fakeCheckpoints) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.published
}

func withCheckpoints(t *testing.T, d *Decider, fk *fakeKubelet, data map[string]string) *fakeCheckpoints {
	t.Helper()
	f := &fakeCheckpoints{data: data, store: fk.store, pods: corelisters.NewPodLister(fk.store)}
	d.ckpt = newCheckpoints(time.Minute, clock.RealClock{}, d.fx, f.read, f.patch)
	return f
}

// observeSeeded feeds samples until the container's recommender exists
// (the checkpoint is read as an effect first, taken in by Settle) and
// returns its view. The test runs in a synctest bubble.
func observeSeeded(t *testing.T, d *Decider, pod *corev1.Pod, at time.Time, cpuMillis float64) *AutoscaleJSON {
	t.Helper()
	ctx := context.Background()
	for range settleRounds {
		d.Observe(ctx, refOf(pod), calm(at, cpuMillis))
		if v := d.View(pod.UID, "app"); v != nil {
			return v
		}
		synctest.Wait()
		d.Settle(ctx)
	}
	t.Fatal("the container never started being recommended for")
	return nil
}

// TestCheckpointSeedsNewContainer: a container under a policy whose
// checkpoint learnt 300m starts from it: no warm-up, and a target near the
// workload's while its own usage is 20m. Without a checkpoint, or with one
// of other half-lives, it warms up from nothing, and is still recommended for.
func TestCheckpointSeedsNewContainer(t *testing.T) {
	now := time.Now()
	cfg := recommend.DefaultConfig()
	other := cfg
	other.CPUHalfLife = 10 * time.Second
	for _, tc := range []struct {
		name   string
		data   map[string]string
		seeded bool
	}{
		{"checkpoint", map[string]string{"aggregate.app": workloadAggregate(t, cfg, 300, 600, now)}, true},
		{"none", nil, false},
		{"other half-life", map[string]string{"aggregate.app": workloadAggregate(t, other, 300, 600, now)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
				_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
				withCheckpoints(t, d, fk, tc.data)
				v := observeSeeded(t, d, pod, now, 20)
				cpu := v.Recommendation.CPUMillicores.Target
				why := v.LastDecision.CPU.Why
				t.Logf("first sample: cpu target %dm, decision %s %s, seed %+v", cpu, v.LastDecision.CPU.Action, why, v.Seed)
				if !tc.seeded {
					if v.Seed != nil || why != recommend.WhyWarmingUp.String() || cpu > 50 {
						t.Errorf("unseeded container: seed %+v, decision %s, target %dm; want none, WarmingUp, about 20m", v.Seed, why, cpu)
					}
					return
				}
				if v.Seed == nil || v.Seed.CPUSeconds != 600 || v.Seed.Checkpoint != "ns/"+history.CheckpointName("pol") {
					t.Errorf("seed %+v, want 600 cpu seconds from ns/%s", v.Seed, history.CheckpointName("pol"))
				}
				if why == recommend.WhyWarmingUp.String() {
					t.Error("a seeded container warms up")
				}
				// 300m's bucket plus the 15% margin.
				if cpu < 300 || cpu > 400 {
					t.Errorf("cpu target %dm, want the workload's 300m*1.15", cpu)
				}
				if v.LastDecision.CPU.Action != "Grow" {
					t.Errorf("decision %+v, want a grow to the workload's size at once", v.LastDecision.CPU)
				}
			})
		})
	}
}

// snapshotFeed drives one pod's publications in a synctest bubble: feed
// gives the pod's container samples, one a second, and publish looks at
// the snapshot at a second since t0 and takes the publication in.
type snapshotFeed struct {
	t   *testing.T
	d   *Decider
	f   *fakeCheckpoints
	pod *corev1.Pod
	pol *v1alpha1.SnugPolicy
	t0  time.Time
	sec int
}

func (sf *snapshotFeed) at(s int) time.Time { return sf.t0.Add(time.Duration(s) * time.Second) }

func (sf *snapshotFeed) feed(n int, cpuMillis float64) {
	for range n {
		sf.d.Observe(context.Background(), refOf(sf.pod), calm(sf.at(sf.sec), cpuMillis))
		sf.sec++
	}
}

// publish looks at sf's snapshot at second s and returns how many were
// published in all, once none is in flight.
func (sf *snapshotFeed) publish(s int) int {
	sf.t.Helper()
	ctx := context.Background()
	sf.d.publishSnapshots(ctx, logr.Discard(), sf.at(s))
	synctest.Wait()
	sf.d.Settle(ctx)
	if pub := sf.d.ckpt.pubs[sf.pod.UID]; pub != nil && pub.inFlight {
		sf.t.Fatal("a publication still in flight after Settle")
	}
	return sf.f.count()
}

func newSnapshotFeed(t *testing.T, pod *corev1.Pod) (*snapshotFeed, *Agent, *fakeKubelet) {
	t.Helper()
	t0 := time.Now()
	pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
	a, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, pol)
	f := withCheckpoints(t, d, fk, nil)
	observeSeeded(t, d, pod, t0, 20)
	sf := &snapshotFeed{t: t, d: d, f: f, pod: pod, pol: pol, t0: t0, sec: 1}
	sf.d.publishSnapshots(context.Background(), logr.Discard(), t0) // the pod's publication starts
	return sf, a, fk
}

// TestCheckpointPublishes: a pod's snapshot is looked at an interval after
// the pod is first seen, then once an interval, never while one is in
// flight; it goes out only when the checkpoint would change materially
// (publishReason): the first one; the seconds behind it doubled; a load
// that moves the targets out of the hysteresis band; the pod terminating
// (at once, and the last). A steady pod is held. Once the pod goes, its
// state is forgotten.
func TestCheckpointPublishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		sf, a, fk := newSnapshotFeed(t, pod)
		reasons := func() map[string]float64 {
			return counterValues(t, sf.d.metrics.snapshots)
		}

		sf.feed(30, 20)
		if n := sf.publish(30); n != 0 {
			t.Fatalf("published before the interval")
		}
		sf.feed(30, 20)
		if n := sf.publish(60); n != 1 {
			t.Fatalf("%d snapshots at the interval, want the first", n)
		}
		if a, _ := annotated(t, fk, pod).Aggregate("app"); a.CPUSeconds != 61 {
			t.Errorf("first snapshot cpu seconds %v, want 61 (the first sample has a rate too)", a.CPUSeconds)
		}
		if got := annotated(t, fk, pod).Time; !got.Equal(sf.at(60)) {
			t.Errorf("snapshot time %v, want the pass's %v", got, sf.at(60))
		}
		if n := sf.publish(100); n != 1 {
			t.Errorf("published again within the interval")
		}
		// Nothing learnt: nothing sent, and the look counted.
		if n := sf.publish(121); n != 1 {
			t.Errorf("published with nothing learnt")
		}
		// Steady: an interval of the same load is no material change.
		sf.feed(60, 20)
		if n := sf.publish(181); n != 1 {
			t.Errorf("published a steady pod's snapshot (121 seconds, 61 published)")
		}
		if held := counterValues(t, sf.d.metrics.snapshotsHeld)[""]; held != 1 {
			t.Errorf("snug_agent_snapshots_held_total %v, want 1", held)
		}
		// Its seconds doubled: learnt.
		sf.feed(1, 20)
		if n := sf.publish(241); n != 2 {
			t.Errorf("%d snapshots after the seconds doubled, want 2", n)
		}
		if a, _ := annotated(t, fk, pod).Aggregate("app"); a.CPUSeconds != 122 {
			t.Errorf("second snapshot cpu seconds %v, want 122", a.CPUSeconds)
		}
		// A step to 90m for half a minute moves the cpu target out of the band.
		sf.feed(30, 90)
		if n := sf.publish(301); n != 3 {
			t.Errorf("%d snapshots after the load moved, want 3", n)
		}
		// Terminating: the last snapshot goes out at once, then none.
		gone := pod.DeepCopy()
		gone.DeletionTimestamp = &metav1.Time{Time: sf.at(302)}
		gone.Annotations = annotatedPod(t, fk, pod).Annotations
		if err := fk.store.Update(gone); err != nil {
			t.Fatal(err)
		}
		a.UpsertPod(gone)
		sf.feed(1, 90)
		if n := sf.publish(303); n != 4 {
			t.Errorf("%d snapshots once the pod was terminating, want 4", n)
		}
		sf.feed(100, 200)
		if n := sf.publish(500); n != 4 {
			t.Errorf("published after the final snapshot")
		}
		want := map[string]float64{"first/ok": 1, "learnt/ok": 1, "moved/ok": 1, "final/ok": 1}
		if diff := cmp.Diff(want, reasons()); diff != "" {
			t.Errorf("snug_agent_snapshots_published_total (-want +got):\n%s", diff)
		}

		// The pod goes: its state is forgotten.
		_ = fk.store.Delete(gone)
		a.DeletePod(gone.UID)
		sf.d.PassDone(context.Background())
		if len(sf.d.ckpt.pubs) != 0 || len(sf.d.ckpt.seeds) != 0 {
			t.Errorf("state of a gone pod kept: %d publications, %d seeds", len(sf.d.ckpt.pubs), len(sf.d.ckpt.seeds))
		}
	})
}

// TestSnapshotsPerPassCapped: five pods tracked at once come due in the
// same pass; each pass starts at most MaxSnapshotsPerPass patches, a
// terminating pod's first, and the others follow on the next passes
// (counted as delayed), none lost.
func TestSnapshotsPerPassCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
		var pods []*corev1.Pod
		for i := range 5 {
			pods = append(pods, testPod(fmt.Sprintf("p%d", i), map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi")))
		}
		pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
		a, d, fk := newTestDecider(t, false, pods, pol)
		f := withCheckpoints(t, d, fk, nil)
		for _, p := range pods {
			observeSeeded(t, d, p, t0, 20)
		}
		ctx := context.Background()
		pass := func(s int) int {
			t.Helper()
			d.publishSnapshots(ctx, logr.Discard(), at(s))
			synctest.Wait()
			d.Settle(ctx)
			return f.count()
		}
		pass(0) // the publications start
		for s := 1; s <= 60; s++ {
			for _, p := range pods {
				d.Observe(ctx, refOf(p), calm(at(s), 20))
			}
		}
		// The last pod terminates: its snapshot goes in the first pass.
		gone := pods[4].DeepCopy()
		gone.DeletionTimestamp = &metav1.Time{Time: at(60)}
		if err := fk.store.Update(gone); err != nil {
			t.Fatal(err)
		}
		a.UpsertPod(gone)
		if n := pass(60); n != MaxSnapshotsPerPass {
			t.Fatalf("%d snapshots in the first due pass, want %d", n, MaxSnapshotsPerPass)
		}
		if _, ok, _ := history.ParseSnapshot(annotatedPod(t, fk, pods[4])); !ok {
			t.Error("the terminating pod's snapshot waits behind the others")
		}
		if n := pass(61); n != 4 {
			t.Errorf("%d snapshots after the second pass, want 4", n)
		}
		if n := pass(62); n != 5 {
			t.Errorf("%d snapshots after the third pass, want all 5", n)
		}
		if got := counterValues(t, d.metrics.snapshotsDelayed)[""]; got != 3+1 {
			t.Errorf("snug_agent_snapshots_delayed_total %v, want 4 (3 put off in the first pass, 1 in the second)", got)
		}
	})
}

// TestCheckpointCarriesPrior: a pod that carries a snapshot (an earlier
// agent, an earlier policy generation) is not republished after the
// agent's restart while its own samples add nothing material; once they
// match what it carried, the snapshot goes out with both.
func TestCheckpointCarriesPrior(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		t0 := time.Now()
		// What an earlier agent learnt of the same calm load.
		prior := recommend.NewAggregate(recommend.DefaultConfig())
		for i := range 300 {
			at := t0.Add(time.Duration(i-300) * time.Second)
			prior.CPU.Add(20, 1, at)
			prior.Memory.Add(8<<20, 1, at)
		}
		prior.CPUSeconds, prior.MemorySeconds = 300, 300
		prior.MemoryPeakBytes, prior.MemoryPeakTime = 8<<20, t0.Add(-time.Minute)
		earlier, err := history.NewSnapshot(t0.Add(-time.Minute), map[string]*recommend.Aggregate{"app": prior})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(earlier)
		pod.Annotations = map[string]string{history.SnapshotAnnotation: string(b)}
		sf, _, fk := newSnapshotFeed(t, pod)
		for s := 60; s < 300; s += 60 {
			sf.feed(60, 20)
			if n := sf.publish(s); n != 0 {
				t.Fatalf("republished the carried snapshot at %ds with %d own seconds", s, s)
			}
		}
		sf.feed(60, 20) // 301 own samples: the first came with the seeding
		if n := sf.publish(300); n != 1 {
			t.Fatalf("%d snapshots once the own seconds matched the carried ones, want 1", n)
		}
		a, err := annotated(t, fk, pod).Aggregate("app")
		if err != nil {
			t.Fatal(err)
		}
		if a.CPUSeconds != 300+301 {
			t.Errorf("published cpu seconds %v, want 300 earlier + 301 own", a.CPUSeconds)
		}
	})
}

// TestCheckpointCarriesAcrossGenerations: a policy's new generation starts
// the pod's recommender afresh; what the earlier one learnt but had not
// published yet is carried into the new one's snapshots, not dropped.
func TestCheckpointCarriesAcrossGenerations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		sf, _, fk := newSnapshotFeed(t, pod)
		sf.feed(59, 20)
		if n := sf.publish(60); n != 1 {
			t.Fatalf("%d snapshots at the interval, want the first", n)
		}
		sf.feed(30, 20) // 90 seconds learnt, 60 published
		sf.pol.Generation++
		// The new recommender starts once its checkpoint read is taken in.
		for range settleRounds {
			sf.feed(1, 20)
			sf.publish(sf.sec)
			if st := sf.d.pods[pod.UID]; st != nil && st.policyGen == sf.pol.Generation && len(st.containers) > 0 {
				break
			}
		}
		if n := sf.publish(sf.sec); n != 1 {
			t.Fatalf("%d snapshots right after the new generation, want still 1", n)
		}
		sf.feed(60, 20)
		at := sf.sec + 60
		if n := sf.publish(at); n != 2 {
			t.Fatalf("%d snapshots once the seconds doubled, want 2", n)
		}
		own := sf.d.pods[pod.UID].containers["app"].rc.Snapshot(sf.at(at)).CPUSeconds
		got, err := annotated(t, fk, pod).Aggregate("app")
		if err != nil {
			t.Fatal(err)
		}
		if got.CPUSeconds != 90+own {
			t.Errorf("published cpu seconds %v, want the earlier generation's 90 (30 of them never published) + the new one's %v", got.CPUSeconds, own)
		}
	})
}

// TestPublishReason: the rule, case by case.
func TestPublishReason(t *testing.T) {
	cfg := recommend.DefaultConfig() // bands +10% / -20%
	sent := &snapshotSum{seconds: 100, containers: map[string]containerSum{"app": {cpu: 100, memory: 100 << 20, peak: 50 << 20}}}
	with := func(f func(s *snapshotSum)) *snapshotSum {
		s := &snapshotSum{seconds: sent.seconds, containers: maps.Clone(sent.containers)}
		f(s)
		return s
	}
	set := func(f func(c *containerSum)) func(s *snapshotSum) {
		return func(s *snapshotSum) { c := s.containers["app"]; f(&c); s.containers["app"] = c }
	}
	for _, tc := range []struct {
		name       string
		sent, next *snapshotSum
		want       string
	}{
		{"none published", nil, sent, publishFirst},
		{"same", sent, with(func(*snapshotSum) {}), ""},
		{"seconds up 99%", sent, with(func(s *snapshotSum) { s.seconds = 199 }), ""},
		{"seconds doubled", sent, with(func(s *snapshotSum) { s.seconds = 200 }), publishLearnt},
		{"cpu +10%", sent, with(set(func(c *containerSum) { c.cpu = 110 })), ""},
		{"cpu +11%", sent, with(set(func(c *containerSum) { c.cpu = 111 })), publishMoved},
		{"cpu -20%", sent, with(set(func(c *containerSum) { c.cpu = 80 })), ""},
		{"cpu -21%", sent, with(set(func(c *containerSum) { c.cpu = 79 })), publishMoved},
		{"memory +11%", sent, with(set(func(c *containerSum) { c.memory = 111 << 20 })), publishMoved},
		{"memory -21%", sent, with(set(func(c *containerSum) { c.memory = 79 << 20 })), publishMoved},
		{"peak +10%", sent, with(set(func(c *containerSum) { c.peak = 55 << 20 })), ""},
		{"peak +11%", sent, with(set(func(c *containerSum) { c.peak = 56 << 20 })), publishMoved},
		{"peak down", sent, with(set(func(c *containerSum) { c.peak = 10 << 20 })), ""},
		{"container added", sent, with(func(s *snapshotSum) { s.containers["side"] = containerSum{cpu: 1} }), publishMoved},
		{"container renamed", sent, &snapshotSum{seconds: 100, containers: map[string]containerSum{"other": sent.containers["app"]}}, publishMoved},
	} {
		if got := publishReason(tc.sent, tc.next, cfg); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCheckpointDryRunPublishesNothing: a dry run never patches a pod.
func TestCheckpointDryRunPublishesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		t0 := time.Now()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		_, d, fk := newTestDecider(t, true, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		f := withCheckpoints(t, d, fk, nil)
		observeSeeded(t, d, pod, t0, 20)
		for s := range 200 {
			d.Observe(ctx, refOf(pod), calm(t0.Add(time.Duration(s+1)*time.Second), 20))
			d.publishSnapshots(ctx, logr.Discard(), t0.Add(time.Duration(s+1)*time.Second))
		}
		synctest.Wait()
		if f.count() != 0 {
			t.Errorf("a dry run published %d snapshots", f.count())
		}
	})
}

func mustAggregate(t *testing.T, text string) *recommend.Aggregate {
	t.Helper()
	var a recommend.Aggregate
	if err := a.UnmarshalText([]byte(text)); err != nil {
		t.Fatal(err)
	}
	return &a
}

// counterValues is c's series by their label values, joined by "/" in the
// order of the labels' names.
func counterValues(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	out := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		var vals []string
		for _, l := range pb.GetLabel() {
			vals = append(vals, l.GetValue())
		}
		out[strings.Join(vals, "/")] = pb.GetCounter().GetValue()
	}
	return out
}

func annotatedPod(t *testing.T, fk *fakeKubelet, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	p, err := corelisters.NewPodLister(fk.store).Pods(pod.Namespace).Get(pod.Name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func annotated(t *testing.T, fk *fakeKubelet, pod *corev1.Pod) history.Snapshot {
	t.Helper()
	s, ok, err := history.ParseSnapshot(annotatedPod(t, fk, pod))
	if !ok || err != nil {
		t.Fatalf("pod's snapshot: ok %v, err %v", ok, err)
	}
	return s
}

// TestCheckpointReaderRereads: one read serves the containers that start
// within the TTL (an agent restart's first pass); a container starting
// later gets what the controller wrote since.
func TestCheckpointReaderRereads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testingclock.NewFakeClock(time.Now())
		var mu sync.Mutex
		version, reads := "1", 0
		r := &checkpointReader{now: clk.Now, ttl: checkpointTTL, fx: newExecutor(), entries: map[string]*readCheckpoint{},
			read: func(context.Context, string, string) (map[string]string, error) {
				mu.Lock()
				defer mu.Unlock()
				reads++
				return map[string]string{"v": version}, nil
			}}
		// get reads until the reader has the checkpoint: a first call
		// starts the read, the loop takes it in, a second call has it.
		get := func() string {
			t.Helper()
			for range 2 {
				data, ok, err := r.get(context.Background(), "ns", "cp")
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					return data["v"]
				}
				synctest.Wait()
				for _, settle := range r.fx.take() {
					settle(context.Background(), logr.Discard())
				}
			}
			t.Fatal("never read")
			return ""
		}
		if v := get(); v != "1" {
			t.Fatalf("first read %q", v)
		}
		mu.Lock()
		version = "2"
		mu.Unlock()
		clk.Step(checkpointTTL / 2)
		v := get()
		mu.Lock()
		n := reads
		mu.Unlock()
		if v != "1" || n != 1 {
			t.Errorf("within the TTL: %q after %d reads, want the one read's 1", v, n)
		}
		clk.Step(checkpointTTL)
		if v := get(); v != "2" {
			t.Errorf("after the TTL: %q, want the new 2", v)
		}
	})
}
