package resize

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Claimed returns the resources the given pods claim on their node, as the
// scheduler counts them (NodeResourcesFit with in-place resize, 1.35):
//
//   - Pods in phase Succeeded or Failed, and the pod whose UID is exclude,
//     are skipped.
//   - Each regular and sidecar (restartable init) container claims, per
//     resource, the largest of its spec requests, its allocated resources
//     (status allocatedResources) and its actual requests
//     (status.resources.requests); while the pod's resize is Infeasible the
//     spec is left out of that maximum, since the kubelet will not grant it.
//   - A pod claims the larger of the sum over its regular and sidecar
//     containers and, for each non-sidecar init container, that container's
//     requests plus the sidecars started before it.
//   - Pod-level requests (spec.resources.requests), when set, replace the
//     container sum for the resources they name.
//   - spec.overhead is added.
//
// Every resource name is summed, not only cpu and memory. The result is
// never nil. Claimed does not look at spec.nodeName: pass the pods of one
// node.
func Claimed(pods []corev1.Pod, exclude types.UID) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range pods {
		pod := &pods[i]
		if exclude != "" && pod.UID == exclude {
			continue
		}
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		addList(total, podRequests(pod, true))
	}
	return total
}

// PreemptionReserve returns the room a grow of pod should leave free on its
// node: per resource, the largest claim (as Claimed counts it) of another
// pod there whose priority is higher than pod's and which may preempt
// (spec.preemptionPolicy is not Never). Such a pod's replacement (a rolling
// update's surge pod, a DaemonSet's new pod, a controller's replica made
// again) needs its room; on a node that a grow has filled, the scheduler
// makes that room by preempting a lower-priority pod, the grown one
// included, which is the restart in-place resizing is there to avoid. The
// largest, not the sum: rollouts replace one pod at a time. Pods in phase
// Succeeded or Failed and pod itself are skipped; terminating pods count
// (their replacement is the one coming). The result is never nil.
func PreemptionReserve(pods []corev1.Pod, pod *corev1.Pod) corev1.ResourceList {
	reserve := corev1.ResourceList{}
	own := priority(pod)
	for i := range pods {
		o := &pods[i]
		if o.UID == pod.UID || o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed {
			continue
		}
		if priority(o) <= own || (o.Spec.PreemptionPolicy != nil && *o.Spec.PreemptionPolicy == corev1.PreemptNever) {
			continue
		}
		maxList(reserve, podRequests(o, true))
	}
	return reserve
}

// priority is the pod's resolved priority (spec.priority, set at admission
// from its priority class; 0 when unset).
func priority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority == nil {
		return 0
	}
	return *pod.Spec.Priority
}

// SpecRequests returns the pod's requests as the kubelet adds them up to
// judge a resize it is asked for: from the spec only (containers, init
// containers and sidecars as Claimed combines them, pod-level requests,
// overhead). It is the "requested" figure of the kubelet's Deferred and
// Infeasible messages ("Node didn't have enough resource: cpu, requested:
// 700, ..."), in millicores and bytes.
func SpecRequests(pod *corev1.Pod) corev1.ResourceList { return podRequests(pod, false) }

// podRequests returns the pod's requests as the scheduler and the kubelet
// add them up (see Claimed). With useStatus false only the spec counts, which
// is how the kubelet judges a resize it is asked to make.
func podRequests(pod *corev1.Pod, useStatus bool) corev1.ResourceList {
	statuses := map[string]*corev1.ContainerStatus{}
	if useStatus {
		for i := range pod.Status.ContainerStatuses {
			statuses[pod.Status.ContainerStatuses[i].Name] = &pod.Status.ContainerStatuses[i]
		}
		for i := range pod.Status.InitContainerStatuses {
			statuses[pod.Status.InitContainerStatuses[i].Name] = &pod.Status.InitContainerStatuses[i]
		}
	}
	infeasible := resizePendingReason(pod) == corev1.PodReasonInfeasible
	effective := func(c *corev1.Container) corev1.ResourceList {
		cs, ok := statuses[c.Name]
		if !ok || cs.Resources == nil {
			return c.Resources.Requests
		}
		out := corev1.ResourceList{}
		if !infeasible {
			maxList(out, c.Resources.Requests)
		}
		maxList(out, cs.Resources.Requests)
		maxList(out, cs.AllocatedResources)
		return out
	}

	reqs := containersTotal(pod, effective, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
	if pod.Spec.Resources != nil {
		for name, q := range pod.Spec.Resources.Requests {
			if podLevelResource(name) {
				reqs[name] = q.DeepCopy()
			}
		}
	}
	addList(reqs, pod.Spec.Overhead)
	return reqs
}

// containersTotal adds up the containers' lists as the scheduler and the
// kubelet do: the regular containers and sidecars (running) summed, and at
// least each init container (initList) plus the sidecars started before it.
// Pod-level resources and overhead are the caller's.
func containersTotal(pod *corev1.Pod, running, initList func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addList(total, running(&pod.Spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	inits := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if isSidecar(c) {
			r := running(c)
			addList(total, r)
			addList(sidecars, r)
			maxList(inits, sidecars)
			continue
		}
		r := corev1.ResourceList{}
		addList(r, initList(c))
		addList(r, sidecars)
		maxList(inits, r)
	}
	maxList(total, inits)
	return total
}

// isSidecar reports whether an init container is restartable (a sidecar).
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// resizePendingReason returns the reason of the PodResizePending condition,
// or "" when there is none.
func resizePendingReason(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending {
			return c.Reason
		}
	}
	return ""
}

func addList(into, list corev1.ResourceList) {
	for name, q := range list {
		sum, ok := into[name]
		if !ok {
			into[name] = q.DeepCopy()
			continue
		}
		sum.Add(q)
		into[name] = sum
	}
}

func maxList(into, list corev1.ResourceList) {
	for name, q := range list {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}

// unitsOf returns the units of r in list, and whether list has r.
func unitsOf(list corev1.ResourceList, r res) (int64, bool) {
	q, ok := list[r.name()]
	if !ok {
		return 0, false
	}
	return toUnits(r, q), true
}
