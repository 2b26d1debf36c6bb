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
	// OOMKilled is true if the container was killed in this second.
	OOMKilled bool
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
	s.CPUUsageMillis, s.ThrottledFraction = CPU(cpuDemand, c.Actual.CPULimitMillis)
	s.StarvedMillis = math.Max(0, cpuDemand-s.CPUUsageMillis)
	ws := memAt(c.age)
	if c.restarts > 0 && !c.MemByAge && c.age < RestartWarmup {
		ws *= float64(c.age+1) / RestartWarmup
	}
	c.age++
	if c.Actual.MemLimitBytes > 0 && ws > float64(c.Actual.MemLimitBytes) {
		s.OOMKilled = true
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

// CPU returns the mean usage and throttled fraction of a second with demand
// millicores under a CFS limit of limit millicores (0: none): the demand
// spread over Periods periods as demand x (0.75 + 0.5 k/(Periods-1)).
func CPU(demand float64, limit int64) (usage, throttled float64) {
	if limit <= 0 || demand <= 0 {
		return demand, 0
	}
	l := float64(limit)
	n := 0
	for k := range Periods {
		d := demand * (0.75 + 0.5*float64(k)/float64(Periods-1))
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
