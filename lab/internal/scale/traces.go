package scale

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/lab/internal/quality/trace"
)

// tracePlan plays real traces in the bench: each policy's pods (a
// workload's replicas) play one container of the traces, from one offset
// into it, each pod with its own draws (the sampler's, seeded by its
// container ID). Workload g plays container g mod the containers, from an
// offset drawn from Seed, late enough in the trace for the pods' history
// (PodAge) to come from the trace's own seconds before it.
type tracePlan struct {
	containers []*trace.Container
	// offsets are per workload.
	offsets []int
}

// newTracePlan assigns workloads to the traces' containers.
func newTracePlan(traces []*trace.Trace, workloads int, age time.Duration, seed uint64) (*tracePlan, error) {
	p := &tracePlan{}
	for _, t := range traces {
		for i := range t.Pods {
			for j := range t.Pods[i].Containers {
				if c := &t.Pods[i].Containers[j]; len(c.CPUMillis) > 0 {
					p.containers = append(p.containers, c)
				}
			}
		}
	}
	if len(p.containers) == 0 {
		return nil, errors.New("the traces hold no container with a cpu series")
	}
	rng := rand.New(rand.NewPCG(seed, 0x5ca1e))
	ageSecs := int(age / time.Second)
	for g := range workloads {
		n := len(p.containers[g%len(p.containers)].CPUMillis)
		lo := min(ageSecs, n-1)
		p.offsets = append(p.offsets, lo+rng.IntN(n-lo))
	}
	return p, nil
}

// container is workload g's container.
func (p *tracePlan) container(g int) *trace.Container { return p.containers[g%len(p.containers)] }

// demand is workload g's load: its container from its offset, over and
// over.
func (p *tracePlan) demand(g int) Demand {
	return TraceDemand{C: p.container(g), Offset: p.offsets[g]}
}

// resources are workload g's pods' starting resources: its container's
// as the trace writes them, 100m and 64Mi where it writes no request.
func (p *tracePlan) resources(g int) corev1.ResourceRequirements {
	c := p.container(g)
	rr := corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(max(c.CPURequestMillis, 100), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(max(c.MemRequestBytes, 64<<20), resource.BinarySI),
	}}
	if c.CPULimitMillis > 0 || c.MemLimitBytes > 0 {
		rr.Limits = corev1.ResourceList{}
	}
	if c.CPULimitMillis > 0 {
		rr.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(c.CPULimitMillis, rr.Requests.Cpu().MilliValue()), resource.DecimalSI)
	}
	if c.MemLimitBytes > 0 {
		rr.Limits[corev1.ResourceMemory] = *resource.NewQuantity(max(c.MemLimitBytes, rr.Requests.Memory().Value()), resource.BinarySI)
	}
	return rr
}

// history is workload g's pods' snapshot annotation at now: the
// container's seconds before its offset, up to age of them, each observed
// at its second as the agent observes one (its demand and working set,
// weight 1: recommend.Container.Observe), under the default
// recommender's half-lives.
func (p *tracePlan) history(g int, age time.Duration, now time.Time) (string, error) {
	c, off := p.container(g), p.offsets[g]
	cfg := recommend.DefaultConfig()
	a := recommend.NewAggregate(cfg)
	from := max(0, off-int(age/time.Second))
	var peak float64
	var peakAt time.Time
	for s := from; s < off; s++ {
		t := now.Add(-time.Duration(off-s) * time.Second)
		a.CPU.Add(c.CPUMillis[s], 1, t)
		mem := 0.0
		if s < len(c.MemBytes) {
			mem = c.MemBytes[s]
		}
		a.Memory.Add(mem, 1, t)
		if now.Sub(t) <= cfg.MemoryPeakWindow && mem >= peak {
			peak, peakAt = mem, t
		}
	}
	secs := float64(off - from)
	if secs == 0 {
		return "", nil
	}
	a.CPUSeconds, a.MemorySeconds = secs, secs
	a.MemoryPeakBytes, a.MemoryPeakTime = int64(peak), peakAt
	snap, err := history.NewSnapshot(now, map[string]*recommend.Aggregate{"app": a})
	if err != nil {
		return "", fmt.Errorf("workload %d's history: %w", g, err)
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return "", fmt.Errorf("workload %d's history: %w", g, err)
	}
	return string(b), nil
}
