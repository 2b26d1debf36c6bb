package quality

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/snug-dev/snug/lab/internal/quality/node"
	"github.com/snug-dev/snug/lab/internal/quality/trace"
)

// A sizer decides resizes. Each second the world has stepped every
// container, it is told what happened and returns the resizes to ask the
// kubelet for.
type sizer interface {
	// start is called once before second 0; it may change the starting
	// resources (a fixed recommendation applied once).
	start(w *world) error
	// second is called after every container stepped through second t.
	second(w *world, t int) ([]resizeReq, error)
	// stop ends the sizer (a subprocess).
	stop()
}

type resizeReq struct {
	pod, container int
	res            node.Resources
}

// world is one replay of one trace under one sizer.
type world struct {
	tr   *trace.Trace
	rng  *rand.Rand
	cont [][]*node.Container
	// last is every container's latest second.
	last [][]node.Second
	// podStart is the second each pod (re)started.
	podStart []int
	// series is kept for the SVG: per container, the request and limit
	// per second (only for the plotted container).
	plot    *plotSeries
	plotPod int
	metrics *Metrics
}

// Now is second t's wall-clock time.
func now(t int) time.Time { return trace.Epoch.Add(time.Duration(t) * time.Second) }

// Run replays tr under the named sizer ("snug", "vpa", "static", "krr");
// env carries the vpareplay binary ("vpa") and the fixed recommendation
// ("krr", from KRR).
func Run(tr *trace.Trace, name string, env Env) (*Metrics, error) {
	var s sizer
	switch name {
	case "snug":
		s = &snugSizer{}
	case "vpa":
		if env.VPABinary == "" {
			return nil, fmt.Errorf("replaying %s under vpa: no vpareplay binary", tr.Name)
		}
		ph := DefaultVPAPhases
		if env.VPAPhases != nil {
			ph = *env.VPAPhases
		}
		if ph.Recommender < 0 || ph.Recommender >= vpaLoop || ph.Updater < 0 || ph.Updater >= vpaLoop {
			return nil, fmt.Errorf("replaying %s under vpa: loop phases %+v outside 0-%d", tr.Name, ph, vpaLoop-1)
		}
		s = &vpaSizer{bin: env.VPABinary, phases: ph}
	case "static":
		s = staticSizer{}
	case "krr":
		s = &fixedSizer{rec: env.KRR}
	default:
		return nil, fmt.Errorf("replaying %s: no sizer %q", tr.Name, name)
	}
	w := newWorld(tr, name)
	if err := s.start(w); err != nil {
		return nil, fmt.Errorf("replaying %s under %s: %w", tr.Name, name, err)
	}
	defer s.stop()
	for t := range tr.Seconds {
		w.step(t)
		w.metrics.endSecond(t)
		reqs, err := s.second(w, t)
		if err != nil {
			return nil, fmt.Errorf("replaying %s under %s at second %d: %w", tr.Name, name, t, err)
		}
		for _, r := range reqs {
			w.cont[r.pod][r.container].Resize(t, r.res, node.DrawLatency(w.rng))
		}
	}
	w.metrics.finish()
	return w.metrics, nil
}

// Env is what Run needs beyond the trace.
type Env struct {
	// VPABinary is the vpareplay binary (EnsureVPAReplay).
	VPABinary string
	// KRR is the fixed recommendation per pod and container, for "krr".
	KRR [][]node.Resources
	// VPAPhases, when set, are VPA's loop phases (DefaultVPAPhases
	// otherwise).
	VPAPhases *VPAPhases
}

func newWorld(tr *trace.Trace, name string) *world {
	w := &world{tr: tr, rng: rand.New(rand.NewPCG(uint64(tr.Seed), 0x5eed)), podStart: make([]int, len(tr.Pods))}
	for pi, p := range tr.Pods {
		var cs []*node.Container
		for ci, c := range p.Containers {
			nc := node.NewContainer(node.Resources{
				CPURequestMillis: c.CPURequestMillis, CPULimitMillis: c.CPULimitMillis,
				MemRequestBytes: c.MemRequestBytes, MemLimitBytes: c.MemLimitBytes,
			})
			nc.CPURestart, nc.MemRestart, nc.MemByAge = c.CPURestart, c.MemRestart, c.MemByAge
			// The same bursts for every sizer: one stream per container,
			// from the trace's seed.
			nc.Noise = rand.New(rand.NewPCG(uint64(tr.Seed), uint64(pi)<<16|uint64(ci)))
			cs = append(cs, nc)
		}
		w.cont = append(w.cont, cs)
		w.last = append(w.last, make([]node.Second, len(cs)))
	}
	w.plotPod = plotPod(tr)
	w.metrics = newMetrics(tr, name)
	ps := newPlot(tr.Seconds)
	w.plot = &ps
	w.metrics.plot = w.plot
	return w
}

// plotPod is the pod the SVG shows: the one with the most CPU demand.
func plotPod(tr *trace.Trace) int {
	best, bestSum := 0, -1.0
	for i, p := range tr.Pods {
		s := 0.0
		for _, v := range p.Containers[0].CPUMillis {
			s += v
		}
		if s > bestSum {
			best, bestSum = i, s
		}
	}
	return best
}

func (w *world) step(t int) {
	for p, pod := range w.tr.Pods {
		for c, tc := range pod.Containers {
			nc := w.cont[p][c]
			mem := tc.MemBytes
			memAt := func(age int) float64 { return mem[t] }
			if tc.MemByAge {
				memAt = func(age int) float64 { return mem[min(age, len(mem)-1)] }
			}
			s := nc.Step(t, tc.CPUMillis[t], memAt)
			w.last[p][c] = s
			w.metrics.add(p, c, t, s, nc.Actual)
			if p == w.plotPod && c == 0 {
				w.plot.add(t, tc.CPUMillis[t], memAt(s.Age), s, nc.Actual)
			}
		}
	}
}

// staticSizer never resizes: the requests as written.
type staticSizer struct{}

func (staticSizer) start(*world) error                      { return nil }
func (staticSizer) second(*world, int) ([]resizeReq, error) { return nil, nil }
func (staticSizer) stop()                                   {}

// fixedSizer applies one recommendation before the start and never again.
type fixedSizer struct{ rec [][]node.Resources }

func (f *fixedSizer) start(w *world) error {
	if len(f.rec) != len(w.cont) {
		return fmt.Errorf("the fixed recommendation has %d pods, the trace %d", len(f.rec), len(w.cont))
	}
	for p := range w.cont {
		for c := range w.cont[p] {
			w.cont[p][c].Actual = f.rec[p][c]
		}
	}
	return nil
}
func (*fixedSizer) second(*world, int) ([]resizeReq, error) { return nil, nil }
func (*fixedSizer) stop()                                   {}

// KRR is a KRR-style fixed recommendation (robusta-dev/krr's simple
// strategy: cpu request at the 95th percentile of the usage, no cpu limit;
// memory request and limit at the peak plus 15%), computed from what the
// static run used (what Prometheus would have recorded), applied once.
func KRR(static *Metrics) [][]node.Resources {
	out := make([][]node.Resources, len(static.usage))
	for p := range static.usage {
		for c := range static.usage[p] {
			u := static.usage[p][c]
			out[p] = append(out[p], node.Resources{
				CPURequestMillis: max(int64(percentile(u.cpu, 0.95)+0.5), 1),
				MemRequestBytes:  int64(u.memMax * 1.15), MemLimitBytes: int64(u.memMax * 1.15),
			})
		}
	}
	return out
}
