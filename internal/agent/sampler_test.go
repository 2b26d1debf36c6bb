package agent

import (
	"context"
	"fmt"
	"io/fs"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/snug-dev/snug/internal/agent/agenttest"
	"github.com/snug-dev/snug/internal/cgroup"
)

// memSampler is an in-memory Sampler: each container's cumulative CPU
// grows by millis a second; a container is missing until present, and
// gone once gone.
type memSampler struct {
	millis  map[string]uint64 // by container ID
	present map[string]bool
	gone    map[string]bool
	opens   map[string]int
	closed  map[string]bool
}

type memSource struct {
	s  *memSampler
	id string
	t0 time.Time
}

func (m *memSampler) Open(ref ContainerRef) (Source, cgroup.Path, error) {
	m.opens[ref.ContainerID]++
	if !m.present[ref.ContainerID] {
		return nil, cgroup.Path{}, fmt.Errorf("finding %s: %w", ref.ContainerID, fs.ErrNotExist)
	}
	return &memSource{s: m, id: ref.ContainerID}, cgroup.Path{Version: cgroup.V2, Unified: "/mem/" + ref.ContainerID}, nil
}

func (s *memSource) Read(now time.Time) (cgroup.Sample, error) {
	if s.s.gone[s.id] {
		return cgroup.Sample{}, fmt.Errorf("reading %s: %w", s.id, cgroup.ErrGone)
	}
	if s.t0.IsZero() {
		s.t0 = now
	}
	return cgroup.Sample{Time: now, Version: cgroup.V2,
		CPUUsageMicros:   uint64(now.Sub(s.t0).Seconds()) * s.s.millis[s.id] * 1000,
		MemoryUsageBytes: 64 << 20,
		MemoryLimit:      cgroup.MemoryLimit{Unlimited: true},
		CPULimit:         cgroup.CPULimit{Unlimited: true},
	}, nil
}

func (s *memSource) Close() error { s.s.closed[s.id] = true; return nil }

// TestSamplerSeam: an Agent with Config.Sampler reads through it and not
// the cgroup files: rates come from its samples, a container it does not
// find yet is looked for again, and one it reports gone is closed and not
// looked for again while the pod still lists it.
func TestSamplerSeam(t *testing.T) {
	pods := agenttest.SyntheticPods(2)
	ids := make([]string, len(pods))
	m := &memSampler{millis: map[string]uint64{}, present: map[string]bool{}, gone: map[string]bool{}, opens: map[string]int{}, closed: map[string]bool{}}
	for i, p := range pods {
		ids[i] = p.Status.ContainerStatuses[0].ContainerID
		m.millis[ids[i]] = uint64(100 * (i + 1))
	}
	m.present[ids[0]] = true
	cfg := NewConfig()
	cfg.CgroupRoot = "" // no files: the sampler is all there is
	cfg.Sampler = m
	fc := clocktesting.NewFakeClock(t0)
	a, err := New(cfg, fc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.closeAll)
	ctx := context.Background()
	for _, p := range pods {
		a.UpsertPod(p)
	}
	a.Pass(ctx)
	if n := len(a.Containers(Query{})); n != 1 {
		t.Fatalf("tracking %d containers, want the one the sampler has", n)
	}
	m.present[ids[1]] = true
	fc.Step(time.Second)
	a.Pass(ctx)
	fc.Step(time.Second)
	a.Pass(ctx)
	for i, p := range pods {
		v, ok := a.Container(p.Namespace, p.Name, "app", Query{})
		if !ok {
			t.Fatalf("%s not tracked", p.Name)
		}
		if got, want := v.Latest.CPUUsageMillicores, float64(100*(i+1)); !v.Latest.HasRate || got != want {
			t.Errorf("%s: rate %v, %v millicores; want %v", p.Name, v.Latest.HasRate, got, want)
		}
		if v.Cgroup.String() != "/mem/"+ids[i] {
			t.Errorf("%s: cgroup %q, want the sampler's", p.Name, v.Cgroup.String())
		}
	}
	if m.opens[ids[1]] != 2 {
		t.Errorf("the late container was opened %d times, want 2 (missing, then found)", m.opens[ids[1]])
	}
	m.gone[ids[0]] = true
	for range 3 {
		fc.Step(time.Second)
		a.Pass(ctx)
	}
	if _, ok := a.Container(pods[0].Namespace, pods[0].Name, "app", Query{}); ok || !m.closed[ids[0]] || m.opens[ids[0]] != 1 {
		t.Errorf("gone container: tracked %v, closed %v, opened %d times; want dropped, closed, opened once", ok, m.closed[ids[0]], m.opens[ids[0]])
	}
}
