package recommend

import (
	"math"
	"time"

	"github.com/snug-dev/snug/internal/cgroup"
	"github.com/snug-dev/snug/internal/resize"
)

// memorySlopeTau is the time constant of the working-set growth rate used by
// the creep forecast: long enough to ignore one allocation burst, short
// enough to see a leak within seconds.
const memorySlopeTau = 10 * time.Second

// pinnedSeverity is the severity given to a sample pinned at the CPU limit
// with few throttled periods: demand is at the limit, likely a little above.
const pinnedSeverity = 0.5

// censoredUsageFraction: a throttled sample that used this share of its
// limit or more is censored whatever its throttled fraction: the quota ran
// out and work still waited. On the lab a backlogged 400m load under a 100m
// limit read 100-104m with 50-100 % of its periods throttled (a period in
// which the load's own cycle ended under the quota counts as unthrottled);
// bursts near a limit use 75-95 % of it.
const censoredUsageFraction = 0.98

// pressureHeadroomFraction: memory pressure grows memory only when the
// working set is within this share of the limit (or the limit was hit);
// otherwise the stalls come from the node, and a larger limit would not help.
const pressureHeadroomFraction = 0.25

// resource is the state kept for one of cpu and memory.
type resource struct {
	memory bool
	hist   *Histogram
	seed   *Histogram // the workload's histogram this container started from; may be nil
	// observedSeconds is how much own history hist holds (not decayed);
	// seedSeconds how much the seed stood for.
	observedSeconds, seedSeconds float64
	samples                      int

	// lastReq and lastLim detect a change of the current resources.
	lastReq, lastLim int64
	seen             bool

	// Stabilization: since when the target has been below the band, and
	// the largest target seen since.
	shrinkSince time.Time
	shrinkMax   float64
	// growSince is the same for a CPU grow without starvation: since when
	// the target has been above the band. sized says the baseline has once
	// found the request in the band, or below it: a grow before that sizes
	// a container snug has just met (or a replica a checkpoint seeded),
	// and does not wait.
	growSince time.Time
	sized     bool
	// The regrow floor (CPU only). downAt is when the request first went
	// down after its last increase (lastDown: its last change was down),
	// the start of a trough; sinceDown the highest regrowLevel since. At a
	// regrow (the request up again) trough is how long it stayed down, and
	// regrowFloor starts at sinceDown and keeps rising for a ShrinkWindow
	// after regrownAt (the level the load came back to), then holds.
	regrownAt, downAt      time.Time
	trough                 time.Duration
	sinceDown, regrowFloor float64
	lastDown               bool

	// floor keeps the target at the last grow for a ShrinkWindow.
	floor      int64
	floorUntil time.Time

	// A resize of this resource that was sent and is not done.
	inFlight               bool
	sentAt                 time.Time
	sentFromReq, sentToReq int64

	// A cap learnt from a Deferred or Infeasible outcome.
	capValue   int64
	capUntil   time.Time
	capOutcome string
}

// Container is the recommender state of one container of one pod. It is
// fed one sample a second by Observe and answers with a Decision; its
// Recommendation is the VPA-style estimate. Get one from Pod.AddContainer.
// A Container is not safe for concurrent use, nor concurrently with its Pod.
type Container struct {
	name   string
	pod    *Pod
	cfg    *Config
	bounds Bounds

	cpu, mem resource
	cur      Resources

	// CPU starvation: the current run of starving samples.
	runSeconds, runSevSeconds, runMaxSev float64
	runPinnedOnly, runCensored           bool
	// Light throttling: EWMA of the throttled fraction and how long it ran.
	throttleEWMA, throttleEWMASeconds float64
	// The CPU request's view: demand averaged over CPURequestResolution
	// (cpuMeans), and the current average's sum and length.
	cpuMeans        *Histogram
	cpuSum, cpuSecs float64
	// cpuDemand is the latest sample's CPU demand and cpuLastMean the
	// latest completed average: what the load asks for now, as opposed to
	// what its history asked for (pastLoad, shrinkUnderLoad).
	cpuDemand, cpuLastMean float64

	// recent and recentUsage hold the largest CPU demand and usage of the
	// last ShrinkWindow. Demand is usage inflated by throttling; usage is
	// what was really used, never more than the demand.
	recent, recentUsage windowMax

	// Memory: working-set growth rate and the peak of the last window.
	lastWS     float64
	lastWSTime time.Time
	slope      float64 // bytes per second
	peak       windowMax
	// dayPeak is the peak of the last RegrowWindow, which a memory limit
	// equal to its request is not shrunk under (WhyTiedLimit).
	dayPeak windowMax
	// peakBefore is the peak of the window before the latest sample: a rise
	// that stays under it rebuilds a working set the container already had
	// (a restarted process, a heap refilling after a collection), not a
	// trend.
	peakBefore float64
	pendingOOM bool
	// firstMemLimit is the memory limit of the first sample: the limit the
	// container had when this recommender started following it.
	firstMemLimit int64
	// rise counts the consecutive samples whose working set rose, since the
	// last one that did not and since the memory resources last changed;
	// riseMinRate is the smallest of those rises, in bytes per second. A
	// creep needs MemoryCreepSamples of them: one allocation is not a trend.
	rise        int
	riseMinRate float64

	last Decision
}

// Name returns the container's name.
func (c *Container) Name() string { return c.name }

// Bounds returns the container's current policy bounds.
func (c *Container) Bounds() Bounds { return c.bounds }

// SetBounds replaces the policy bounds, e.g. after the policy changed.
func (c *Container) SetBounds(b Bounds) error {
	if err := b.Validate(); err != nil {
		return err
	}
	c.bounds = b
	return nil
}

// MemoryPeakBytes returns the largest working set of the last
// Config.MemoryPeakWindow (an OOM kill counts as its bumped size), for
// resize.Usage.MemoryPeakBytes: the planner then never lowers memory below
// what the recommender remembers.
func (c *Container) MemoryPeakBytes(now time.Time) int64 { return int64(c.peak.max(now)) }

// MemoryLimitFloorBytes returns the memory limit of the container's first
// sample (0 if it had none), for resize.Usage.MemoryLimitFloorBytes: memory
// give-back then lowers a Burstable container's request, what the node
// reserves, but not its limit below the one it had when this recommender
// started following it (for a pod followed since its start, the limit as
// written), so a container that wakes to a working set it never showed
// before is not OOM-killed under a limit snug lowered.
func (c *Container) MemoryLimitFloorBytes() int64 { return c.firstMemLimit }

// OOMKilled tells the container that it was OOM-killed and restarted, as the
// pod status says (lastState.terminated.reason OOMKilled); the cgroup's own
// counter is lost with the old cgroup. The next Observe grows memory.
func (c *Container) OOMKilled() { c.pendingOOM = true }

// Observe feeds one sample: the Signals of the last interval and the
// container's current requests and limits, and returns what to do now.
// now is the sample's time. Observe does not allocate.
//
// cur must be the actual resources (status.containerStatuses[].resources),
// not the spec: a Deferred or Infeasible spec has not reached the cgroup, and
// a change of cur is how the recommender sees a resize land.
func (c *Container) Observe(now time.Time, sig cgroup.Signals, cur Resources) Decision {
	c.cur = cur
	if !c.mem.seen {
		c.firstMemLimit = cur.MemLimitBytes
	}
	cpuChanged := c.cpu.noteCurrent(now, cur.CPURequestMillis, cur.CPULimitMillis)
	memChanged := c.mem.noteCurrent(now, cur.MemRequestBytes, cur.MemLimitBytes)
	c.expireInFlight(now)

	// Learn.
	if sig.HasRate {
		// Throttled usage understates demand: the work that waited is not
		// in it. Record the demand the fast path would size for, so that the
		// percentiles remember starvation and never shrink back into it.
		demand := sig.CPUUsageMillicores * (1 + c.cfg.CPUGrowthGain*sig.CPUThrottledFraction)
		c.cpu.hist.Add(demand, 1, now)
		c.cpuSum += demand * sig.IntervalSeconds
		c.cpuSecs += sig.IntervalSeconds
		if c.cpuSecs >= c.cpuResolution()*(1-1e-9) {
			c.cpuLastMean = c.cpuSum / c.cpuSecs
			c.cpuMeans.Add(c.cpuLastMean, c.cpuSecs, now)
			c.cpuSum, c.cpuSecs = 0, 0
		}
		c.cpuDemand = demand
		c.recent.add(now, demand)
		c.recentUsage.add(now, sig.CPUUsageMillicores)
		c.cpu.observedSeconds += sig.IntervalSeconds
		c.cpu.samples++
	}
	ws := float64(sig.MemoryWorkingSetBytes)
	c.mem.hist.Add(ws, 1, now)
	if sig.HasRate {
		c.mem.observedSeconds += sig.IntervalSeconds
	} else {
		c.mem.observedSeconds++ // a level sample; assume the usual second
	}
	c.mem.samples++
	c.peakBefore = c.peak.max(now)
	c.addPeak(now, ws)
	if !c.lastWSTime.IsZero() && now.After(c.lastWSTime) {
		dt := now.Sub(c.lastWSTime).Seconds()
		a := 1 - math.Exp(-dt/memorySlopeTau.Seconds())
		rate := (ws - c.lastWS) / dt
		c.slope += a * (rate - c.slope)
		if rate > 0 {
			if c.rise == 0 || rate < c.riseMinRate {
				c.riseMinRate = rate
			}
			c.rise++
		} else {
			c.rise = 0
		}
	}
	c.lastWS, c.lastWSTime = ws, now
	if memChanged {
		// Samples from before a resize are no evidence about the new size:
		// a rise must be seen again, after it.
		c.rise, c.riseMinRate = 0, 0
	}

	cpuCand := c.cpuFast(sig, cpuChanged)
	if cpuCand.Action == Hold && cpuCand.Reason.Why != WhyLimitFixed && cpuCand.Reason.Why != WhyNoRequest {
		cpuCand = c.baseline(now, &c.cpu, cur.CPURequestMillis, cur.CPULimitMillis)
	}
	memCand := c.memoryFast(now, sig, memChanged)
	if memCand.Action == Hold && memCand.Reason.Why != WhyLimitFixed && memCand.Reason.Why != WhyNoRequest {
		memCand = c.baseline(now, &c.mem, cur.MemRequestBytes, cur.MemLimitBytes)
	}
	c.last = Decision{
		CPU:    c.gate(now, &c.cpu, cpuCand, cur.CPURequestMillis, cur.CPULimitMillis),
		Memory: c.gate(now, &c.mem, memCand, cur.MemRequestBytes, cur.MemLimitBytes),
	}
	return c.last
}

// noteCurrent records the current request and limit and reports whether
// they changed since the last sample: a resize landed (or someone else
// resized). The sample that shows the change straddles it, so its rates
// describe neither the old nor the new size.
func (r *resource) noteCurrent(now time.Time, req, lim int64) bool {
	changed := r.seen && (req != r.lastReq || lim != r.lastLim)
	if r.seen && req != r.lastReq {
		down := req < r.lastReq
		if !down && r.lastDown {
			r.regrownAt, r.trough, r.regrowFloor = now, now.Sub(r.downAt), r.sinceDown
		}
		if down && !r.lastDown {
			r.downAt, r.sinceDown = now, 0
		}
		if down {
			// A grow's wait restarts when the request went down. A grow
			// that fell short (capped to the node's room) has waited for
			// the rest already.
			r.growSince = time.Time{}
		}
		r.lastDown = down
	}
	r.lastReq, r.lastLim, r.seen = req, lim, true
	if changed && r.inFlight && req != r.sentFromReq {
		r.inFlight = false
	}
	return changed
}

func (c *Container) resetRun() {
	c.runSeconds, c.runSevSeconds, c.runMaxSev = 0, 0, 0
	c.runPinnedOnly, c.runCensored = true, false
}

// cpuFast is the CPU fast path: sustained throttling or usage pinned at the
// limit grows the limit by a factor, and light but persistent throttling by
// a smaller one. It returns a Hold change when neither fires.
func (c *Container) cpuFast(sig cgroup.Signals, changed bool) Change {
	cfg := c.cfg
	limit := float64(sig.CPULimitMillicores)
	if limit <= 0 && !sig.CPUUnlimited {
		limit = float64(c.cur.CPULimitMillis)
	}
	if changed {
		c.resetRun()
		c.throttleEWMA, c.throttleEWMASeconds = 0, 0
		return Change{}
	}
	if !sig.HasRate || limit <= 0 || sig.IntervalSeconds <= 0 {
		if !sig.HasRate {
			c.resetRun()
		}
		return Change{}
	}
	dt := sig.IntervalSeconds
	f := sig.CPUThrottledFraction
	u := sig.CPUUsageMillicores
	a := 1 - math.Exp(-dt/cfg.CPULightThrottleWindow.Seconds())
	c.throttleEWMA += a * (f - c.throttleEWMA)
	c.throttleEWMASeconds += dt

	throttled := f >= cfg.CPUThrottledFraction
	pinned := u >= cfg.CPUPinnedFraction*limit
	if !throttled && !pinned {
		c.resetRun()
	} else {
		if c.runSeconds == 0 {
			c.runPinnedOnly = true
		}
		sev := f
		if !throttled {
			sev = max(f, pinnedSeverity)
		}
		c.runSeconds += dt
		c.runSevSeconds += sev * dt
		c.runMaxSev = max(c.runMaxSev, sev)
		c.runPinnedOnly = c.runPinnedOnly && !throttled
		// Censored: most periods throttled, or throttled with the whole
		// quota used - the limit ran out and work still waited.
		c.runCensored = c.runCensored || f >= cfg.CPUCensoredFraction || (throttled && u >= censoredUsageFraction*limit)
		if c.runSevSeconds >= cfg.CPUSustain.Seconds()*(1-1e-9) {
			// The first sample of a step is partial, so the run's mean
			// understates the throttling now: size by the worst sample.
			k := max(1+cfg.CPUGrowthGain*c.runMaxSev, 1+cfg.GrowBand)
			if c.runCensored {
				k = max(k, cfg.CPUCensoredGrowth)
			}
			why := WhyThrottled
			if c.runPinnedOnly {
				why = WhyPinned
			}
			return c.growLimit(&c.cpu, limit*k, true, Reason{
				Why: why, Value: int64(math.Round(u)), Limit: int64(math.Round(limit)),
				Fraction: c.runMaxSev, Duration: seconds(c.runSeconds),
			})
		}
		return Change{}
	}
	if c.throttleEWMASeconds >= cfg.CPULightThrottleWindow.Seconds() && c.throttleEWMA >= cfg.CPULightThrottledFraction {
		k := max(1+cfg.CPUGrowthGain*c.throttleEWMA, 1+cfg.GrowBand)
		return c.growLimit(&c.cpu, limit*k, false, Reason{
			Why: WhyThrottledLong, Limit: int64(math.Round(limit)),
			Fraction: c.throttleEWMA, Duration: cfg.CPULightThrottleWindow,
		})
	}
	return Change{}
}

// memoryFast is the memory fast path: an OOM kill, a working set near the
// limit, one rising steadily towards it (MemoryForecast), or PSI memory
// stalls near it grow memory at once. changed is true for the sample that
// first shows new memory resources: it straddles the resize, so only an OOM
// kill counts in it. A grow is evidence-based: it is sized from the peak
// working set plus headroom, by a fixed factor only where the working set
// cannot show the demand (the limit was hit, stalls), and by the forecast
// only for a sustained rise; and another grow needs new samples that show
// the same at the new size.
func (c *Container) memoryFast(now time.Time, sig cgroup.Signals, changed bool) Change {
	cfg := c.cfg
	ws := float64(sig.MemoryWorkingSetBytes)
	limit := float64(c.cur.MemLimitBytes)
	if sig.MemoryLimited {
		limit = ws + float64(sig.MemoryHeadroomBytes)
	}

	if sig.OOMKillsDelta > 0 || c.pendingOOM {
		c.pendingOOM = false
		r := Reason{Why: WhyOOMKill, Memory: true, Value: int64(ws), Limit: int64(limit)}
		if limit <= 0 {
			// No limit: the kill came from the node. Raise the request so
			// the container is a worse eviction candidate next time.
			req := float64(c.cur.MemRequestBytes)
			c.addPeak(now, ws)
			return c.growRequest(&c.mem, max(req*cfg.MemoryGrowthFactor, req+float64(cfg.MemoryOOMMinBumpBytes)), r)
		}
		// The working set wanted more than the limit just before the kill,
		// whatever the new cgroup says now. As VPA does, remember the bumped
		// size as a peak, so the target stays there for the peak window.
		bumped := max(limit*cfg.MemoryGrowthFactor, limit+float64(cfg.MemoryOOMMinBumpBytes))
		c.addPeak(now, bumped/(1+cfg.MemoryHeadroom))
		// No forecast here: the slope into a kill is one burst, not a trend.
		return c.growLimit(&c.mem, max(bumped, ws*(1+cfg.MemoryHeadroom)), true, r)
	}
	if limit <= 0 || changed {
		return Change{}
	}
	headroom := limit - ws
	frac := headroom / limit
	// The creep rate: only a sustained rise, and at the pace of its slowest
	// step, so that one allocation burst inside the run is not a trend.
	rate := 0.0
	if c.rise >= cfg.MemoryCreepSamples && ws > c.peakBefore {
		rate = min(max(c.slope, 0), c.riseMinRate)
	}
	stalled := sig.PSIPresent && sig.MemoryPressure.SomeStalledFraction >= cfg.MemoryPressureFraction
	hit := sig.MemoryLimitHitsDelta > 0
	var why Reason
	switch {
	case frac < cfg.MemoryNearLimitFraction:
		why = Reason{Why: WhyMemoryNearLimit, Memory: true, Value: int64(ws), Limit: int64(limit), Fraction: max(frac, 0)}
	case rate > 0 && headroom/rate < cfg.MemoryForecast.Seconds():
		why = Reason{Why: WhyMemoryCreep, Memory: true, Value: int64(ws), Limit: int64(limit), Duration: seconds(headroom / rate)}
	case stalled && (frac < pressureHeadroomFraction || hit):
		why = Reason{Why: WhyMemoryPressure, Memory: true, Value: int64(ws), Limit: int64(limit), Fraction: sig.MemoryPressure.SomeStalledFraction}
	default:
		return Change{}
	}
	// Peak plus headroom, and a real step. Where the limit was hit or the
	// container stalls, the working set is held down by the limit and
	// understates the demand; a sustained rise will want more: both step by
	// the growth factor, and a rise gets MemoryForecast more of it. Never
	// more than two factors at once.
	want := max(c.peak.max(now), ws) * (1 + cfg.MemoryHeadroom)
	want = max(want, limit*(1+cfg.GrowBand))
	if hit || stalled || rate > 0 {
		want = max(want, limit*cfg.MemoryGrowthFactor)
	}
	if rate > 0 {
		want = max(want, (ws+rate*cfg.MemoryForecast.Seconds())*(1+cfg.MemoryHeadroom))
	}
	want = min(want, limit*cfg.MemoryGrowthFactor*cfg.MemoryGrowthFactor)
	return c.growLimit(&c.mem, want, true, why)
}

// growLimit turns a wanted limit into a grow of the request that, with the
// limit following at its ratio, gives that limit.
func (c *Container) growLimit(r *resource, newLimit float64, fast bool, why Reason) Change {
	req, lim := r.lastReq, r.lastLim
	if req <= 0 {
		return Change{Reason: Reason{Why: WhyNoRequest, Memory: r.memory}}
	}
	if c.bounds.RequestsOnly && lim > 0 {
		return Change{Request: req, Limit: lim, Reason: Reason{Why: WhyLimitFixed, Memory: r.memory, Limit: lim}}
	}
	newReq := newLimit
	if lim > 0 {
		newReq = newLimit * float64(req) / float64(lim)
	}
	ch := c.growRequest(r, newReq, why)
	ch.Fast = fast
	return ch
}

func (c *Container) growRequest(r *resource, newReq float64, why Reason) Change {
	req := r.lastReq
	if req <= 0 {
		return Change{Reason: Reason{Why: WhyNoRequest, Memory: r.memory}}
	}
	n := ceil(newReq)
	n = max(n, req+c.minStep(r))
	why.Request = req
	return Change{Action: Grow, Request: n, Fast: true, Reason: why}
}

func (c *Container) minStep(r *resource) int64 {
	if r.memory {
		return c.cfg.MinMemoryStepBytes
	}
	return c.cfg.MinCPUStepMillis
}

// target is the uncapped baseline target of a resource at now:
// the percentile of its own and its seed histogram plus the margin, for
// memory at least the window's peak working set plus headroom, and at least
// the floor of a recent fast-path grow.
func (c *Container) target(now time.Time, r *resource, p float64) float64 {
	t := c.usageTarget(now, r, p)
	if now.Before(r.floorUntil) {
		t = max(t, float64(r.floor))
	}
	return t
}

// usageTarget is target without the floor of the last grow: what usage
// alone asks for.
func (c *Container) usageTarget(now time.Time, r *resource, p float64) float64 {
	margin := c.cfg.CPUMargin
	if r.memory {
		margin = c.cfg.MemoryMargin
	}
	t := c.percentile(r, p) * (1 + margin)
	if r.memory {
		t = max(t, c.peak.max(now)*(1+c.cfg.MemoryHeadroom))
	} else {
		t = c.cpuRequestTarget(t, p)
	}
	return t
}

// regrowHolds reports that CPU shrinks stop at the regrow floor
// (WhyRegrown): the request grew back within RegrowWindow, after a trough
// shorter than MinTrough.
func (c *Container) regrowHolds(now time.Time, r *resource) bool {
	return !r.memory && !r.regrownAt.IsZero() && now.Sub(r.regrownAt) < c.cfg.RegrowWindow && r.trough < c.cfg.MinTrough
}

// regrowLevel is the level of CPU load the regrow floor remembers. With a
// CPU limit: what the busiest second of the window really used, plus the
// margin, at the limit:request ratio (usage, not demand: the demand of a
// throttled second is inflated, and so is the usage target for a few
// half-lives after it, and a fast-path grow's overshoot must not become a
// floor). Without one, nothing throttles, and it is the usage target.
func (c *Container) regrowLevel(now time.Time, r *resource, req, lim int64) float64 {
	level := ceil(c.usageTarget(now, r, c.cfg.TargetPercentile))
	if req > 0 && lim > 0 && !c.bounds.RequestsOnly {
		level = ceil(c.recentUsage.max(now) * (1 + c.cfg.CPUMargin) * float64(req) / float64(lim))
	}
	return float64(c.clamp(now, r, level))
}

// shrinkFloor is the lowest CPU request a shrink may go to: its limit, at
// the container's limit:request ratio, covers the busiest second of the
// last stabilization window plus the margin. That second is part of the
// evidence the shrink rests on; a limit under it would starve when such a
// second came back, and the fast path would grow it again. 0 where the
// container has no CPU limit (nothing to starve at) or the policy sets
// requests alone.
func (c *Container) shrinkFloor(now time.Time, r *resource, req, lim int64) int64 {
	if r.memory || req <= 0 || lim <= 0 || c.bounds.RequestsOnly {
		return 0
	}
	need := c.recent.max(now) * (1 + c.cfg.CPUMargin)
	return c.clamp(now, r, ceil(need*float64(req)/float64(lim)))
}

// cpuRequestTarget sizes the CPU request from the percentile of demand
// averaged over CPURequestResolution, as VPA's recommender sees it through
// metrics-server: a request reserves capacity over time, and the p90 of
// one-second samples of a noisy load reserves for its noise. The limit that
// the request brings at the container's limit:request ratio must still
// cover perSecond, the percentile of one-second demand plus margin (CFS
// throttles within 100 ms): the request is at least perSecond / ratio, so
// with request == limit nothing changes. Until the container has
// WarmupSamples of its own, perSecond alone; a seeded container's means
// hold only its own history while perSecond holds the workload's too, so
// it waits until its own samples dominate (seededMeansHalfLives).
func (c *Container) cpuRequestTarget(perSecond, p float64) float64 {
	if c.cpu.samples < c.cfg.WarmupSamples || c.cpuMeans.Empty() {
		return perSecond
	}
	if c.cpu.seed != nil && !c.cpu.seed.Empty() && c.cpu.observedSeconds < seededMeansHalfLives*c.cfg.CPUHalfLife.Seconds() {
		return perSecond
	}
	means := c.cpuMeans.Percentile(p) * (1 + c.cfg.CPUMargin)
	req, lim := c.cpu.lastReq, c.cpu.lastLim
	if req <= 0 || lim <= 0 || c.bounds.RequestsOnly {
		// No limit to throttle at, or one that stays put.
		return means
	}
	return max(means, perSecond*float64(req)/float64(lim))
}

// cpuResolution is CPURequestResolution in seconds, but at most a
// twentieth of CPUHalfLife: averages long against the histogram's memory
// would delay what the half-life promises, so a short half-life (the e2e
// suite's 10s) keeps one-second samples.
func (c *Container) cpuResolution() float64 {
	return min(c.cfg.CPURequestResolution.Seconds(), c.cfg.CPUHalfLife.Seconds()/cpuResolutionPerHalfLife)
}

// cpuResolutionPerHalfLife: see cpuResolution.
const cpuResolutionPerHalfLife = 20

// seededMeansHalfLives is how many half-lives of its own history a seeded
// container needs before its CPU request follows its means: after four,
// its own samples hold 94% of the weight.
const seededMeansHalfLives = 4

func (c *Container) percentile(r *resource, p float64) float64 {
	if r.seed == nil || r.seed.Empty() {
		return r.hist.Percentile(p)
	}
	return percentile(r.hist, r.seed, relativeScale(r.hist, r.seed), p)
}

func (c *Container) warmingUp(r *resource) bool {
	return r.samples < c.cfg.WarmupSamples && (r.seed == nil || r.seed.Empty())
}

// baseline is the slow path: grow to the target when it is above the band,
// shrink to the largest target of the stabilization window once the target
// has stayed below the band for the whole window.
func (c *Container) baseline(now time.Time, r *resource, req, lim int64) Change {
	if req <= 0 {
		return Change{Reason: Reason{Why: WhyNoRequest, Memory: r.memory}}
	}
	hold := Change{Request: req, Limit: lim}
	if c.warmingUp(r) {
		r.shrinkSince = time.Time{}
		hold.Reason = Reason{Why: WhyWarmingUp, Memory: r.memory, Duration: time.Duration(c.cfg.WarmupSamples-r.samples) * time.Second}
		return hold
	}
	t := float64(c.clamp(now, r, ceil(c.target(now, r, c.cfg.TargetPercentile))))
	if !r.memory {
		level := c.regrowLevel(now, r, req, lim)
		r.sinceDown = max(r.sinceDown, level)
		if !r.regrownAt.IsZero() && now.Sub(r.regrownAt) < c.cfg.ShrinkWindow {
			r.regrowFloor = max(r.regrowFloor, level)
		}
	}
	fr := float64(req)
	step := float64(c.minStep(r))
	switch {
	case t > fr*(1+c.cfg.GrowBand) && t-fr >= step:
		r.shrinkSince = time.Time{}
		if c.pastLoad(r, fr) {
			r.growSince = time.Time{} // the load that raised the target is over
			hold.Reason = Reason{Why: WhyLoadGone, Value: ceil(t), Request: req}
			return hold
		}
		if r.sized && !r.memory && !c.starving(r) {
			// No starvation (the fast path answers that at once, and a
			// limit with room leaves the container its usage): the grow
			// only reserves, for load that may pass. It waits until the
			// new level has been seen for a CPU half-life, when the decayed
			// histogram weighs it as much as all the history before it.
			if r.growSince.IsZero() {
				r.growSince = now
			}
			if elapsed := now.Sub(r.growSince); elapsed < c.cfg.CPUHalfLife {
				hold.Reason = Reason{Why: WhyGrowWaiting, Value: ceil(t), Request: req, Duration: c.cfg.CPUHalfLife - elapsed}
				return hold
			}
		}
		return Change{Action: Grow, Request: ceil(t), Reason: Reason{Why: WhyAboveRequest, Memory: r.memory, Value: ceil(t), Request: req}}
	case t < fr*(1-c.cfg.ShrinkBand) && fr-t >= step && !c.starving(r):
		r.growSince, r.sized = time.Time{}, true
		if r.shrinkSince.IsZero() {
			r.shrinkSince, r.shrinkMax = now, t
		}
		r.shrinkMax = max(r.shrinkMax, t)
		elapsed := now.Sub(r.shrinkSince)
		if elapsed < c.cfg.ShrinkWindow {
			hold.Reason = Reason{Why: WhyStabilizing, Memory: r.memory, Value: ceil(t), Request: req, Duration: c.cfg.ShrinkWindow - elapsed}
			return hold
		}
		maxFrac := c.cfg.MaxCPUShrinkFraction
		if r.memory {
			maxFrac = c.cfg.MaxMemoryShrinkFraction
		}
		n := ceil(max(r.shrinkMax, fr*(1-maxFrac)))
		if n >= req {
			hold.Reason = Reason{Why: WhyInBand, Memory: r.memory, Value: ceil(t), Request: req}
			return hold
		}
		if c.shrinkUnderLoad(r, n, req, lim) {
			hold.Reason = Reason{Why: WhyLoadNow, Value: n, Request: req, Limit: ceil(c.cpuDemand)}
			return hold
		}
		if g := c.clamp(now, r, ceil(r.regrowFloor)); n < g && c.regrowHolds(now, r) {
			// The request grew back within MinTrough of its last shrink,
			// to load at g: the load comes back there after its troughs,
			// and a shrink under it would cost a shrink and a grow each
			// time, for slack given back only until the next peak.
			n = g
			if float64(n) > fr*(1-c.cfg.ShrinkBand) {
				hold.Reason = Reason{Why: WhyRegrown, Value: n, Request: req, Duration: c.cfg.MinTrough}
				return hold
			}
		}
		if f := c.shrinkFloor(now, r, req, lim); f > 0 && n < f {
			// Not below the window's busiest second (shrinkFloor). A
			// shrink that leaves less than the band is not worth a resize.
			n = f
			if float64(n) > fr*(1-c.cfg.ShrinkBand) {
				hold.Reason = Reason{Why: WhyRecentPeak, Value: n, Request: req}
				return hold
			}
		}
		if r.memory && c.guaranteed(req, lim) && !c.bounds.RequestsOnly {
			// The limit is the request (a Guaranteed pod's memory): the
			// shrink lowers the limit too, and the pod keeps no limit
			// floor (the planner keeps Burstable limits at their first
			// value, not Guaranteed ones, which must equal the request).
			// A level the container reached within the day, the longest
			// cycle most workloads repeat (RegrowWindow), would come back
			// as an OOM kill, not a slowdown: not below its peak plus
			// headroom.
			f := c.clamp(now, r, ceil(c.dayPeak.max(now)*(1+c.cfg.MemoryHeadroom)))
			if r.observedSeconds < c.cfg.RegrowWindow.Seconds() {
				// Less than a day seen: the day's peak is not known yet.
				f = req
			}
			if n < f {
				n = f
				if float64(n) > fr*(1-c.cfg.ShrinkBand) {
					hold.Reason = Reason{Why: WhyTiedLimit, Memory: true, Value: n, Request: req}
					return hold
				}
			}
		}
		return Change{Action: Shrink, Request: n, Reason: Reason{Why: WhyBelowRequest, Memory: r.memory, Value: n, Request: req, Duration: elapsed}}
	default:
		r.shrinkSince = time.Time{}
		if !now.Before(r.capUntil) {
			// In the band by itself, not because a Deferred or Infeasible
			// cap holds the target down: a grow waiting for room keeps
			// its wait.
			r.growSince = time.Time{}
		}
		r.sized = true
		hold.Reason = Reason{Why: WhyInBand, Memory: r.memory, Value: ceil(t), Request: req}
		return hold
	}
}

// addPeak records a working set (or an OOM kill's bumped size) in both
// memory peak windows: the hour's and the day's.
func (c *Container) addPeak(now time.Time, ws float64) {
	c.peak.add(now, ws)
	c.dayPeak.add(now, ws)
}

// guaranteed reports whether the container is sized as a Guaranteed pod's:
// cpu and memory limits equal to their requests (memory's req and lim
// given). A Burstable pod with such a container keeps the planner's limit
// floor; the rules that use this are then only more careful than needed.
func (c *Container) guaranteed(memReq, memLim int64) bool {
	return memLim > 0 && memLim <= memReq && c.cur.CPULimitMillis > 0 && c.cur.CPULimitMillis <= c.cur.CPURequestMillis
}

// pastLoad reports that a CPU target above the request comes from load
// that is over: the latest sample's demand or the latest average of it,
// plus the margin, fits in the request. Growing then would reserve for a
// burst already gone (a start-up burst the warm-up kept from the
// percentiles); the fast path grows if the load comes back. A seeded
// container's target is the workload's: a new replica is sized for the
// load its siblings carry before its own arrives, so it grows at once.
func (c *Container) pastLoad(r *resource, req float64) bool {
	if r.memory || c.cpuDemand <= 0 || (r.seed != nil && !r.seed.Empty()) {
		return false
	}
	recent := c.cpuDemand
	if c.cpuLastMean > 0 {
		recent = min(recent, c.cpuLastMean)
	}
	return recent*(1+c.cfg.CPUMargin) <= req
}

// shrinkUnderLoad reports that a CPU shrink to req would bring the limit
// under the latest sample's demand plus the margin: the load now needs
// more than the window's targets said (a burst has begun), the fast path
// would grow it back within seconds, and the shrink waits for the burst
// to pass. Without a limit, or one the policy does not move, a request
// under a burst throttles nothing.
func (c *Container) shrinkUnderLoad(r *resource, req, curReq, curLim int64) bool {
	if r.memory || curLim <= 0 || curReq <= 0 || c.bounds.RequestsOnly {
		return false
	}
	return float64(req)*float64(curLim)/float64(curReq) < c.cpuDemand*(1+c.cfg.CPUMargin)
}

// starving reports signs of starvation that forbid a shrink.
func (c *Container) starving(r *resource) bool {
	if r.memory {
		return c.pendingOOM
	}
	return c.runSeconds > 0 || c.throttleEWMA >= c.cfg.CPULightThrottledFraction/2
}

// clamp applies minAllowed, maxAllowed and a live cap to a target.
func (c *Container) clamp(now time.Time, r *resource, t int64) int64 {
	lo, hi := c.bounds.MinCPUMillis, c.bounds.MaxCPUMillis
	if r.memory {
		lo, hi = c.bounds.MinMemBytes, c.bounds.MaxMemBytes
	}
	if hi > 0 {
		t = min(t, hi)
	}
	if now.Before(r.capUntil) {
		t = min(t, r.capValue)
	}
	floor := c.cfg.MinCPUMillis
	if r.memory {
		floor = c.cfg.MinMemBytes
	}
	return max(t, lo, floor)
}

// gate applies what the policy, earlier resizes and the pod's budget allow.
func (c *Container) gate(now time.Time, r *resource, ch Change, req, lim int64) Change {
	hold := func(why Reason) Change {
		why.Memory = r.memory
		return Change{Request: req, Limit: lim, Reason: why}
	}
	if (r.memory && c.bounds.IgnoreMemory) || (!r.memory && c.bounds.IgnoreCPU) {
		return hold(Reason{Why: WhyNotControlled})
	}
	if ch.Action == Hold {
		if ch.Request == 0 {
			ch.Request, ch.Limit = req, lim
		}
		return ch
	}
	wanted := ch.Request
	if ch.Action == Grow {
		capped := c.clamp(now, r, wanted)
		if capped < req+c.minStep(r) {
			outcome := r.capOutcome
			capAt := r.capValue
			if !now.Before(r.capUntil) {
				outcome, capAt = "maxAllowed", capped
			}
			return hold(Reason{Why: WhyCapped, Value: wanted, Limit: capAt, Outcome: outcome})
		}
		ch.Request = capped
	}
	if r.inFlight {
		return hold(Reason{Why: WhyInFlight, Duration: now.Sub(r.sentAt)})
	}
	p := c.pod
	if now.Before(p.backoffUntil) {
		return hold(Reason{Why: WhyBackoff, Value: wanted, Duration: p.backoffUntil.Sub(now), Outcome: p.lastFailure.String()})
	}
	need := 1
	if ch.Action == Shrink {
		need = c.cfg.GrowReserve + 1
	}
	if p.remaining(now) < need {
		return hold(Reason{Why: WhyBudget, Value: wanted, Duration: p.waitFor(now, need)})
	}
	if lim > 0 && req > 0 && !c.bounds.RequestsOnly {
		ch.Limit = ceil(float64(ch.Request) * float64(lim) / float64(req))
	} else {
		ch.Limit = lim
	}
	return ch
}

// Recommendation returns the container's VPA-style estimate at now.
func (c *Container) Recommendation(now time.Time) Recommendation {
	return Recommendation{CPU: c.estimate(now, &c.cpu), Memory: c.estimate(now, &c.mem)}
}

func (c *Container) estimate(now time.Time, r *resource) Estimate {
	margin := c.cfg.CPUMargin
	halfLife := c.cfg.CPUHalfLife
	if r.memory {
		margin, halfLife = c.cfg.MemoryMargin, c.cfg.MemoryHalfLife
	}
	if r.hist.Empty() && (r.seed == nil || r.seed.Empty()) {
		return Estimate{}
	}
	// Confidence is the history behind the estimate, in half-lives: the
	// bounds are widened by (1 + 1/confidence) as VPA widens them by days.
	conf := max((r.observedSeconds+r.seedSeconds)/halfLife.Seconds(), 1e-3)
	lower := c.percentile(r, c.cfg.LowerPercentile) * (1 + margin) * math.Pow(1+0.001/conf, -2)
	upper := c.percentile(r, c.cfg.UpperPercentile) * (1 + margin) * (1 + 1/conf)
	unc := c.target(now, r, c.cfg.TargetPercentile)
	if r.memory {
		peak := c.peak.max(now) * (1 + c.cfg.MemoryHeadroom)
		upper = max(upper, peak)
	}
	upper = max(upper, unc)
	lower = min(lower, unc)
	return Estimate{
		Target:         c.clamp(now, r, ceil(unc)),
		LowerBound:     c.clamp(now, r, ceil(lower)),
		UpperBound:     c.clamp(now, r, ceil(upper)),
		UncappedTarget: ceil(unc),
	}
}

// expireInFlight ends a wait for a resize that got neither Feedback nor a
// visible change within InFlightTimeout: it counts as a Timeout.
func (c *Container) expireInFlight(now time.Time) {
	for _, r := range [...]*resource{&c.cpu, &c.mem} {
		if r.inFlight && now.Sub(r.sentAt) >= c.cfg.InFlightTimeout {
			r.inFlight = false
			c.pod.fail(now, resize.Timeout)
		}
	}
}

// sent records that the container's latest decision went out in a resize.
func (c *Container) sent(now time.Time) {
	for _, x := range [...]struct {
		r  *resource
		ch Change
	}{{&c.cpu, c.last.CPU}, {&c.mem, c.last.Memory}} {
		if x.ch.Action == Hold {
			continue
		}
		x.r.inFlight, x.r.sentAt = true, now
		x.r.sentFromReq, x.r.sentToReq = x.r.lastReq, x.ch.Request
		x.r.shrinkSince = time.Time{}
		if x.ch.Action == Grow {
			x.r.floor, x.r.floorUntil = x.ch.Request, now.Add(c.cfg.ShrinkWindow)
		} else {
			x.r.floorUntil = time.Time{}
		}
	}
	c.last = Decision{}
}

func ceil(v float64) int64 {
	if !(v > 0) {
		return 0
	}
	if v >= math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(math.Ceil(v - 1e-9))
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
