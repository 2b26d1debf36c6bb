package resize

import (
	corev1 "k8s.io/api/core/v1"
)

// capScale is the resolution of the fraction of an increase NoRoomCap keeps.
const capScale = 1 << 40

// fitNode predicts whether the kubelet will grant the new requests, and
// refuses, caps or lets them through as Options.NoRoom says. Only resources
// whose pod total grows are judged: a decrease needs no room.
//
// It mirrors the kubelet's checks (allocation manager, 1.35): Infeasible
// when the pod's requests alone exceed allocatable, Deferred when they do not
// fit beside the other pods. OthersClaimed is the scheduler's view (see
// Claimed), at least as large as the kubelet's, so the prediction errs
// towards Deferred.
func (p *planner) fitNode() *Refusal {
	alloc := p.in.NodeAllocatable
	if alloc == nil {
		p.note(nil, cpu, NodeRoomUnchecked, "node allocatable unknown: node room not checked")
		return nil
	}
	curTotal := podRequests(p.pod, false)
	newTotal := podRequests(p.apply(), false)
	type shortfall struct {
		r                            res
		need, alloc, others, reserve int64
		// room is what a cap lets the pod have: the kubelet's room, or
		// with a reserve that room less it, never below what it has.
		room       int64
		infeasible bool
	}
	var short, reserved []shortfall
	for _, r := range resources {
		need, _ := unitsOf(newTotal, r)
		have, _ := unitsOf(curTotal, r)
		allocUnits, ok := unitsOf(alloc, r)
		if need <= have || !ok {
			continue
		}
		others, _ := unitsOf(p.in.OthersClaimed, r)
		reserve, _ := unitsOf(p.in.Reserve, r)
		if r == memory {
			// A memory grow cut short is an OOM kill now, to spare a
			// preemption that may come later: memory leaves no reserve.
			reserve = 0
		}
		s := shortfall{r: r, need: need, alloc: allocUnits, others: others, reserve: reserve, room: allocUnits - others, infeasible: need > allocUnits}
		if reserve > 0 {
			s.room = max(s.room-reserve, have)
		}
		switch {
		case need > allocUnits || need > allocUnits-others:
			short = append(short, s)
		case p.opts.NoRoom == NoRoomCap && need > s.room:
			// The kubelet would grant it; a higher-priority pod's
			// replacement would then preempt this pod.
			reserved = append(reserved, s)
		}
	}
	for _, s := range reserved {
		p.capToRoom(s.r, s.room, "to leave "+format(s.r, s.reserve)+" free for the replacement of a higher-priority pod on the node")
	}
	if len(short) == 0 {
		return nil
	}
	for _, s := range short {
		if s.infeasible {
			p.predicted = WouldBeInfeasible
		} else if p.predicted != WouldBeInfeasible {
			p.predicted = WouldDefer
		}
	}
	switch p.opts.NoRoom {
	case NoRoomSend:
		for _, s := range short {
			p.note(nil, s.r, NoRoomSentAnyway, "the pod would request %s %s but only %s of the node's allocatable %s is free; sent anyway, expect %s", format(s.r, s.need), s.r.name(), format(s.r, max(s.alloc-s.others, 0)), format(s.r, s.alloc), p.predicted.Outcome())
		}
		return nil
	case NoRoomCap:
		for _, s := range short {
			why := "to fit on the node"
			if s.reserve > 0 {
				why += " and leave " + format(s.r, s.reserve) + " free for the replacement of a higher-priority pod"
			}
			p.capToRoom(s.r, s.room, why)
		}
		p.predicted = WouldApply
		return nil
	}
	for _, s := range short {
		if s.infeasible {
			return refuse(ReasonWouldBeInfeasible, "", "the pod would request %s %s, more than the node's allocatable %s", format(s.r, s.need), s.r.name(), format(s.r, s.alloc))
		}
	}
	s := short[0]
	return refuse(ReasonWouldDefer, "", "the pod would request %s %s, but other pods claim %s of the node's allocatable %s", format(s.r, s.need), s.r.name(), format(s.r, s.others), format(s.r, s.alloc))
}

// capToRoom keeps the largest common fraction of every container's increase
// of r such that the pod's total request of r fits in room; why ends the
// note ("to fit on the node").
func (p *planner) capToRoom(r res, room int64, why string) {
	p.capFraction(r, func() bool {
		total, _ := unitsOf(podRequests(p.apply(), false), r)
		return total <= room
	})
	for _, t := range p.targets {
		if t.next[r] != t.wanted[r] {
			p.note(t, r, CappedToNodeRoom, "%s request increase to %s cut to %s %s", r.name(), format(r, t.wanted[r].req.units), format(r, t.next[r].req.units), why)
		}
	}
}

// capPair keeps f/capScale of the wanted increase of r's request and scales
// a limit the plan raised with it, keeping the wanted ratio (equal in a
// Guaranteed pod) and never going below the current limit.
func (p *planner) capPair(t *target, r res, f int64) pair {
	w, c := t.wanted[r], t.cur[r]
	if !w.req.set || (c.req.set && w.req.units <= c.req.units) {
		return w
	}
	out := w
	base := int64(0)
	if c.req.set {
		base = c.req.units
	}
	v := base + mulDivFloor(w.req.units-base, f, capScale)
	if !c.req.set && v == 0 {
		out.req = amount{}
	} else {
		out.req = some(v)
	}
	if out.req.set && w.lim.set && c.lim.set && w.lim.units > c.lim.units {
		if p.qos == corev1.PodQOSGuaranteed {
			out.lim = out.req
		} else {
			out.lim = some(max(c.lim.units, mulDivCeil(out.req.units, w.lim.units, w.req.units)))
		}
	}
	if out.req.set && out.lim.set && out.req.units > out.lim.units {
		out.req.units = out.lim.units
	}
	return out
}

// keepQoS refuses plans that change the QoS class, except that a Burstable
// pod about to become Guaranteed keeps one request one unit below its limit.
func (p *planner) keepQoS() *Refusal {
	got := ComputeQoS(p.apply())
	if got == p.qos {
		return nil
	}
	if p.qos == corev1.PodQOSBurstable && got == corev1.PodQOSGuaranteed && p.keepBurstable() {
		if ComputeQoS(p.apply()) == p.qos {
			return nil
		}
	}
	return refuse(ReasonQoSChange, "", "the new resources would make pod %s %s, but it is %s, and the API server rejects a resize that changes the QoS class", p.pod.Name, got, p.qos)
}

// keepBurstable lowers one request to one unit below its limit. It prefers a
// request the plan already changes, and cpu (1m) over memory (1 byte), so no
// new resource is touched when it can be helped.
func (p *planner) keepBurstable() bool {
	try := func(t *target, r res) bool {
		pr := t.next[r]
		if !pr.req.set || !pr.lim.set || pr.lim.units < 2 {
			return false
		}
		pr.req.units = pr.lim.units - 1
		t.next[r] = pr
		p.note(t, r, KeptBurstable, "%s request set to %s, %s below its limit %s, so the pod stays Burstable", r.name(), format(r, pr.req.units), r.unit(), format(r, pr.lim.units))
		return true
	}
	for _, t := range p.targets {
		for _, r := range resources {
			if t.next[r].req != t.cur[r].req && try(t, r) {
				return true
			}
		}
	}
	for _, t := range p.targets {
		if t.changed() && try(t, cpu) {
			return true
		}
	}
	return false
}
