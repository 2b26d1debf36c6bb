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
// limits are status.resources', read back from the pod cgroup. Requests are
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
	for name := range spec.Limits {
		if q, ok := pod.Status.Resources.Limits[name]; ok {
			if out.Limits == nil {
				out.Limits = corev1.ResourceList{}
			}
			out.Limits[name] = q.DeepCopy()
		}
	}
	return out
}
