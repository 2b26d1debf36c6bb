package resize

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ComputeQoS returns the pod's QoS class computed from its spec, the way the
// API server's ComputePodQOS does (k8s.io/kubernetes
// pkg/apis/core/v1/helper/qos, 1.35) with the PodLevelResources feature on:
//
//   - Only cpu and memory count, and only quantities above zero.
//   - Regular and init containers (sidecar or not) all count; ephemeral
//     containers cannot have resources.
//   - BestEffort: no container has a cpu or memory request or limit.
//   - Guaranteed: every container has a cpu and a memory limit and, summed
//     over the containers, requests equal limits for cpu and memory. As a
//     request may not exceed its limit, that means request == limit in every
//     container.
//   - Burstable: anything else.
//
// When pod-level resources (spec.resources) are set they decide instead.
// The API server compares the stored status.qosClass of the old pod (see
// currentQoS) with this class of the new one; a resize that changes it is
// rejected.
func ComputeQoS(pod *corev1.Pod) corev1.PodQOSClass {
	requests := map[corev1.ResourceName]*resource.Quantity{}
	limits := map[corev1.ResourceName]*resource.Quantity{}
	guaranteed := true
	add := func(into map[corev1.ResourceName]*resource.Quantity, list corev1.ResourceList) (found map[corev1.ResourceName]bool) {
		found = map[corev1.ResourceName]bool{}
		for name, q := range list {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				continue
			}
			if q.Sign() <= 0 {
				continue
			}
			found[name] = true
			if sum, ok := into[name]; ok {
				sum.Add(q)
			} else {
				c := q.DeepCopy()
				into[name] = &c
			}
		}
		return found
	}
	if pod.Spec.Resources != nil {
		add(requests, pod.Spec.Resources.Requests)
		if len(pod.Spec.Resources.Limits) > 0 {
			found := add(limits, pod.Spec.Resources.Limits)
			if !found[corev1.ResourceCPU] || !found[corev1.ResourceMemory] {
				guaranteed = false
			}
		}
	} else {
		all := append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...)
		for i := range all {
			add(requests, all[i].Resources.Requests)
			found := add(limits, all[i].Resources.Limits)
			if !found[corev1.ResourceCPU] || !found[corev1.ResourceMemory] {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(*req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// currentQoS is the class the API server holds the pod to: the stored
// status.qosClass, or the computed one when the status has none (GetPodQOS).
func currentQoS(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputeQoS(pod)
}

// hasPodLevelResources reports whether spec.resources sets a resource that
// pod-level resources support (cpu, memory, hugepages-*).
func hasPodLevelResources(pod *corev1.Pod) bool {
	if pod.Spec.Resources == nil {
		return false
	}
	for _, list := range []corev1.ResourceList{pod.Spec.Resources.Requests, pod.Spec.Resources.Limits} {
		for name := range list {
			if podLevelResource(name) {
				return true
			}
		}
	}
	return false
}

func podLevelResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory ||
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}
