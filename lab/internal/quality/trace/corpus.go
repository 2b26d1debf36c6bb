package trace

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

const (
	mi = 1 << 20
	gi = 1 << 30
)

// A shape builds one trace from a random source.
type shape struct {
	name string
	// what the shape stands for, for --help and docs/quality.md.
	what  string
	build func(r *rand.Rand) *Trace
}

var shapes = []shape{
	{"diurnal", "24 h of a day-night cycle, 100-400m cpu and 200-300Mi", diurnal},
	{"weekly", "7 days: weekday cycles, quiet weekend", weekly},
	{"step", "2 h: 100m, a 4x step up at 30 min, down at 75 min, up again at 100 min", step},
	{"spikes", "2 h: 80m with short 5x spikes of 5-20 s every 5-10 min", spikes},
	{"batch", "6 h: a job whose heavy phase (800m, 700Mi) starts after a 2 h light one", batch},
	{"leak", "3 h: memory leaks 3Mi a minute into the 512Mi limit (restarts reset it)", leak},
	{"jvm", "2 h: a heap sawtooth 300-600Mi every 2 min, GC cpu bursts", jvm},
	{"idle-wake", "3 h: idle 5m for 2 h, then wakes to 300m and 300Mi", idleWake},
	{"startup", "1 h: a 60 s start-up burst (800m, 400Mi), then 100m and 250Mi", startup},
	{"noisy", "4 h: steady 200m with +-30% noise every second", noisy},
	{"multi", "2 h: a pod of 6 containers (app steps 3x at 1 h, proxy, logs, metrics, cache, worker)", multi},
	{"hot-replica", "2 h: 3 replicas at 100m, one turns hot (400m) at 30 min", hotReplica},
}

// Shapes lists the generator's shape names, in corpus order.
func Shapes() []string {
	out := make([]string, len(shapes))
	for i, s := range shapes {
		out[i] = s.name
	}
	return out
}

// Describe says what a shape is ("" for an unknown one).
func Describe(name string) string {
	for _, s := range shapes {
		if s.name == name {
			return s.what
		}
	}
	return ""
}

// Generate builds the named shape for seed. The same shape and seed always
// give the same trace.
func Generate(name string, seed int64) (*Trace, error) {
	for _, s := range shapes {
		if s.name != name {
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(name))
		t := s.build(rand.New(rand.NewPCG(uint64(seed), h.Sum64())))
		t.Name, t.Shape, t.Seed = fmt.Sprintf("%s/seed%d", name, seed), name, seed
		slices.Sort(t.Steps)
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("generating %s: %w", name, err)
		}
		return t, nil
	}
	return nil, fmt.Errorf("generating: no shape %q (have %v)", name, Shapes())
}

// TuningSeeds and HeldOutSeeds split the corpus: defaults may be tuned on
// the first half only; both are reported.
var (
	TuningSeeds  = []int64{1}
	HeldOutSeeds = []int64{2}
)

// Corpus builds every shape for every seed given, shape-major.
func Corpus(seeds []int64) ([]*Trace, error) {
	var out []*Trace
	for _, s := range shapes {
		for _, seed := range seeds {
			t, err := Generate(s.name, seed)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// series builds n values from f(second).
func series(n int, f func(i int) float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Max(0, f(i))
	}
	return out
}

// noise is multiplicative noise: 1 +- frac, uniform.
func noise(r *rand.Rand, frac float64) float64 { return 1 + frac*(2*r.Float64()-1) }

func one(n int, c Container, steps ...int) *Trace {
	c.Name = "app"
	return &Trace{Seconds: n, Pods: []Pod{{Name: "pod-0", Containers: []Container{c}}}, Steps: steps}
}

func day(i int, phase float64) float64 { // 0 at 03:00, 1 at 15:00
	return 0.5 - 0.5*math.Cos(2*math.Pi*(float64(i)/86400-phase))
}

func diurnal(r *rand.Rand) *Trace {
	n := 86400
	ph := 0.125 + 0.02*r.Float64()
	return one(n, Container{
		CPURequestMillis: 250, CPULimitMillis: 500, MemRequestBytes: 384 * mi, MemLimitBytes: 512 * mi,
		CPUMillis: series(n, func(i int) float64 { return (100 + 300*day(i, ph)) * noise(r, 0.15) }),
		MemBytes:  series(n, func(i int) float64 { return (200 + 100*day(i, ph)) * mi * noise(r, 0.02) }),
	})
}

func weekly(r *rand.Rand) *Trace {
	n := 7 * 86400
	ph := 0.125 + 0.02*r.Float64()
	load := func(i int) float64 {
		if d := i / 86400; d >= 5 {
			return 0.3 * day(i, ph)
		}
		return day(i, ph)
	}
	return one(n, Container{
		CPURequestMillis: 300, CPULimitMillis: 600, MemRequestBytes: 384 * mi, MemLimitBytes: 512 * mi,
		CPUMillis: series(n, func(i int) float64 { return (50 + 400*load(i)) * noise(r, 0.15) }),
		MemBytes:  series(n, func(i int) float64 { return (150 + 150*load(i)) * mi * noise(r, 0.02) }),
	})
}

func step(r *rand.Rand) *Trace {
	n := 7200
	jitter := r.IntN(60)
	up1, down, up2 := 1800+jitter, 4500+jitter, 6000+jitter
	return one(n, Container{
		CPURequestMillis: 100, CPULimitMillis: 200, MemRequestBytes: 128 * mi, MemLimitBytes: 256 * mi,
		CPUMillis: series(n, func(i int) float64 {
			v := 100.0
			if i >= up1 && i < down || i >= up2 {
				v = 400
			}
			return v * noise(r, 0.05)
		}),
		MemBytes: series(n, func(i int) float64 { return 96 * mi * noise(r, 0.02) }),
	}, up1, up2)
}

func spikes(r *rand.Rand) *Trace {
	n := 7200
	cpu := series(n, func(int) float64 { return 80 * noise(r, 0.1) })
	var steps []int
	for t := 300 + r.IntN(300); t < n-30; t += 300 + r.IntN(300) {
		steps = append(steps, t)
		for i := t; i < t+5+r.IntN(16); i++ {
			cpu[i] = 400 * noise(r, 0.1)
		}
	}
	c := Container{
		CPURequestMillis: 100, CPULimitMillis: 200, MemRequestBytes: 128 * mi, MemLimitBytes: 256 * mi,
		CPUMillis: cpu, MemBytes: series(n, func(int) float64 { return 110 * mi * noise(r, 0.02) }),
	}
	return one(n, c, steps...)
}

func batch(r *rand.Rand) *Trace {
	n := 6 * 3600
	heavy, end := 7200+r.IntN(300), 5*3600
	return one(n, Container{
		CPURequestMillis: 200, CPULimitMillis: 1000, MemRequestBytes: 512 * mi, MemLimitBytes: gi,
		CPUMillis: series(n, func(i int) float64 {
			if i >= heavy && i < end {
				return 800 * noise(r, 0.1)
			}
			return 50 * noise(r, 0.1)
		}),
		MemBytes: series(n, func(i int) float64 {
			if i >= heavy && i < end {
				return 700 * mi * noise(r, 0.02)
			}
			return 200 * mi * noise(r, 0.02)
		}),
	}, heavy)
}

func leak(r *rand.Rand) *Trace {
	n := 3 * 3600
	rate := (3 + r.Float64()) * mi / 60 // bytes per second
	return one(n, Container{
		CPURequestMillis: 100, CPULimitMillis: 200, MemRequestBytes: 256 * mi, MemLimitBytes: 512 * mi, MemByAge: true,
		CPUMillis: series(n, func(int) float64 { return 60 * noise(r, 0.1) }),
		MemBytes:  series(n, func(i int) float64 { return 150*mi + rate*float64(i) }),
	})
}

func jvm(r *rand.Rand) *Trace {
	n := 7200
	period := 110 + r.IntN(20)
	return one(n, Container{
		CPURequestMillis: 250, CPULimitMillis: 500, MemRequestBytes: 512 * mi, MemLimitBytes: 768 * mi, MemByAge: true,
		CPUMillis: series(n, func(i int) float64 {
			if i%period < 2 && i > 0 {
				return 450 * noise(r, 0.05)
			}
			return 150 * noise(r, 0.1)
		}),
		MemBytes: series(n, func(i int) float64 {
			return (300 + 300*float64(i%period)/float64(period)) * mi
		}),
	})
}

func idleWake(r *rand.Rand) *Trace {
	n := 3 * 3600
	wake := 7200 + r.IntN(300)
	return one(n, Container{
		CPURequestMillis: 200, CPULimitMillis: 400, MemRequestBytes: 256 * mi, MemLimitBytes: 512 * mi,
		CPUMillis: series(n, func(i int) float64 {
			if i >= wake {
				return 300 * noise(r, 0.1)
			}
			return 5 * noise(r, 0.2)
		}),
		MemBytes: series(n, func(i int) float64 {
			if i >= wake {
				return 300 * mi * noise(r, 0.02)
			}
			return 100 * mi * noise(r, 0.02)
		}),
	}, wake)
}

func startup(r *rand.Rand) *Trace {
	n := 3600
	burst := 50 + r.IntN(20)
	return one(n, Container{
		CPURequestMillis: 200, CPULimitMillis: 400, MemRequestBytes: 512 * mi, MemLimitBytes: 512 * mi,
		CPUMillis: series(n, func(i int) float64 {
			if i < burst {
				return 800 * noise(r, 0.1)
			}
			return 100 * noise(r, 0.1)
		}),
		MemBytes: series(n, func(i int) float64 {
			if i < burst {
				return (100 + 300*float64(i)/float64(burst)) * mi
			}
			return 250 * mi * noise(r, 0.02)
		}),
	}, 0)
}

func noisy(r *rand.Rand) *Trace {
	n := 4 * 3600
	w := 0.0
	return one(n, Container{
		CPURequestMillis: 250, CPULimitMillis: 500, MemRequestBytes: 320 * mi, MemLimitBytes: 512 * mi,
		CPUMillis: series(n, func(int) float64 {
			w = 0.999*w + 0.001*(2*r.Float64()-1)
			return 200 * (1 + w) * noise(r, 0.3)
		}),
		MemBytes: series(n, func(int) float64 { return 256 * mi * noise(r, 0.05) }),
	})
}

func multi(r *rand.Rand) *Trace {
	n := 7200
	at := 3600 + r.IntN(120)
	c := func(name string, req, lim int64, mreq, mlim int64, cpu, mem func(i int) float64) Container {
		return Container{Name: name, CPURequestMillis: req, CPULimitMillis: lim, MemRequestBytes: mreq, MemLimitBytes: mlim,
			CPUMillis: series(n, cpu), MemBytes: series(n, mem)}
	}
	flat := func(v float64, f float64) func(int) float64 { return func(int) float64 { return v * noise(r, f) } }
	cs := []Container{
		c("app", 200, 400, 256*mi, 512*mi, func(i int) float64 {
			if i >= at {
				return 450 * noise(r, 0.1)
			}
			return 150 * noise(r, 0.1)
		}, flat(200*mi, 0.02)),
		c("proxy", 100, 200, 128*mi, 256*mi, flat(50, 0.2), flat(60*mi, 0.02)),
		c("logs", 50, 100, 64*mi, 128*mi, func(i int) float64 {
			if i%600 < 10 {
				return 90 * noise(r, 0.1)
			}
			return 20 * noise(r, 0.2)
		}, flat(40*mi, 0.02)),
		c("metrics", 50, 100, 64*mi, 128*mi, flat(10, 0.2), flat(30*mi, 0.02)),
		c("cache", 100, 200, 512*mi, 768*mi, flat(30, 0.2), func(i int) float64 { return (300 + 100*float64(i)/float64(n)) * mi }),
		c("worker", 200, 400, 256*mi, 512*mi, func(i int) float64 {
			if (i/1200)%2 == 1 {
				return 300 * noise(r, 0.1)
			}
			return 40 * noise(r, 0.1)
		}, flat(150*mi, 0.02)),
	}
	var steps []int
	for t := 1200; t < n; t += 2400 {
		steps = append(steps, t)
	}
	steps = append(steps, at)
	return &Trace{Seconds: n, Pods: []Pod{{Name: "pod-0", Containers: cs}}, Steps: steps}
}

func hotReplica(r *rand.Rand) *Trace {
	n := 7200
	hot := 1800 + r.IntN(120)
	t := &Trace{Seconds: n, Steps: []int{hot}}
	for p := range 3 {
		c := Container{
			Name: "app", CPURequestMillis: 150, CPULimitMillis: 300, MemRequestBytes: 256 * mi, MemLimitBytes: 512 * mi,
			CPUMillis: series(n, func(i int) float64 {
				if p == 2 && i >= hot {
					return 400 * noise(r, 0.1)
				}
				return 100 * noise(r, 0.1)
			}),
			MemBytes: series(n, func(int) float64 { return 180 * mi * noise(r, 0.02) }),
		}
		t.Pods = append(t.Pods, Pod{Name: fmt.Sprintf("pod-%d", p), Containers: []Container{c}})
	}
	return t
}
