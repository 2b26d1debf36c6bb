package controller

import (
	"math"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/recommend"
)

// snapshotOf returns a container snapshot text of seconds samples of
// cpuMillis and memBytes, ending at end.
func snapshotOf(t testing.TB, cfg recommend.Config, seconds int, cpuMillis, memBytes float64, end time.Time) string {
	t.Helper()
	a := recommend.NewAggregate(cfg)
	for i := range seconds {
		at := end.Add(time.Duration(i-seconds) * time.Second)
		a.CPU.Add(cpuMillis, 1, at)
		a.Memory.Add(memBytes, 1, at)
	}
	a.CPUSeconds, a.MemorySeconds = float64(seconds), float64(seconds)
	a.MemoryPeakBytes, a.MemoryPeakTime = int64(memBytes), end
	text, err := a.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

func TestFoldCountsEachSnapshotOnce(t *testing.T) {
	cfg := recommend.DefaultConfig()
	snap := func(seconds int, at time.Time) history.Snapshot {
		return history.Snapshot{Time: at, Containers: map[string]string{"app": snapshotOf(t, cfg, seconds, 100, 64<<20, at)}}
	}
	seconds := func(total map[string]*recommend.Aggregate) float64 {
		if total["app"] == nil {
			return 0
		}
		return total["app"].CPUSeconds
	}
	// Two pods publish.
	cp, total, err := fold(cfg, checkpoint{}, map[types.UID]history.Snapshot{"a": snap(60, t0), "b": snap(30, t0)})
	if err != nil {
		t.Fatal(err)
	}
	if got := seconds(total); got != 90 {
		t.Fatalf("after two pods: %v seconds, want 90", got)
	}
	// The same snapshots again: nothing counted twice.
	cp, total, err = fold(cfg, cp, map[types.UID]history.Snapshot{"a": snap(60, t0), "b": snap(30, t0)})
	if err != nil {
		t.Fatal(err)
	}
	if got := seconds(total); got != 90 {
		t.Fatalf("same snapshots folded again: %v seconds, want 90", got)
	}
	// a publishes a newer snapshot (its whole history); b publishes none
	// this time (annotation unchanged is the usual case; a zero Snapshot
	// means the pod has none now): b's last one still counts.
	cp, total, err = fold(cfg, cp, map[types.UID]history.Snapshot{"a": snap(120, t0.Add(time.Minute)), "b": {}})
	if err != nil {
		t.Fatal(err)
	}
	if got := seconds(total); got != 150 {
		t.Fatalf("after a's newer snapshot: %v seconds, want 150", got)
	}
	// An older snapshot than the one kept does not replace it.
	cp, total, _ = fold(cfg, cp, map[types.UID]history.Snapshot{"a": snap(60, t0), "b": {}})
	if got := seconds(total); got != 150 {
		t.Fatalf("stale snapshot: %v seconds, want 150", got)
	}
	// b is gone: retired once, still counted, then never again.
	cp, total, err = fold(cfg, cp, map[types.UID]history.Snapshot{"a": {}})
	if err != nil {
		t.Fatal(err)
	}
	if got := seconds(total); got != 150 {
		t.Fatalf("after b left: %v seconds, want 150", got)
	}
	if _, ok := cp.pods["b"]; ok || cp.retired["app"].CPUSeconds != 30 {
		t.Fatalf("b not retired exactly once: pods %v, retired %v s", cp.pods, cp.retired["app"].CPUSeconds)
	}
	for range 3 {
		cp, total, _ = fold(cfg, cp, map[types.UID]history.Snapshot{"a": {}})
	}
	if got := seconds(total); got != 150 {
		t.Fatalf("folding again after b left: %v seconds, want 150", got)
	}
	// A pod that never published adds nothing and is not kept.
	cp, _, _ = fold(cfg, cp, map[types.UID]history.Snapshot{"a": {}, "c": {}})
	if _, ok := cp.pods["c"]; ok {
		t.Error("a pod with no snapshot is kept")
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	cfg := recommend.DefaultConfig()
	live := map[types.UID]history.Snapshot{
		"a": {Time: t0, Containers: map[string]string{"app": snapshotOf(t, cfg, 60, 200, 100<<20, t0), "side": snapshotOf(t, cfg, 60, 10, 20<<20, t0)}},
	}
	prev, _, _ := fold(cfg, checkpoint{}, live)
	cp, total, err := fold(cfg, prev, map[types.UID]history.Snapshot{}) // a left: retired
	if err != nil {
		t.Fatal(err)
	}
	data, err := cp.encode(total)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"aggregate.app", "aggregate.side", "retired.app", "retired.side", "pods.json"} {
		if _, ok := data[k]; !ok {
			t.Errorf("data has no key %s; keys: %v", k, keysOf(data))
		}
	}
	back, err := decodeCheckpoint(cfg, data)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.retired["app"].CPUSeconds; got != 60 {
		t.Errorf("retired app after round trip: %v seconds, want 60", got)
	}
	if _, err := decodeCheckpoint(cfg, map[string]string{"retired.app": "not base64!"}); err == nil {
		t.Error("a damaged checkpoint decoded")
	}
	if _, err := decodeCheckpoint(cfg, map[string]string{"pods.json": "{"}); err == nil {
		t.Error("damaged pods.json decoded")
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestFoldSkipsBadSnapshots(t *testing.T) {
	cfg := recommend.DefaultConfig()
	other := cfg
	other.CPUHalfLife = time.Hour
	live := map[types.UID]history.Snapshot{
		"good":     {Time: t0, Containers: map[string]string{"app": snapshotOf(t, cfg, 60, 100, 64<<20, t0)}},
		"garbage":  {Time: t0, Containers: map[string]string{"app": "%%%"}},
		"halflife": {Time: t0, Containers: map[string]string{"app": snapshotOf(t, other, 60, 100, 64<<20, t0)}},
	}
	_, total, err := fold(cfg, checkpoint{}, live)
	if err == nil {
		t.Error("no error for bad snapshots")
	}
	if got := total["app"].CPUSeconds; got != 60 {
		t.Errorf("%v seconds, want the good pod's 60", got)
	}
}

func TestRecommendationFor(t *testing.T) {
	cfg := recommend.DefaultConfig()
	_, total, err := fold(cfg, checkpoint{}, map[types.UID]history.Snapshot{
		"a": {Time: t0, Containers: map[string]string{"app": snapshotOf(t, cfg, 600, 300, 200<<20, t0)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := &v1alpha1.SnugPolicySpec{ResourcePolicy: &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
		ContainerName: "*", MaxAllowed: &v1alpha1.ResourceAmounts{CPU: ptr.To(resource.MustParse("200m"))},
	}}}}
	rec, err := recommendationFor(cfg, &v1alpha1.SnugPolicy{Spec: *spec}, nil, total, t0)
	if err != nil {
		t.Fatal(err)
	}
	if rec == nil || len(rec.ContainerRecommendations) != 1 {
		t.Fatalf("recommendation %+v, want one container", rec)
	}
	r := rec.ContainerRecommendations[0]
	if got := r.Target.Cpu().MilliValue(); got != 200 {
		t.Errorf("target cpu %dm, want maxAllowed 200m", got)
	}
	// 300m at p90 plus 15% margin, within a bucket (5%).
	if got, want := float64(r.UncappedTarget.Cpu().MilliValue()), 300*1.15; math.Abs(got-want)/want > 0.06 {
		t.Errorf("uncapped cpu %vm, want about %vm", got, want)
	}
	if r.Target.Memory().Value() < 200<<20 {
		t.Errorf("target memory %d below the working set", r.Target.Memory().Value())
	}
	if r.LowerBound.Cpu().Cmp(*r.UpperBound.Cpu()) > 0 {
		t.Errorf("lowerBound %s above upperBound %s", r.LowerBound.Cpu(), r.UpperBound.Cpu())
	}
	empty, err := recommendationFor(cfg, &v1alpha1.SnugPolicy{Spec: *spec}, nil, map[string]*recommend.Aggregate{"app": recommend.NewAggregate(cfg)}, t0)
	if err != nil || empty != nil {
		t.Errorf("no samples: %+v, %v; want nil", empty, err)
	}
}
