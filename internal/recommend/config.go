package recommend

import (
	"errors"
	"fmt"
	"time"
)

// Config tunes the recommender. Start from DefaultConfig and change fields;
// every field must be set (Validate rejects zeros where zero makes no sense).
// docs/recommend.md explains each default.
type Config struct {
	// CPUHalfLife is the half-life of the CPU usage histogram. Default 5m:
	// a sustained drop moves the 90th percentile after about 3.3 half-lives
	// (17m), a rise after 0.15 half-lives (45s).
	CPUHalfLife time.Duration
	// MemoryHalfLife is the half-life of the working-set histogram.
	// Default 30m: memory is not compressible, so it forgets more slowly.
	MemoryHalfLife time.Duration
	// TargetPercentile, LowerPercentile and UpperPercentile pick the
	// percentiles of the histograms behind target, lowerBound and
	// upperBound. Defaults 0.90, 0.50 and 0.95 (VPA's).
	TargetPercentile, LowerPercentile, UpperPercentile float64
	// CPUMargin and MemoryMargin are added on top of the percentiles
	// (target = percentile * (1 + margin)). Default 0.15 each (VPA's).
	CPUMargin, MemoryMargin float64
	// MemoryHeadroom is how far memory stays above the peak working set of
	// the last MemoryPeakWindow: the memory target is never below
	// peak * (1 + MemoryHeadroom). Default 0.20, the planner's
	// resize.DefaultMemoryHeadroom, so the two agree.
	MemoryHeadroom float64
	// MemoryPeakWindow is how long a working-set peak holds the memory
	// target up. Default 1h.
	MemoryPeakWindow time.Duration
	// RegrowWindow and MinTrough: after a request grew back less than
	// MinTrough after a shrink, later shrinks stop at the highest target
	// since that shrink, for RegrowWindow: the load came back after a
	// short trough, and will again. RegrowWindow defaults to 24h, as a
	// day is the longest cycle most workloads repeat (diurnal load,
	// nightly batches). MinTrough defaults to 1h, MemoryPeakWindow's span:
	// load that comes back within the hour a memory peak is held for was
	// a trough in one phase, not a new phase.
	RegrowWindow, MinTrough time.Duration
	// MinCPUMillis and MinMemBytes are the smallest targets recommended,
	// whatever the policy's minAllowed. Defaults 10m and 16 MiB: below that
	// a container's own runtime overhead is most of its usage, and a
	// millicore of request buys nothing measurable.
	MinCPUMillis, MinMemBytes int64
	// CPURequestResolution is the length of the averages of CPU demand the
	// request is sized from: the CPU request target is the percentile of
	// those averages plus the margin, but at least what keeps the limit,
	// at the container's limit:request ratio, above the percentile of
	// one-second demand plus the margin. At most CPUHalfLife/20 is used
	// (a 10s half-life keeps one-second samples). Default 15s,
	// metrics-server's resolution, which is what VPA's recommender sizes
	// from.
	CPURequestResolution time.Duration
	// WarmupSamples is how many samples a container without a seed must
	// give before the baseline (percentile) path may resize it. The fast
	// path works from the first sample. Default 60 (one minute).
	WarmupSamples int

	// GrowBand and ShrinkBand are the hysteresis band around the current
	// request: the baseline grows a request only when its target is more
	// than GrowBand above it, and shrinks it only when the target is more
	// than ShrinkBand below it. Defaults 0.10 and 0.20.
	GrowBand, ShrinkBand float64
	// ShrinkWindow is the stabilization window: a request shrinks only after
	// its target has stayed below the band for this long, with no
	// starvation and no grow in between, and then only to the largest target
	// seen in the window. Default 5m (the HPA's scale-down stabilization).
	ShrinkWindow time.Duration
	// MaxCPUShrinkFraction and MaxMemoryShrinkFraction bound one shrink, as a
	// fraction of the current request. Defaults 0.5 and 0.25 (the planner's
	// resize.DefaultMaxMemoryDecreaseFraction).
	MaxCPUShrinkFraction, MaxMemoryShrinkFraction float64
	// MinCPUStepMillis and MinMemoryStepBytes are the smallest changes worth
	// a resize. Defaults 10m and 8 MiB.
	MinCPUStepMillis, MinMemoryStepBytes int64

	// CPUThrottledFraction is the share of CFS periods throttled in one
	// sample that makes the sample "starving". Default 0.25.
	CPUThrottledFraction float64
	// CPUPinnedFraction makes a sample starving when usage is at least this
	// share of the limit, even if few periods were throttled. Default 0.95.
	CPUPinnedFraction float64
	// CPUSustain is how much starvation grows CPU at once: the fast path
	// fires when the throttled fractions of consecutive starving samples,
	// each weighted by its interval, add up to this. Default 1s: one full
	// second throttled in every period, or two partly throttled samples.
	CPUSustain time.Duration
	// CPUGrowthGain sets the fast-path step: the limit is multiplied by
	// 1 + CPUGrowthGain * severity, where severity is the worst throttled
	// fraction of the starving run (0.5 for a pinned but unthrottled run):
	// the first sample after a step is partial and would understate it.
	// Default 1.5: x2.5 for a sample throttled in every period, the factor
	// that also sizes the demand the CPU history records for a throttled
	// sample. A run throttled in most periods (CPUCensoredFraction) grows by
	// CPUCensoredGrowth instead.
	CPUGrowthGain float64
	// CPUCensoredGrowth is the fast-path factor when a sample of the
	// starving run was throttled in at least CPUCensoredFraction of its
	// periods, or throttled with its whole quota used: usage is then
	// censored at the limit and says nothing about how far demand is above
	// it. Default 5: a 4x load step ends in one resize, with a quarter of
	// room for its bursts within a CFS period.
	CPUCensoredGrowth float64
	// CPUCensoredFraction is the throttled share that makes a sample
	// censored. Default 0.8: on the lab a backlogged 400m load under a 100m
	// limit read 0.71-1 (a period in which the load's own cycle ends under
	// the quota counts as unthrottled; below 0.8 its whole quota used tells
	// it, censoredUsageFraction), while a load near its limit whose bursts
	// exceed it reads 0.3-0.6.
	CPUCensoredFraction float64
	// CPULightThrottledFraction and CPULightThrottleWindow catch throttling
	// too light for the fast path: when the exponentially weighted mean of
	// the throttled fraction, with this time constant, reaches the
	// fraction, CPU grows by 1 + CPUGrowthGain * mean (at least GrowBand).
	// Defaults 0.10 and 1m.
	CPULightThrottledFraction float64
	CPULightThrottleWindow    time.Duration

	// MemoryNearLimitFraction grows memory at once when the headroom to the
	// limit is below this share of the limit. Default 0.10.
	MemoryNearLimitFraction float64
	// MemoryForecast grows memory at once when the working set, rising
	// steadily (MemoryCreepSamples), would reach the limit within this time
	// at its rate; such a grow also covers this much further growth.
	// Default 1m.
	MemoryForecast time.Duration
	// MemoryCreepSamples is how many consecutive samples, each with a
	// higher working set than the one before, make a rise a trend that the
	// forecast may act on. The rate is the run's slowest rise. Default 5:
	// one allocation (a jump, then flat) is never a trend.
	MemoryCreepSamples int
	// MemoryPressureFraction grows memory at once when PSI (if present)
	// shows at least this share of the last sample stalled on memory while
	// the working set is within 25% of the limit or the limit was hit.
	// Default 0.10.
	MemoryPressureFraction float64
	// MemoryGrowthFactor multiplies the memory limit on a fast-path grow
	// where the working set cannot show the demand: an OOM kill, the limit
	// hit, memory stalls. Other grows go to the peak working set plus
	// MemoryHeadroom (at least GrowBand above the limit). Two factors bound
	// any one grow. Default 1.5.
	MemoryGrowthFactor float64
	// MemoryOOMMinBumpBytes is the least an OOM kill grows the memory limit
	// by. Default 32 MiB.
	MemoryOOMMinBumpBytes int64

	// MaxResizesPerHour bounds the resizes of one pod in any sliding hour.
	// Default 12.
	MaxResizesPerHour int
	// GrowReserve resizes of the hourly bound are kept for grows: a shrink
	// needs more than GrowReserve resizes left, so a shrink can never use up
	// the budget a grow back would need. Default 1. Must be below
	// MaxResizesPerHour.
	GrowReserve int
	// InFlightTimeout is how long a sent resize may go without Feedback or a
	// visible change before it counts as a Timeout. Default 30s.
	InFlightTimeout time.Duration
	// BackoffInitial and BackoffMax bound the exponential backoff after an
	// Error, Rejected or Timeout outcome (doubling per failure, reset by
	// Applied). Defaults 5s and 5m.
	BackoffInitial, BackoffMax time.Duration
	// DeferredCapTTL and InfeasibleCapTTL are how long the cap reported with
	// a Deferred or Infeasible outcome keeps targets down. Defaults 2m
	// (the node's room changes as pods come and go) and 30m (allocatable
	// rarely changes).
	DeferredCapTTL, InfeasibleCapTTL time.Duration
}

// DefaultConfig returns the configuration snug uses unless told otherwise.
func DefaultConfig() Config {
	return Config{
		CPUHalfLife:      5 * time.Minute,
		MemoryHalfLife:   30 * time.Minute,
		TargetPercentile: 0.90,
		LowerPercentile:  0.50,
		UpperPercentile:  0.95,
		CPUMargin:        0.15,
		MemoryMargin:     0.15,
		MemoryHeadroom:   0.20,
		MemoryPeakWindow: time.Hour,
		RegrowWindow:     24 * time.Hour,
		MinTrough:        time.Hour,
		MinCPUMillis:     10,
		MinMemBytes:      16 << 20,
		WarmupSamples:    60,

		CPURequestResolution: 15 * time.Second,

		GrowBand:                0.10,
		ShrinkBand:              0.20,
		ShrinkWindow:            5 * time.Minute,
		MaxCPUShrinkFraction:    0.5,
		MaxMemoryShrinkFraction: 0.25,
		MinCPUStepMillis:        10,
		MinMemoryStepBytes:      8 << 20,

		CPUThrottledFraction:      0.25,
		CPUPinnedFraction:         0.95,
		CPUSustain:                time.Second,
		CPUGrowthGain:             1.5,
		CPUCensoredGrowth:         5,
		CPUCensoredFraction:       0.8,
		CPULightThrottledFraction: 0.10,
		CPULightThrottleWindow:    time.Minute,

		MemoryNearLimitFraction: 0.10,
		MemoryForecast:          time.Minute,
		MemoryCreepSamples:      5,
		MemoryPressureFraction:  0.10,
		MemoryGrowthFactor:      1.5,
		MemoryOOMMinBumpBytes:   32 << 20,

		MaxResizesPerHour: 12,
		GrowReserve:       1,
		InFlightTimeout:   30 * time.Second,
		BackoffInitial:    5 * time.Second,
		BackoffMax:        5 * time.Minute,
		DeferredCapTTL:    2 * time.Minute,
		InfeasibleCapTTL:  30 * time.Minute,
	}
}

// maxResizesPerHour bounds MaxResizesPerHour: the sliding window keeps one
// timestamp per allowed resize.
const maxResizesPerHour = 3600

// Validate reports every field out of range, joined.
func (c Config) Validate() error {
	var errs []error
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s %v must be positive", name, d))
		}
	}
	within := func(name string, v, lo, hi float64, openLo bool) {
		if !(v >= lo && v <= hi) || (openLo && v == lo) {
			lb := "["
			if openLo {
				lb = "("
			}
			errs = append(errs, fmt.Errorf("%s %v is outside %s%v, %v]", name, v, lb, lo, hi))
		}
	}
	positive("cpu half-life", c.CPUHalfLife)
	positive("memory half-life", c.MemoryHalfLife)
	for _, hl := range []time.Duration{c.CPUHalfLife, c.MemoryHalfLife} {
		if hl > 0 && hl%time.Millisecond != 0 {
			errs = append(errs, fmt.Errorf("half-life %v must be a whole number of milliseconds (checkpoints store milliseconds)", hl))
		}
	}
	within("lower percentile", c.LowerPercentile, 0, 1, true)
	within("target percentile", c.TargetPercentile, 0, 1, true)
	within("upper percentile", c.UpperPercentile, 0, 1, true)
	if !(c.LowerPercentile <= c.TargetPercentile && c.TargetPercentile <= c.UpperPercentile) {
		errs = append(errs, fmt.Errorf("percentiles must be ordered lower <= target <= upper, got %v, %v, %v",
			c.LowerPercentile, c.TargetPercentile, c.UpperPercentile))
	}
	within("cpu margin", c.CPUMargin, 0, 10, false)
	within("memory margin", c.MemoryMargin, 0, 10, false)
	within("memory headroom", c.MemoryHeadroom, 0, 10, false)
	positive("memory peak window", c.MemoryPeakWindow)
	positive("regrow window", c.RegrowWindow)
	positive("min trough", c.MinTrough)
	if c.MinCPUMillis < 1 || c.MinMemBytes < 1 {
		errs = append(errs, fmt.Errorf("minimum targets %dm and %d bytes must be at least 1", c.MinCPUMillis, c.MinMemBytes))
	}
	positive("cpu request resolution", c.CPURequestResolution)
	if c.WarmupSamples < 0 {
		errs = append(errs, fmt.Errorf("warmup samples %d must not be negative", c.WarmupSamples))
	}

	within("grow band", c.GrowBand, 0, 10, false)
	within("shrink band", c.ShrinkBand, 0, 1, false)
	positive("shrink window", c.ShrinkWindow)
	within("max cpu shrink fraction", c.MaxCPUShrinkFraction, 0, 1, true)
	within("max memory shrink fraction", c.MaxMemoryShrinkFraction, 0, 1, true)
	if c.MinCPUStepMillis < 1 {
		errs = append(errs, fmt.Errorf("min cpu step %dm must be at least 1m", c.MinCPUStepMillis))
	}
	if c.MinMemoryStepBytes < 1 {
		errs = append(errs, fmt.Errorf("min memory step %d bytes must be at least 1", c.MinMemoryStepBytes))
	}

	within("cpu throttled fraction", c.CPUThrottledFraction, 0, 1, true)
	within("cpu pinned fraction", c.CPUPinnedFraction, 0, 1, true)
	positive("cpu sustain", c.CPUSustain)
	within("cpu growth gain", c.CPUGrowthGain, 0, 100, true)
	within("cpu censored growth", c.CPUCensoredGrowth, 1, 100, false)
	within("cpu censored fraction", c.CPUCensoredFraction, 0, 1, true)
	within("cpu light throttled fraction", c.CPULightThrottledFraction, 0, 1, true)
	positive("cpu light throttle window", c.CPULightThrottleWindow)

	within("memory near-limit fraction", c.MemoryNearLimitFraction, 0, 1, true)
	positive("memory forecast", c.MemoryForecast)
	if c.MemoryCreepSamples < 1 {
		errs = append(errs, fmt.Errorf("memory creep samples %d must be at least 1", c.MemoryCreepSamples))
	}
	within("memory pressure fraction", c.MemoryPressureFraction, 0, 1, true)
	within("memory growth factor", c.MemoryGrowthFactor, 1, 100, true)
	if c.MemoryOOMMinBumpBytes < 0 {
		errs = append(errs, fmt.Errorf("memory oom min bump %d bytes must not be negative", c.MemoryOOMMinBumpBytes))
	}

	if c.MaxResizesPerHour < 1 || c.MaxResizesPerHour > maxResizesPerHour {
		errs = append(errs, fmt.Errorf("max resizes per hour %d is outside [1, %d]", c.MaxResizesPerHour, maxResizesPerHour))
	}
	if c.GrowReserve < 0 || (c.MaxResizesPerHour >= 1 && c.GrowReserve >= c.MaxResizesPerHour) {
		errs = append(errs, fmt.Errorf("grow reserve %d must be in [0, max resizes per hour %d)", c.GrowReserve, c.MaxResizesPerHour))
	}
	positive("in-flight timeout", c.InFlightTimeout)
	positive("initial backoff", c.BackoffInitial)
	if c.BackoffMax < c.BackoffInitial {
		errs = append(errs, fmt.Errorf("max backoff %v is below the initial backoff %v", c.BackoffMax, c.BackoffInitial))
	}
	positive("deferred cap ttl", c.DeferredCapTTL)
	positive("infeasible cap ttl", c.InfeasibleCapTTL)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("validating recommender config: %w", err)
	}
	return nil
}
