package node

import (
	"math"
	"math/rand/v2"
	"time"
)

// Resources are a container's requests and limits in millicores and
// bytes; 0 means not set.
type Resources struct {
	CPURequestMillis, CPULimitMillis int64
	MemRequestBytes, MemLimitBytes   int64
}

// Latencies are the kubelet's measured resize latencies on the lab
// (docs/benchmarks.md "Results", Kubernetes 1.35.4: T3-T2 of snug's three
// runs and KUBELET of VPA's three), in seconds.
var Latencies = []float64{0.92, 0.24, 0.37, 0.42, 0.92, 0.29}

// RestartWarmup is how long a restarted container takes to rebuild the
// working set its wall-clock demand asks for (linearly from 1/RestartWarmup
// of it): a new process does not start with the old one's memory.
const RestartWarmup = 10

// Periods is how many CFS periods a second has (cpu.cfs_period_us 100000).
const Periods = 10

// Back-off of restarts after a crash, as the kubelet's CrashLoopBackOff.
const (
	BackoffInitial = 10 * time.Second
	BackoffMax     = 300 * time.Second
	BackoffReset   = 10 * time.Minute
)

// Container is one container on the node.
type Container struct {
	// Actual are the resources the container runs with.
	Actual Resources
	// Restart says resizes of cpu or memory restart the container.
	CPURestart, MemRestart bool
	// MemByAge says the memory demand follows the container's age (the
	// caller's memAt reads it so); otherwise a restarted container rebuilds
	// its working set over RestartWarmup.
	MemByAge bool
	// Noise draws each second's CPU spread (DrawSpread); nil is the fluid
	// model. It draws every second, running or not, limited or not, so
	// that one seed gives every sizer the same bursts.
	Noise *rand.Rand

	pending    *Resources
	pendingAt  int // second the pending resize takes effect (from then on, retried)
	age        int // seconds since the container (re)started
	downUntil  int // the container is down before this second
	restarts   int
	lastKill   int
	backoff    time.Duration
	everKilled bool
}

// NewContainer starts a container with resources r.
func NewContainer(r Resources) *Container { return &Container{Actual: r, lastKill: -1} }

// Second is what happened to a container in one second.
type Second struct {
	// Running is false while the container waits to restart.
	Running bool
	// CPUUsageMillis is the mean CPU used; StarvedMillis the unmet demand
	// (demand - usage), in millicores over the second.
	CPUUsageMillis, StarvedMillis float64
	// ThrottledFraction is throttled CFS periods over periods.
	ThrottledFraction float64
	// MemBytes is the working set at the end of the second (0 when down).
	MemBytes float64
	// OOMKilled is true if the container was killed in this second;
	// KilledAtBytes is then the working set it wanted.
	OOMKilled     bool
	KilledAtBytes float64
	// Restarted is true if the container (re)started in this second: its
	// cgroup is new. AfterOOM says it restarted after an OOM kill (the pod
	// status then shows lastState.terminated.reason OOMKilled).
	Restarted, AfterOOM bool
	// Resized is true if a resize took effect in this second.
	Resized bool
	// Refused is true if a pending resize was refused in this second (a
	// memory limit below the working set).
	Refused bool
	// Age is the container's age in seconds at the start of the second.
	Age int
}

// Resize asks the kubelet for new resources at second now; they take effect
// after latency (whole seconds, at least 1). It replaces a pending resize.
func (c *Container) Resize(now int, r Resources, latency time.Duration) {
	d := int(math.Ceil(latency.Seconds()))
	d = max(d, 1)
	c.pending, c.pendingAt = &r, now+d
}

// Pending reports whether a resize waits.
func (c *Container) Pending() bool { return c.pending != nil }

// Restarts returns how many times the container restarted.
func (c *Container) Restarts() int { return c.restarts }

// DrawLatency draws one kubelet latency from Latencies.
func DrawLatency(r *rand.Rand) time.Duration {
	return time.Duration(Latencies[r.IntN(len(Latencies))] * float64(time.Second))
}

// Step runs second now with the demand wanted; memAt returns the working
// set wanted, given the container's age (the caller decides whether it
// follows the age or the clock).
func (c *Container) Step(now int, cpuDemand float64, memAt func(age int) float64) Second {
	var s Second
	var z *Spread
	if c.Noise != nil {
		z = DrawSpread(c.Noise)
	}
	if c.pending != nil && now >= c.pendingAt {
		ws := 0.0
		if now >= c.downUntil {
			ws = memAt(c.age)
		}
		p := *c.pending
		if p.MemLimitBytes > 0 && ws > float64(p.MemLimitBytes) && p.MemLimitBytes < c.Actual.MemLimitBytes {
			s.Refused = true // kept pending, retried next second
		} else {
			restart := c.CPURestart && (p.CPURequestMillis != c.Actual.CPURequestMillis || p.CPULimitMillis != c.Actual.CPULimitMillis) ||
				c.MemRestart && (p.MemRequestBytes != c.Actual.MemRequestBytes || p.MemLimitBytes != c.Actual.MemLimitBytes)
			c.Actual, c.pending, s.Resized = p, nil, true
			if restart {
				c.age, s.Restarted = 0, true
				c.restarts++
			}
		}
	}
	if now < c.downUntil {
		s.StarvedMillis = cpuDemand
		return s
	}
	if now == c.downUntil && c.everKilled && c.age == 0 {
		s.Restarted, s.AfterOOM = true, true
	}
	s.Running, s.Age = true, c.age
	s.CPUUsageMillis, s.ThrottledFraction = CPU(cpuDemand, c.Actual.CPULimitMillis, z)
	s.StarvedMillis = math.Max(0, cpuDemand-s.CPUUsageMillis)
	ws := memAt(c.age)
	if c.restarts > 0 && !c.MemByAge && c.age < RestartWarmup {
		ws *= float64(c.age+1) / RestartWarmup
	}
	c.age++
	if c.Actual.MemLimitBytes > 0 && ws > float64(c.Actual.MemLimitBytes) {
		s.OOMKilled, s.KilledAtBytes = true, ws
		c.kill(now)
		return s
	}
	s.MemBytes = ws
	return s
}

// kill restarts the container after its back-off.
func (c *Container) kill(now int) {
	if c.lastKill >= 0 && time.Duration(now-c.lastKill)*time.Second >= BackoffReset+c.backoff {
		c.backoff = 0
	}
	delay := c.backoff
	if c.backoff == 0 {
		c.backoff = BackoffInitial
	} else {
		c.backoff = min(2*c.backoff, BackoffMax)
	}
	c.lastKill, c.everKilled = now, true
	c.restarts++
	c.age = 0
	c.downUntil = now + 1 + int(delay.Seconds())
}

// PeriodSpread is the standard deviation of one CFS period's demand,
// relative to the second's mean: work arrives in bursts, so a period can
// want more than the limit while the second's mean is under it.
// BurstShape is the shape of the gamma variate that scales a second's
// spread: some seconds are calm and some bursty, so throttled periods
// cluster in fewer seconds than independent periods would. Both are
// fitted to the lab's calibration runs (docs/quality.md, "The node
// model"): snug-load at 0.8 of its cpu limit was throttled in 2.6-3.3 % of
// its periods and 23-29 % of its seconds, at 0.9 in 19-21 % and 70-80 %;
// the model gives 3.4 % and 25 % at 0.8, 15.6 % and 74 % at 0.9
// (TestSpreadFitsTheLab).
const (
	PeriodSpread = 0.14
	BurstShape   = 4
)

// Spread is one second's draw of the spread, one value per CFS period: the
// second's burstiness times Periods standard normal values less their
// mean, so that a second's periods together want the second's demand.
type Spread [Periods]float64

// DrawSpread draws a second's spread from r: BurstShape exponential and
// Periods normal variates.
func DrawSpread(r *rand.Rand) *Spread {
	g := 0.0
	for range BurstShape {
		g += r.ExpFloat64()
	}
	// A gamma variate of shape k and scale 1/sqrt(k(k+1)): its mean square
	// is 1, so PeriodSpread stays the periods' standard deviation overall.
	burst := g / math.Sqrt(BurstShape*(BurstShape+1))
	var z Spread
	mean := 0.0
	for k := range z {
		z[k] = r.NormFloat64()
		mean += z[k] / Periods
	}
	for k := range z {
		z[k] = burst * (z[k] - mean)
	}
	return &z
}

// CPU returns the mean usage and throttled fraction of a second with demand
// millicores under a CFS limit of limit millicores (0: none): period k
// wants demand x max(0, 1 + PeriodSpread x z[k]), rescaled so that the
// periods want the second's demand (a period cannot want less than
// nothing); a period that wants more than the limit is throttled and runs
// at the limit. A nil z is the fluid model: every period wants the mean.
func CPU(demand float64, limit int64, z *Spread) (usage, throttled float64) {
	if limit <= 0 || demand <= 0 {
		return demand, 0
	}
	var w [Periods]float64
	sum := 0.0
	for k := range w {
		w[k] = 1
		if z != nil {
			w[k] = max(0, 1+PeriodSpread*z[k])
		}
		sum += w[k]
	}
	l := float64(limit)
	n := 0
	for k := range w {
		d := demand * w[k] * Periods / sum
		if d > l {
			n++
			d = l
		}
		usage += d
	}
	return usage / Periods, float64(n) / Periods
}

// PendingResources returns the resources of the resize that waits, if any.
func (c *Container) PendingResources() (Resources, bool) {
	if c.pending == nil {
		return Resources{}, false
	}
	return *c.pending, true
}
