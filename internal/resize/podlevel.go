package resize

import (
	corev1 "k8s.io/api/core/v1"
)

// fitContainers keeps a pod-level target's values at what the pod's
// containers ask for (as the plan leaves them), as the API server's
// validation of pod-level resources requires: each pod-level request at
// least the containers' aggregate request (containersTotal, the sum the
// kubelet and the scheduler make), each pod-level limit at least every
// container's limit. A value the plan does not change is left alone.
func (p *planner) fitContainers() *Refusal {
	var pt *target
	for _, t := range p.targets {
		if t.podLevel {
			pt = t
		}
	}
	if pt == nil {
		return nil
	}
	pod := p.apply()
	requests := func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }
	aggregate := containersTotal(pod, requests, requests)
	for _, r := range resources {
		next := pt.next[r]
		if next == pt.cur[r] {
			continue
		}
		if need, ok := unitsOf(aggregate, r); ok && next.req.set && next.req.units < need {
			p.note(pt, r, KeptAboveContainers, "%s request kept at %s, not %s: the containers' requests add up to %s", r.name(), format(r, need), format(r, next.req.units), format(r, need))
			next.req.units = need
		}
		if next.lim.set {
			need := int64(0)
			for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for i := range list {
					if l, ok := unitsOf(list[i].Resources.Limits, r); ok && l > need {
						need = l
					}
				}
			}
			if next.lim.units < need {
				p.note(pt, r, KeptAboveContainers, "%s limit kept at %s, not %s: a container's limit is %s", r.name(), format(r, need), format(r, next.lim.units), format(r, need))
				next.lim.units = need
			}
		}
		if next.req.set && next.lim.set && next.req.units > next.lim.units {
			next.lim.units = next.req.units
		}
		pt.next[r] = next
	}
	return nil
}

// podLevelLimit returns the pod-level limit of r, if the pod sets one.
func podLevelLimit(pod *corev1.Pod, r res) (int64, bool) {
	if pod.Spec.Resources == nil {
		return 0, false
	}
	return unitsOf(pod.Spec.Resources.Limits, r)
}

// PodLevelActual returns the pod-level resources the kubelet reports as
// applied, for the resources the pod sets at the pod level; nil when the
// kubelet reports no pod-level status (InPlacePodLevelResourcesVerticalScaling
// off on the node, or a pod not started). Requests are the allocated ones
// (status.allocatedResources, the pod's total request, less overhead);
// limits are status.resources', read back from the pod cgroup (a memory
// limit within a page below the spec's counts as the spec's). Requests are
// not taken from status.resources: the 1.35 and 1.36 kubelets keep
// reporting a running pod's old memory request there (memory requests are
// not written to cgroups), and a CPU request read back from cgroup v2's
// cpu.weight is rounded; the kubelet clears PodResizeInProgress only once
// the pod cgroup matches the allocation.
func PodLevelActual(pod *corev1.Pod) *corev1.ResourceRequirements {
	spec := pod.Spec.Resources
	if spec == nil || pod.Status.AllocatedResources == nil || pod.Status.Resources == nil {
		return nil
	}
	out := &corev1.ResourceRequirements{}
	for name := range spec.Requests {
		q, ok := pod.Status.AllocatedResources[name]
		if !ok {
			continue
		}
		q = q.DeepCopy()
		if o, ok := pod.Spec.Overhead[name]; ok {
			q.Sub(o)
		}
		if out.Requests == nil {
			out.Requests = corev1.ResourceList{}
		}
		out.Requests[name] = q
	}
	for name, want := range spec.Limits {
		q, ok := pod.Status.Resources.Limits[name]
		if !ok {
			continue
		}
		if out.Limits == nil {
			out.Limits = corev1.ResourceList{}
		}
		out.Limits[name] = q.DeepCopy()
		if name == corev1.ResourceMemory {
			// The pod cgroup keeps whole pages: a limit within a page below
			// the spec's is the spec's.
			if short := want.Value() - q.Value(); short >= 0 && short < pageTolerance {
				out.Limits[name] = want.DeepCopy()
			}
		}
	}
	return out
}

// checkPodLevel keeps the API server's rules for pod-level resources on
// the final values: a pod-level value is changed, never added (the API
// server would also default a request from an added limit), and the
// containers' aggregate requests stay within the pod-level requests and
// each container's limit within the pod-level limit (containers a plan
// grows beside the pod level, node or namespace cuts after fitContainers).
func (p *planner) checkPodLevel() *Refusal {
	if !hasPodLevelResources(p.pod) {
		return nil
	}
	for _, t := range p.targets {
		if !t.podLevel {
			continue
		}
		for _, r := range resources {
			cur, next := t.cur[r], t.next[r]
			if !cur.req.set && next.req.set {
				return refuse(ReasonKeyChange, PodLevel, "the pod sets no pod-level %s request; snug resizes pod-level values, it never adds one", r.name())
			}
			if !cur.lim.set && next.lim.set {
				return refuse(ReasonKeyChange, PodLevel, "the pod sets no pod-level %s limit; snug resizes pod-level values, it never adds one", r.name())
			}
		}
	}
	pod := p.apply()
	requests := func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }
	aggregate := containersTotal(pod, requests, requests)
	pv := readValues(*pod.Spec.Resources)
	for _, r := range resources {
		if need, ok := unitsOf(aggregate, r); ok && pv[r].req.set && pv[r].req.units < need {
			return refuse(ReasonPodLevelConflict, "", "the containers' %s requests would add up to %s, above the pod-level request %s", r.name(), format(r, need), format(r, pv[r].req.units))
		}
		if !pv[r].lim.set {
			continue
		}
		for _, c := range pod.Spec.Containers {
			if l, ok := unitsOf(c.Resources.Limits, r); ok && l > pv[r].lim.units {
				return refuse(ReasonPodLevelConflict, c.Name, "container %q's %s limit %s would be above the pod-level limit %s", c.Name, r.name(), format(r, l), format(r, pv[r].lim.units))
			}
		}
	}
	return nil
}

// pageTolerance is the most a memory limit read back from a cgroup can
// fall short of the one written: the kernel keeps it in whole pages,
// rounded down (64 KiB, the largest page size Linux uses).
const pageTolerance = 64 << 10

// revertPodLevel is Revert's edit of the pod-level resources: back to what
// the kubelet reports as applied (PodLevelActual); nil when it reports
// nothing or they match.
func revertPodLevel(pod, reverted *corev1.Pod) (*containerEdit, error) {
	spec := pod.Spec.Resources
	got := PodLevelActual(pod)
	if spec == nil || got == nil {
		return nil, nil
	}
	cur, act := readValues(*spec), readValues(*got)
	next := cur
	for _, r := range resources {
		// A value the kubelet does not report stays as the spec has it.
		if act[r].req.set {
			next[r].req = act[r].req
		}
		if act[r].lim.set {
			next[r].lim = act[r].lim
		}
	}
	if next == cur {
		return nil, nil
	}
	rr := writeValues(*spec, next)
	reverted.Spec.Resources = &rr
	return &containerEdit{base: "/spec", name: PodLevel, podLevel: true, cur: *spec, next: rr}, nil
}
