package resize

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Namespace is what the pod's namespace constrains a resize to. The API
// server checks both on the resize subresource: a resize past a
// ResourceQuota is refused ("exceeded quota"), as is one outside a
// LimitRange.
type Namespace struct {
	// QuotaRoom is what the namespace's ResourceQuotas that apply to the
	// pod still allow, by quota key (cpu, memory, requests.cpu,
	// requests.memory, limits.cpu, limits.memory), as QuotaRoom computes
	// it. A key not present is not limited.
	QuotaRoom corev1.ResourceList
	// LimitRanges are the namespace's LimitRanges; their Container and Pod
	// items apply.
	LimitRanges []corev1.LimitRange
}

// QuotaRoom returns, per compute key, the least that any of quotas applying
// to pod still allows: status.hard minus status.used. A quota whose status
// the quota controller has not written yet allows nothing (the API server
// refuses every charge against it until then). Keys other than cpu and
// memory ones are left out: a resize charges nothing else.
func QuotaRoom(pod *corev1.Pod, quotas []corev1.ResourceQuota) corev1.ResourceList {
	room := corev1.ResourceList{}
	for i := range quotas {
		q := &quotas[i]
		if !quotaApplies(pod, q) {
			continue
		}
		for key := range q.Spec.Hard {
			if _, ok := quotaResource(key); !ok {
				continue
			}
			left := resource.Quantity{}
			if hard, ok := q.Status.Hard[key]; ok {
				left = hard.DeepCopy()
				if used, ok := q.Status.Used[key]; ok {
					left.Sub(used)
				}
			}
			if cur, ok := room[key]; !ok || left.Cmp(cur) < 0 {
				room[key] = left
			}
		}
	}
	return room
}

// quotaResource returns the resource a compute quota key charges, for the
// keys a resize can change.
func quotaResource(key corev1.ResourceName) (res, bool) {
	switch key {
	case corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU:
		return cpu, true
	case corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory:
		return memory, true
	}
	return 0, false
}

// quotaApplies reports whether quota q counts pod, by its scopes and scope
// selector, as the API server's pod evaluator matches them. Hand-written:
// the evaluator lives in k8s.io/kubernetes, which snug does not import.
func quotaApplies(pod *corev1.Pod, q *corev1.ResourceQuota) bool {
	for _, s := range q.Spec.Scopes {
		if !podMatchesScope(pod, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists}) {
			return false
		}
	}
	if q.Spec.ScopeSelector != nil {
		for _, req := range q.Spec.ScopeSelector.MatchExpressions {
			if !podMatchesScope(pod, req) {
				return false
			}
		}
	}
	return true
}

func podMatchesScope(pod *corev1.Pod, req corev1.ScopedResourceSelectorRequirement) bool {
	switch req.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
	case corev1.ResourceQuotaScopeNotTerminating:
		return pod.Spec.ActiveDeadlineSeconds == nil || *pod.Spec.ActiveDeadlineSeconds < 0
	case corev1.ResourceQuotaScopeBestEffort:
		return currentQoS(pod) == corev1.PodQOSBestEffort
	case corev1.ResourceQuotaScopeNotBestEffort:
		return currentQoS(pod) != corev1.PodQOSBestEffort
	case corev1.ResourceQuotaScopePriorityClass:
		name := pod.Spec.PriorityClassName
		switch req.Operator {
		case corev1.ScopeSelectorOpExists:
			return name != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return name == ""
		case corev1.ScopeSelectorOpIn:
			return slices.Contains(req.Values, name)
		case corev1.ScopeSelectorOpNotIn:
			return !slices.Contains(req.Values, name)
		}
		return false
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod)
	}
	return false
}

// crossNamespaceAffinity reports whether a pod (anti-)affinity term of pod
// names other namespaces or selects namespaces.
func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if pa := a.PodAffinity; pa != nil {
		terms = append(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if pa := a.PodAntiAffinity; pa != nil {
		terms = append(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if len(t.Namespaces) > 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

// podLimits returns the pod's limit of r as the quota adds it up (as
// podRequests adds requests: containersTotal, plus overhead), and false if
// a container the sum needs has no limit of r.
func podLimits(pod *corev1.Pod, r res) (int64, bool) {
	if l, ok := podLevelLimit(pod, r); ok {
		// A pod-level limit is the pod's limit (the quota's PodLimits).
		over, _ := unitsOf(pod.Spec.Overhead, r)
		return l + over, true
	}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if _, ok := unitsOf(cs[i].Resources.Limits, r); !ok {
				return 0, false
			}
		}
	}
	limits := func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits }
	total := containersTotal(pod, limits, limits)
	addList(total, pod.Spec.Overhead)
	sum, _ := unitsOf(total, r)
	return sum, true
}

// grows reports whether the plan raises r's request or limit of any
// container.
func (p *planner) grows(r res) bool {
	for _, t := range p.targets {
		if t.next[r].req.units > t.cur[r].req.units || t.next[r].lim.units > t.cur[r].lim.units {
			return true
		}
	}
	return false
}

// fitNamespace fits the plan to the namespace: each changed container
// into the LimitRanges' Container items, then the pod's increases into the
// Pod items and the remaining quota, cutting every container's increase by
// the same fraction (as capToRoom does for the node). A resource with no
// room left loses its whole increase; the plan's other changes stay. It
// refuses with ReasonQuotaFull when that leaves the plan changing nothing.
func (p *planner) fitNamespace() *Refusal {
	ns := p.in.Namespace
	if ns == nil {
		return nil
	}
	for _, t := range p.targets {
		if !t.podLevel { // the LimitRanges' Pod items bound it, below
			p.fitContainerRanges(t, ns.LimitRanges)
		}
	}
	var full []string // resources whose whole increase was cut
	for _, r := range resources {
		curReq, _ := unitsOf(podRequests(p.pod, false), r)
		curLim, limOK := podLimits(p.pod, r)
		type bound struct {
			limits bool
			room   int64
			what   string
		}
		var bounds []bound
		for key, q := range ns.QuotaRoom {
			kr, ok := quotaResource(key)
			if !ok || kr != r {
				continue
			}
			room := toUnits(r, q)
			if strings.HasPrefix(string(key), "limits.") {
				if limOK {
					bounds = append(bounds, bound{true, curLim + max(room, 0), fmt.Sprintf("the namespace's ResourceQuota (%s: %s left)", key, format(r, room))})
				}
				continue
			}
			bounds = append(bounds, bound{false, curReq + max(room, 0), fmt.Sprintf("the namespace's ResourceQuota (%s: %s left)", key, format(r, room))})
		}
		for _, lr := range ns.LimitRanges {
			for _, it := range lr.Spec.Limits {
				if it.Type != corev1.LimitTypePod {
					continue
				}
				if m, ok := unitsOf(it.Max, r); ok {
					bounds = append(bounds, bound{false, max(m, curReq), fmt.Sprintf("LimitRange %s (pod max %s)", lr.Name, format(r, m))})
					if limOK {
						bounds = append(bounds, bound{true, max(m, curLim), fmt.Sprintf("LimitRange %s (pod max %s)", lr.Name, format(r, m))})
					}
				}
			}
		}
		fits := func() (bool, string) {
			pod := p.apply()
			req, _ := unitsOf(podRequests(pod, false), r)
			lim, _ := podLimits(pod, r)
			for _, b := range bounds {
				if (!b.limits && req > b.room) || (b.limits && lim > b.room) {
					return false, b.what
				}
			}
			return true, ""
		}
		ok, what := fits()
		if ok {
			continue
		}
		if !p.grows(r) {
			// Nothing this plan adds: the namespace is over already (a
			// quota lowered under its use); a decrease still helps.
			continue
		}
		p.capFraction(r, func() bool { ok, _ := fits(); return ok })
		for _, t := range p.targets {
			if t.next[r] != t.wanted[r] {
				p.note(t, r, CappedToNamespace, "%s increase to %s cut to %s to fit %s", r.name(), format(r, t.wanted[r].req.units), format(r, t.next[r].req.units), what)
			}
		}
		if !p.grows(r) {
			full = append(full, fmt.Sprintf("no %s increase fits %s", r.name(), what))
		}
	}
	if len(full) > 0 && !p.changes() {
		return refuse(ReasonQuotaFull, "", "%s", strings.Join(full, "; "))
	}
	return nil
}

// changes reports whether the plan still changes any value.
func (p *planner) changes() bool {
	for _, t := range p.targets {
		for _, r := range resources {
			if t.next[r] != t.cur[r] {
				return true
			}
		}
	}
	return false
}

// fitContainerRanges brings the changed values of one container within
// the LimitRanges' Container items: at most max (request and limit), at
// least min, and a limit at most maxLimitRequestRatio times its request
// (the request raised to fit). Values the plan does not change are left as
// they are.
func (p *planner) fitContainerRanges(t *target, ranges []corev1.LimitRange) {
	for _, lr := range ranges {
		for _, it := range lr.Spec.Limits {
			if it.Type != corev1.LimitTypeContainer {
				continue
			}
			for _, r := range resources {
				cur, next := t.cur[r], t.next[r]
				if cur == next {
					continue
				}
				if m, ok := unitsOf(it.Max, r); ok {
					if next.lim.set && next.lim.units > m && next.lim != cur.lim {
						if next.req.set && next.req.units > 0 {
							next.req.units = max(1, mulDivFloor(next.req.units, m, next.lim.units))
						}
						next.lim.units = m
						p.note(t, r, CappedToNamespace, "%s limit cut to %s, LimitRange %s's container max", r.name(), format(r, m), lr.Name)
					}
					if next.req.set && next.req.units > m && next.req != cur.req {
						next.req.units = m
						p.note(t, r, CappedToNamespace, "%s request cut to %s, LimitRange %s's container max", r.name(), format(r, m), lr.Name)
					}
				}
				if m, ok := unitsOf(it.Min, r); ok {
					if next.req.set && next.req.units < m && next.req != cur.req {
						was := next.req.units
						next.req.units = min(m, max(cur.req.units, next.req.units))
						if next.lim.set && next.lim != cur.lim && was > 0 {
							// The limit moved with the request: keep its ratio.
							next.lim.units = mulDivCeil(next.lim.units, next.req.units, was)
						}
						p.note(t, r, RaisedToNamespace, "%s request raised to %s, LimitRange %s's container min", r.name(), format(r, next.req.units), lr.Name)
					}
					if next.lim.set && next.lim.units < m && next.lim != cur.lim {
						next.lim.units = min(m, max(cur.lim.units, next.lim.units))
						p.note(t, r, RaisedToNamespace, "%s limit raised to %s, LimitRange %s's container min", r.name(), format(r, next.lim.units), lr.Name)
					}
				}
				if q, ok := it.MaxLimitRequestRatio[r.name()]; ok && q.MilliValue() > 0 && next.req.set && next.lim.set && next.req.units > 0 {
					// The least request the ratio (limit / request, a
					// decimal quantity) allows under this limit.
					need := mulDivCeil(next.lim.units, 1000, q.MilliValue())
					if need > next.req.units && need <= next.lim.units {
						next.req.units = need
						p.note(t, r, RaisedToNamespace, "%s request raised to %s: LimitRange %s allows a limit at most %s times the request", r.name(), format(r, need), lr.Name, q.String())
					}
				}
				if next.req.set && next.lim.set && next.req.units > next.lim.units {
					next.req.units = next.lim.units
				}
				t.next[r] = next
			}
		}
	}
}

// capFraction keeps the largest common fraction of every container's
// increase of r for which fits holds (the capped values in t.next, what
// was wanted in t.wanted).
func (p *planner) capFraction(r res, fits func() bool) {
	for _, t := range p.targets {
		t.wanted[r] = t.next[r]
	}
	try := func(f int64) bool {
		for _, t := range p.targets {
			t.next[r] = p.capPair(t, r, f)
		}
		return fits()
	}
	lo, hi := int64(0), int64(capScale)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if try(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	try(lo)
}
