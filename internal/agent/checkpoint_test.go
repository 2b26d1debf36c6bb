package agent

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
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

// TestCheckpointPublishes: the snapshot goes out an interval after the pod
// is first seen, then at most once an interval, never while one is in
// flight and not when nothing was learnt; it carries the pod's earlier
// snapshot (from an earlier agent) forward.
func TestCheckpointPublishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		log := logr.Discard()
		t0 := time.Now()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		earlier, err := history.NewSnapshot(t0.Add(-time.Minute), map[string]*recommend.Aggregate{"app": mustAggregate(t, workloadAggregate(t, recommend.DefaultConfig(), 80, 300, t0))})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(earlier)
		pod.Annotations = map[string]string{history.SnapshotAnnotation: string(b)}
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, selectorPolicy("pol", v1alpha1.UpdateModeInPlace))
		f := withCheckpoints(t, d, fk, nil)

		sec := 0
		feed := func(n int) {
			for range n {
				d.Observe(ctx, refOf(pod), calm(t0.Add(time.Duration(sec)*time.Second), 20))
				sec++
			}
		}
		observeSeeded(t, d, pod, t0, 20)
		sec = 1
		at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
		// waitPublished lets the publications end and takes them in.
		waitPublished := func(n int) {
			t.Helper()
			synctest.Wait()
			d.Settle(ctx)
			if f.count() != n || d.ckpt.pubs[pod.UID].inFlight {
				t.Fatalf("%d publications (one in flight: %v), want %d", f.count(), d.ckpt.pubs[pod.UID].inFlight, n)
			}
		}

		d.publishSnapshots(ctx, log, at(0)) // the pod's publication starts
		feed(30)
		d.publishSnapshots(ctx, log, at(30))
		if f.count() != 0 {
			t.Fatalf("published before the interval")
		}
		feed(30)
		d.publishSnapshots(ctx, log, at(60))
		d.publishSnapshots(ctx, log, at(61)) // in flight or too soon: nothing more
		waitPublished(1)

		got := annotated(t, fk, pod)
		a, err := got.Aggregate("app")
		if err != nil {
			t.Fatal(err)
		}
		// 61 own samples (cpu seconds: the first sample has a rate too), plus
		// the earlier agent's 300.
		if a.CPUSeconds != 300+61 {
			t.Errorf("published cpu seconds %v, want 300 earlier + 61 own", a.CPUSeconds)
		}
		if !got.Time.Equal(at(60)) {
			t.Errorf("snapshot time %v, want the pass's %v", got.Time, at(60))
		}

		d.publishSnapshots(ctx, log, at(100))
		if f.count() != 1 {
			t.Errorf("published again within the interval")
		}
		// An interval later with nothing learnt: nothing sent.
		d.publishSnapshots(ctx, log, at(121))
		synctest.Wait()
		d.Settle(ctx)
		d.publishSnapshots(ctx, log, at(121))
		if f.count() != 1 {
			t.Errorf("published with nothing learnt")
		}
		feed(5)
		d.publishSnapshots(ctx, log, at(150)) // not due: the empty check counted
		d.publishSnapshots(ctx, log, at(181))
		waitPublished(2)
		if a, _ := annotated(t, fk, pod).Aggregate("app"); a.CPUSeconds != 300+66 {
			t.Errorf("second snapshot cpu seconds %v, want 366", a.CPUSeconds)
		}

		// The pod goes: its state is forgotten.
		_ = fk.store.Delete(pod)
		d.PassDone(ctx)
		if len(d.ckpt.pubs) != 0 || len(d.ckpt.seeds) != 0 {
			t.Errorf("state of a gone pod kept: %d publications, %d seeds", len(d.ckpt.pubs), len(d.ckpt.seeds))
		}
	})
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

func annotated(t *testing.T, fk *fakeKubelet, pod *corev1.Pod) history.Snapshot {
	t.Helper()
	p, err := corelisters.NewPodLister(fk.store).Pods(pod.Namespace).Get(pod.Name)
	if err != nil {
		t.Fatal(err)
	}
	s, ok, err := history.ParseSnapshot(p)
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
