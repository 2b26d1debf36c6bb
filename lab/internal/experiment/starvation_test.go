package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/internal/agent/agenttest"
)

// fakeCPUStat rewrites a v1 container's cpu.stat in place (one pwrite of
// a fixed-width text, so a read never sees half of it): nr_periods grows
// 10 a second, nr_throttled by throttled times that.
type fakeCPUStat struct {
	f         *os.File
	throttled float64
}

func (c fakeCPUStat) write(elapsed time.Duration) error {
	periods := 1000 + int64(elapsed.Seconds()*10)
	throttled := int64(float64(periods-1000) * c.throttled)
	_, err := c.f.WriteAt(fmt.Appendf(nil, "nr_periods %012d\nnr_throttled %012d\nthrottled_time %012d\n", periods, throttled, throttled*1000), 0)
	return err
}

// TestStarvationWatch reads a generated v1 cgroup tree: a calm container's
// starvation ends within a few readings; with a second container half
// throttled it does not, and the watch says how throttled they are.
func TestStarvationWatch(t *testing.T) {
	root := t.TempDir()
	pods, err := agenttest.WriteSyntheticNode(root, "v1", 2)
	if err != nil {
		t.Fatal(err)
	}
	var stats []fakeCPUStat
	for i, p := range pods {
		path := filepath.Join(root, "cpu", "kubepods", "burstable", "pod"+string(p.UID), p.Status.ContainerStatuses[0].ContainerID[len("containerd://"):], "cpu.stat")
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		stats = append(stats, fakeCPUStat{f: f, throttled: float64(i) * 0.5})
	}
	start := time.Now()
	write := func() {
		for _, s := range stats {
			if err := s.write(time.Since(start)); err != nil {
				t.Error(err)
			}
		}
	}
	write()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				write()
			}
		}
	})
	defer func() { cancel(); wg.Wait() }()

	targets, err := StarvationTargets([]corev1.Pod{*pods[0], *pods[1]}, "app")
	if err != nil {
		t.Fatal(err)
	}
	calm, err := WatchStarvation(ctx, root, targets[:1])
	if err != nil {
		t.Fatal(err)
	}
	defer calm.Stop()
	both, err := WatchStarvation(ctx, root, targets)
	if err != nil {
		t.Fatal(err)
	}
	defer both.Stop()

	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	at, err := calm.Wait(wctx)
	if err != nil {
		t.Fatalf("calm container: %v", err)
	}
	if d := at.Sub(calm.Started()); d < 2*time.Second-50*time.Millisecond {
		t.Errorf("starvation ended %v after the first reading, want 2 s of calm readings at least", d)
	}
	if err := calm.Err(); err != nil {
		t.Errorf("read error: %v", err)
	}
	// The half-throttled one never ends; by now both have been read for
	// as long as the calm one needed.
	if at, ok := both.Ended(); ok {
		t.Errorf("with a container throttled half its periods, starvation ended at %v", at)
	}
	f, ok := both.Throttled()
	if !ok || math.Abs(f-0.25) > 0.05 {
		t.Errorf("throttled %v (ok %v), want about 0.25 (0 and 0.5 of equal periods)", f, ok)
	}
	sctx, scancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer scancel()
	if _, err := both.Wait(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait on a starved container: %v, want the deadline", err)
	}

	if _, err := WatchStarvation(ctx, root, nil); err == nil {
		t.Error("a watch of no containers started")
	}
	missing := targets[0]
	missing.ContainerID = "containerd://" + fmt.Sprintf("%064x", 99)
	if _, err := WatchStarvation(ctx, root, []StarvationTarget{missing}); err == nil {
		t.Error("a watch of a container with no cgroup started")
	}
}
