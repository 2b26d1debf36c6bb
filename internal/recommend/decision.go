package recommend

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Resources are a container's requests and limits, as plain numbers.
// 0 means not set (no request, or no limit).
type Resources struct {
	CPURequestMillis, CPULimitMillis int64
	MemRequestBytes, MemLimitBytes   int64
}

// Bounds is what a container's policy says about its targets, as a VPA
// container resource policy does. The zero value controls requests and
// limits of cpu and memory without bounds.
type Bounds struct {
	// MinCPUMillis, MaxCPUMillis, MinMemBytes and MaxMemBytes are the
	// policy's minAllowed and maxAllowed; 0 means none.
	MinCPUMillis, MaxCPUMillis int64
	MinMemBytes, MaxMemBytes   int64
	// RequestsOnly is controlledValues RequestsOnly: limits never move, so
	// growing a request cannot end throttling or an OOM at the limit.
	RequestsOnly bool
	// IgnoreCPU and IgnoreMemory leave a resource out of
	// controlledResources: it is still learnt, never resized.
	IgnoreCPU, IgnoreMemory bool
}

// Validate reports bounds that contradict themselves.
func (b Bounds) Validate() error {
	switch {
	case b.MinCPUMillis < 0 || b.MaxCPUMillis < 0 || b.MinMemBytes < 0 || b.MaxMemBytes < 0:
		return fmt.Errorf("validating bounds: negative bound in %+v", b)
	case b.MaxCPUMillis > 0 && b.MinCPUMillis > b.MaxCPUMillis:
		return fmt.Errorf("validating bounds: cpu minAllowed %dm is above maxAllowed %dm", b.MinCPUMillis, b.MaxCPUMillis)
	case b.MaxMemBytes > 0 && b.MinMemBytes > b.MaxMemBytes:
		return fmt.Errorf("validating bounds: memory minAllowed %d is above maxAllowed %d", b.MinMemBytes, b.MaxMemBytes)
	}
	return nil
}

// Action is what to do with one resource of one container now.
type Action uint8

// The actions. The zero value is Hold.
const (
	// Hold leaves the request as it is.
	Hold Action = iota
	// Grow raises the request (and, under RequestsAndLimits, the limit).
	Grow
	// Shrink lowers it.
	Shrink
)

// String returns "Hold", "Grow" or "Shrink".
func (a Action) String() string {
	switch a {
	case Hold:
		return "Hold"
	case Grow:
		return "Grow"
	case Shrink:
		return "Shrink"
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// Why says in one word why a Change is what it is. Its String is stable,
// fit for a metric label or an event reason.
type Why uint8

// The reasons.
const (
	WhyNoData Why = iota // no samples yet
	// Fast path.
	WhyThrottled       // CPU throttled in most periods for CPUSustain
	WhyPinned          // CPU usage pinned at the limit
	WhyThrottledLong   // light throttling for about CPULightThrottleWindow
	WhyOOMKill         // an OOM kill
	WhyMemoryNearLimit // working set within MemoryNearLimitFraction of the limit
	WhyMemoryCreep     // working set would reach the limit within MemoryForecast
	WhyMemoryPressure  // PSI memory stalls near the limit
	// Baseline.
	WhyAboveRequest // target above the band: grow to it
	WhyBelowRequest // target below the band for ShrinkWindow: shrink
	WhyStabilizing  // target below the band, window not over yet
	WhyInBand       // target within the hysteresis band
	WhyWarmingUp    // too few samples for the baseline
	// Held back.
	WhyInFlight      // an earlier resize of this resource is not done
	WhyBackoff       // the last resize failed; waiting
	WhyBudget        // the pod used its resizes for the hour
	WhyCapped        // the policy's maxAllowed or a Deferred/Infeasible cap stops it
	WhyLimitFixed    // starving at a limit the policy does not control (RequestsOnly)
	WhyNoRequest     // the container has no request to size
	WhyNotControlled // the policy leaves the resource alone
	// Baseline, held by the load of now.
	WhyLoadGone // cpu target above the band from load that is over: hold
	WhyLoadNow  // cpu shrink due, but the load now needs the limit: hold
	// Baseline, waiting on evidence.
	WhyGrowWaiting // cpu target above the band without starvation, for less than a CPU half-life
	WhyRecentPeak  // cpu shrink would bring the limit under the window's busiest second
	WhyRegrown     // cpu shrink would go under the level the load came back to, within MinTrough, after the last shrink
	WhyTiedLimit   // memory shrink would lower a limit equal to the request under the day's peak working set plus headroom
	// Held by the caller.
	WhyStartupBoost    // the container runs a startup boost; its cpu is the boost's until it ends
	WhyRestartRequired // the resource's resizePolicy is RestartContainer: an in-place change would restart the container
	WhyPodLevel        // the pod sizes the resource at the pod level (spec.resources), not per container
)

var whyNames = [...]string{
	WhyNoData:          "NoData",
	WhyThrottled:       "Throttled",
	WhyPinned:          "Pinned",
	WhyThrottledLong:   "ThrottledLong",
	WhyOOMKill:         "OOMKill",
	WhyMemoryNearLimit: "MemoryNearLimit",
	WhyMemoryCreep:     "MemoryCreep",
	WhyMemoryPressure:  "MemoryPressure",
	WhyAboveRequest:    "AboveRequest",
	WhyBelowRequest:    "BelowRequest",
	WhyStabilizing:     "Stabilizing",
	WhyInBand:          "InBand",
	WhyWarmingUp:       "WarmingUp",
	WhyInFlight:        "InFlight",
	WhyBackoff:         "Backoff",
	WhyBudget:          "Budget",
	WhyCapped:          "Capped",
	WhyLimitFixed:      "LimitFixed",
	WhyNoRequest:       "NoRequest",
	WhyNotControlled:   "NotControlled",
	WhyLoadGone:        "LoadGone",
	WhyLoadNow:         "LoadNow",
	WhyGrowWaiting:     "GrowWaiting",
	WhyRecentPeak:      "RecentPeak",
	WhyRegrown:         "Regrown",
	WhyTiedLimit:       "TiedLimit",
	WhyStartupBoost:    "StartupBoost",
	WhyRestartRequired: "RestartRequired",
	WhyPodLevel:        "PodLevel",
}

// String returns the reason's name, such as "Throttled".
func (w Why) String() string {
	if int(w) < len(whyNames) {
		return whyNames[w]
	}
	return "Why(" + strconv.Itoa(int(w)) + ")"
}

// Reason explains a Change with the figures behind it. It is built without
// allocating; String formats it for people, e.g. "cpu throttled in 100% of
// periods for 2s at limit 100m".
type Reason struct {
	Why Why
	// Memory is true for a memory reason, false for cpu.
	Memory bool
	// Value, Limit and Request are in millicores or bytes; which of them
	// are set depends on Why.
	Value, Limit, Request int64
	// Fraction is a throttled, headroom or stalled share (0-1).
	Fraction float64
	// Duration is how long a condition has lasted or still has to last.
	Duration time.Duration
	// Outcome names the outcome behind WhyBackoff and WhyCapped.
	Outcome string
}

func (r Reason) res() string {
	if r.Memory {
		return "memory"
	}
	return "cpu"
}

func (r Reason) q(v int64) string {
	if r.Memory {
		return formatBytes(v)
	}
	return strconv.FormatInt(v, 10) + "m"
}

// String returns the explanation, lowercase, with the figures.
func (r Reason) String() string {
	pct := func(f float64) string { return strconv.Itoa(int(math.Round(f*100))) + "%" }
	d := r.Duration.Round(time.Second).String()
	switch r.Why {
	case WhyNoData:
		return r.res() + ": no samples yet"
	case WhyThrottled:
		return fmt.Sprintf("cpu throttled in %s of periods for %s at limit %s", pct(r.Fraction), d, r.q(r.Limit))
	case WhyPinned:
		return fmt.Sprintf("cpu usage pinned at %s of limit %s for %s", r.q(r.Value), r.q(r.Limit), d)
	case WhyThrottledLong:
		return fmt.Sprintf("cpu throttled in %s of periods over the last %s at limit %s", pct(r.Fraction), d, r.q(r.Limit))
	case WhyOOMKill:
		return fmt.Sprintf("oom kill at memory limit %s", r.q(r.Limit))
	case WhyMemoryNearLimit:
		return fmt.Sprintf("memory working set %s is within %s of limit %s", r.q(r.Value), pct(r.Fraction), r.q(r.Limit))
	case WhyMemoryCreep:
		return fmt.Sprintf("memory working set %s would reach limit %s in %s", r.q(r.Value), r.q(r.Limit), d)
	case WhyMemoryPressure:
		return fmt.Sprintf("memory stalled %s of the time at working set %s of limit %s", pct(r.Fraction), r.q(r.Value), r.q(r.Limit))
	case WhyAboveRequest:
		return fmt.Sprintf("%s target %s is above request %s", r.res(), r.q(r.Value), r.q(r.Request))
	case WhyBelowRequest:
		return fmt.Sprintf("%s target %s has been below request %s for %s", r.res(), r.q(r.Value), r.q(r.Request), d)
	case WhyStabilizing:
		return fmt.Sprintf("%s target %s is below request %s; shrinking in %s if it stays there", r.res(), r.q(r.Value), r.q(r.Request), d)
	case WhyInBand:
		return fmt.Sprintf("%s target %s is close enough to request %s", r.res(), r.q(r.Value), r.q(r.Request))
	case WhyWarmingUp:
		return fmt.Sprintf("%s: learning usage, %s more before resizing on percentiles", r.res(), d)
	case WhyInFlight:
		return fmt.Sprintf("%s resize sent %s ago is not done yet", r.res(), d)
	case WhyBackoff:
		return fmt.Sprintf("%s wants %s but the last resize ended %s; retrying in %s", r.res(), r.q(r.Value), r.Outcome, d)
	case WhyBudget:
		return fmt.Sprintf("%s wants %s but the pod used its resizes for the hour; next in %s", r.res(), r.q(r.Value), d)
	case WhyCapped:
		return fmt.Sprintf("%s wants %s but is capped at %s (%s)", r.res(), r.q(r.Value), r.q(r.Limit), r.Outcome)
	case WhyLimitFixed:
		return fmt.Sprintf("%s starving at limit %s, which the policy does not control (RequestsOnly)", r.res(), r.q(r.Limit))
	case WhyNoRequest:
		return r.res() + " has no request to size"
	case WhyNotControlled:
		return r.res() + " is not controlled by the policy"
	case WhyLoadGone:
		return fmt.Sprintf("cpu target %s is above request %s, but the load that asked for it is over", r.q(r.Value), r.q(r.Request))
	case WhyLoadNow:
		return fmt.Sprintf("cpu shrink to %s waits: demand now is %s, over the limit it would bring", r.q(r.Value), r.q(r.Limit))
	case WhyGrowWaiting:
		return fmt.Sprintf("cpu target %s is above request %s without starvation; growing in %s if it stays there", r.q(r.Value), r.q(r.Request), d)
	case WhyRegrown:
		return fmt.Sprintf("cpu shrink stops at %s, request %s: the load came back to it within %s of the last shrink", r.q(r.Value), r.q(r.Request), d)
	case WhyRecentPeak:
		return fmt.Sprintf("cpu shrink held at %s (request %s): the limit must hold the busiest second of the window", r.q(r.Value), r.q(r.Request))
	case WhyTiedLimit:
		return fmt.Sprintf("memory shrink held at %s (request %s): the limit moves with the request and must hold the day's peak working set plus headroom", r.q(r.Value), r.q(r.Request))
	case WhyStartupBoost:
		return fmt.Sprintf("cpu held at %s: the container runs its startup boost", r.q(r.Request))
	case WhyRestartRequired:
		return fmt.Sprintf("%s wants %s but is held at request %s: its resizePolicy is RestartContainer, so a resize would restart the container", r.res(), r.q(r.Value), r.q(r.Request))
	case WhyPodLevel:
		return fmt.Sprintf("%s held at request %s: the pod sizes its %s at the pod level", r.res(), r.q(r.Request), r.res())
	}
	return r.Why.String()
}

// formatBytes prints bytes in the largest binary unit that keeps one
// decimal meaningful, as "243.5Mi".
func formatBytes(v int64) string {
	const ki = 1024
	units := []string{"", "Ki", "Mi", "Gi", "Ti"}
	f := float64(v)
	i := 0
	for i < len(units)-1 && math.Abs(f) >= ki {
		f /= ki
		i++
	}
	if i == 0 {
		return strconv.FormatInt(v, 10)
	}
	s := strconv.FormatFloat(f, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + units[i]
}

// Change is the decision about one resource of one container.
type Change struct {
	Action Action
	// Request is the request to set: millicores for cpu, bytes for memory.
	// It is the current request when Action is Hold.
	Request int64
	// Limit is the limit that Request implies when limits follow requests
	// (the current limit scaled by its limit:request ratio), or the current
	// limit; 0 if none. For information: the planner computes the real one.
	Limit int64
	// Fast is true for a fast-path change (starvation), which should be
	// sent without delay.
	Fast bool
	// Reason explains the change, or why there is none.
	Reason Reason
}

// Decision is what a container should do now.
type Decision struct {
	CPU, Memory Change
}

// Resize reports whether either resource should change.
func (d Decision) Resize() bool { return d.CPU.Action != Hold || d.Memory.Action != Hold }

// Fast reports whether a change is a fast-path one.
func (d Decision) Fast() bool {
	return (d.CPU.Action != Hold && d.CPU.Fast) || (d.Memory.Action != Hold && d.Memory.Fast)
}

// String describes the decision, as "cpu Grow to 250m (cpu throttled in
// 100% of periods for 1s at limit 100m); memory Hold (...)".
func (d Decision) String() string {
	var b strings.Builder
	for i, c := range [...]struct {
		name string
		ch   Change
		mem  bool
	}{{"cpu", d.CPU, false}, {"memory", d.Memory, true}} {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(c.name + " " + c.ch.Action.String())
		if c.ch.Action != Hold {
			b.WriteString(" to " + Reason{Memory: c.mem}.q(c.ch.Request))
		}
		b.WriteString(" (" + c.ch.Reason.String() + ")")
	}
	return b.String()
}

// Estimate is one resource's recommendation, as in a VPA status: requests
// in millicores (cpu) or bytes (memory).
type Estimate struct {
	// Target is the recommended request, within the policy's bounds and any
	// Deferred/Infeasible cap.
	Target int64
	// LowerBound and UpperBound bracket it: below LowerBound the container is
	// likely starved, above UpperBound it likely wastes. They widen while
	// little history is known.
	LowerBound, UpperBound int64
	// UncappedTarget is Target before the bounds and caps.
	UncappedTarget int64
}

// Recommendation is a container's recommendation.
type Recommendation struct {
	CPU    Estimate // millicores
	Memory Estimate // bytes
}
