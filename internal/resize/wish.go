package resize

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

func (pol *Policy) mode() ControlledValues {
	if pol == nil || pol.ControlledValues == "" {
		return RequestsAndLimits
	}
	return pol.ControlledValues
}

func (pol *Policy) controls(r res) bool {
	if pol == nil || pol.ControlledResources == nil {
		return true
	}
	return slices.Contains(pol.ControlledResources, r.name())
}

func (pol *Policy) bounds() (lo, hi corev1.ResourceList) {
	if pol == nil {
		return nil, nil
	}
	return pol.MinAllowed, pol.MaxAllowed
}

// refuseBestEffort is the refusal for any wish on a BestEffort pod: giving
// it a request or a limit would make it Burstable.
func refuseBestEffort(t *target) *Refusal {
	return refuse(ReasonQoSChange, t.name(), "the pod is BestEffort; giving it a request or limit would make it Burstable, and the API server rejects a resize that changes the QoS class")
}

// applyPolicy turns a target request into new values under the policy.
func (p *planner) applyPolicy(t *target) *Refusal {
	pol := t.wish.Policy
	lo, hi := pol.bounds()
	for _, r := range resources {
		q, ok := t.wish.Target[r.name()]
		if !ok {
			continue
		}
		if !pol.controls(r) {
			p.note(t, r, NotControlled, "%s target %s ignored: %s is not a controlled resource", r.name(), q.String(), r.name())
			continue
		}
		if p.qos == corev1.PodQOSBestEffort {
			return refuseBestEffort(t)
		}
		want := toUnits(r, q)
		if min, ok := unitsOf(lo, r); ok && want < min {
			p.note(t, r, RaisedToMinAllowed, "%s target %s raised to minAllowed %s", r.name(), format(r, want), format(r, min))
			want = min
		}
		if max, ok := unitsOf(hi, r); ok && want > max {
			p.note(t, r, CappedToMaxAllowed, "%s target %s capped to maxAllowed %s", r.name(), format(r, want), format(r, max))
			want = max
		}
		cur := t.cur[r]
		if t.podLevel && !cur.req.set {
			// Pod-level values are resized, never added (checkPodLevel).
			p.note(t, r, NotControlled, "%s target %s ignored: the pod sets no pod-level %s request", r.name(), q.String(), r.name())
			continue
		}
		next := pair{req: some(want), lim: cur.lim}
		var refusal *Refusal
		if r == memory {
			if next.req, refusal = p.lowerMemory(t, cur.req, next.req, false); refusal != nil {
				return refusal
			}
		}
		mode := pol.mode()
		// A Guaranteed container stays Guaranteed: under RequestsOnly its
		// limit follows its request. Holding the limit would cap every
		// increase at the current value and turn every decrease into a QoS
		// change the API server rejects, so a literal RequestsOnly could only
		// hold; VPA, which holds the limit, falls back to eviction instead.
		follow := mode == RequestsOnly && p.qos == corev1.PodQOSGuaranteed && cur.lim.set
		if follow {
			mode = RequestsAndLimits
		}
		if mode == RequestsAndLimits && cur.lim.set && cur.req.set && cur.req.units > 0 {
			next.lim = some(mulDivCeil(next.req.units, cur.lim.units, cur.req.units))
			if r == memory {
				if next.lim, refusal = p.lowerMemory(t, cur.lim, next.lim, true); refusal != nil {
					return refusal
				}
				if !follow && p.qos != corev1.PodQOSGuaranteed {
					next.lim = p.limitFloor(t, cur.lim, next.lim)
				}
			}
		}
		if follow && next.lim != cur.lim {
			p.note(t, r, LimitFollowsRequest, "%s limit set to %s with its request: the pod is Guaranteed and stays so", r.name(), format(r, next.lim.units))
		}
		if next.lim.set && next.req.units > next.lim.units {
			p.note(t, r, CappedToLimit, "%s request %s capped to its limit %s", r.name(), format(r, next.req.units), format(r, next.lim.units))
			next.req.units = next.lim.units
		}
		t.next[r] = next
	}
	return nil
}

// applyExplicit takes explicit requests and limits, moving a Guaranteed
// pod's request and limit together.
func (p *planner) applyExplicit(t *target) *Refusal {
	for _, r := range resources {
		rq, hasReq := t.wish.Requests[r.name()]
		lq, hasLim := t.wish.Limits[r.name()]
		if !hasReq && !hasLim {
			continue
		}
		if p.qos == corev1.PodQOSBestEffort {
			return refuseBestEffort(t)
		}
		cur := t.cur[r]
		next := cur
		if hasReq {
			next.req = some(toUnits(r, rq))
		}
		if hasLim {
			next.lim = some(toUnits(r, lq))
		}
		if p.qos == corev1.PodQOSGuaranteed {
			switch {
			case hasReq && hasLim && next.req.units != next.lim.units:
				return refuse(ReasonQoSChange, t.name(), "the pod is Guaranteed, so its %s request (%s) and limit (%s) must stay equal", r.name(), format(r, next.req.units), format(r, next.lim.units))
			case hasReq:
				next.lim = next.req
			case hasLim:
				next.req = next.lim
			}
		}
		if next.lim.set && !cur.lim.set && !next.req.set {
			return refuse(ReasonKeyChange, t.name(), "a %s limit would be added without a request; the API server would set the request to the limit", r.name())
		}
		if r == memory {
			var refusal *Refusal
			if next.req, refusal = p.lowerMemory(t, cur.req, next.req, false); refusal != nil {
				return refusal
			}
			if next.lim, refusal = p.lowerMemory(t, cur.lim, next.lim, true); refusal != nil {
				return refusal
			}
		}
		if next.req.set && next.lim.set && next.req.units > next.lim.units {
			return refuse(ReasonRequestAboveLimit, t.name(), "the %s request %s would be above its limit %s", r.name(), format(r, next.req.units), format(r, next.lim.units))
		}
		t.next[r] = next
	}
	return nil
}

// limitFloor stops a memory limit decrease at Usage.MemoryLimitFloorBytes
// (never above the old limit).
func (p *planner) limitFloor(t *target, old, wished amount) amount {
	floor := p.in.Usage[t.name()].MemoryLimitFloorBytes
	if !old.set || !wished.set || wished.units >= old.units || floor <= wished.units {
		return wished
	}
	kept := min(old.units, floor)
	p.note(t, memory, KeptAtLimitFloor, "memory limit kept at %s, not %s: a request is what the node reserves; the limit stays at the %s it had", format(memory, kept), format(memory, wished.units), format(memory, floor))
	wished.units = kept
	return wished
}

// memoryUsage returns the container's memory usage in bytes (the larger of
// working set and peak) and whether it is known.
func (p *planner) memoryUsage(t *target) (int64, bool) {
	u, ok := p.in.Usage[t.name()]
	if !ok {
		return 0, false
	}
	bytes := max(u.MemoryWorkingSetBytes, u.MemoryPeakBytes)
	return bytes, bytes > 0
}

// lowerMemory bounds a memory decrease (or an added memory limit, a decrease
// from unlimited). Increases pass unchanged. A decrease stops at one step
// (MaxMemoryDecreaseFraction of the old value) and at usage * (1 +
// MemoryHeadroom), but never rises above the old value. Without a usage
// figure a limit is refused and a request is lowered by the step alone.
func (p *planner) lowerMemory(t *target, old, wished amount, isLimit bool) (amount, *Refusal) {
	what := "request"
	if isLimit {
		what = "limit"
	}
	if !wished.set || (old.set && wished.units >= old.units) || (!old.set && !isLimit) {
		return wished, nil
	}
	usage, known := p.memoryUsage(t)
	floor := scaleCeil(usage, 1+p.opts.MemoryHeadroom)
	if !old.set {
		if !known {
			return wished, refuse(ReasonUsageUnknown, t.name(), "adding a memory limit of %s needs the container's memory usage, which is unknown, so an OOM kill cannot be ruled out", format(memory, wished.units))
		}
		if wished.units < floor {
			p.note(t, memory, KeptAboveUsage, "new memory limit %s raised to %s, usage %s plus %.0f%% headroom", format(memory, wished.units), format(memory, floor), format(memory, usage), p.opts.MemoryHeadroom*100)
			wished.units = floor
		}
		return wished, nil
	}
	if isLimit && !known {
		return wished, refuse(ReasonUsageUnknown, t.name(), "lowering the memory limit from %s to %s needs the container's memory usage, which is unknown; snug never lowers a memory limit it cannot check against usage", format(memory, old.units), format(memory, wished.units))
	}
	step := scaleCeil(old.units, 1-p.opts.MaxMemoryDecreaseFraction)
	switch {
	case known && floor >= step && wished.units < floor:
		kept := min(old.units, floor)
		p.note(t, memory, KeptAboveUsage, "memory %s kept at %s, not %s: usage %s plus %.0f%% headroom", what, format(memory, kept), format(memory, wished.units), format(memory, usage), p.opts.MemoryHeadroom*100)
		wished.units = kept
	case wished.units < step:
		p.note(t, memory, DecreaseStepLimited, "memory %s decrease from %s to %s limited to one step of %.0f%%: %s", what, format(memory, old.units), format(memory, wished.units), p.opts.MaxMemoryDecreaseFraction*100, format(memory, step))
		wished.units = step
	}
	if !known && wished.units < old.units {
		p.note(t, memory, LoweredWithoutUsage, "memory request lowered from %s to %s without a usage figure (limits are never lowered without one)", format(memory, old.units), format(memory, wished.units))
	}
	return wished, nil
}
