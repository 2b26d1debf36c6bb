package agent

import (
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
)

// Pod-level resources (spec.resources, Kubernetes 1.34+) bound the pod
// cgroup. The agent reads that cgroup as one more container named
// resize.PodLevel, learns it with its own recommender like any container,
// and resizes the pod-level values in place (resize.Options
// PodLevelResize). A resource the pod sets at the pod level is sized there
// only: its containers' own values of it are left as they are.

// podLevelSet returns the resources (cpu, memory) the pod sets at the pod
// level, requests or limits; nil for none.
func podLevelSet(pod *corev1.Pod) []corev1.ResourceName {
	rr := pod.Spec.Resources
	if rr == nil {
		return nil
	}
	var out []corev1.ResourceName
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		_, req := rr.Requests[r]
		_, lim := rr.Limits[r]
		if req || lim {
			out = append(out, r)
		}
	}
	return out
}

// podLevelID is the pod cgroup's stand-in for a container ID: it lives as
// long as the pod.
func podLevelID(uid types.UID) string { return "pod://" + string(uid) }

// podLevelActual are the pod's actual pod-level requests and limits
// (resize.PodLevelActual: allocated requests, the pod cgroup's limits), or
// its spec where the kubelet reports no pod-level status.
func podLevelActual(pod *corev1.Pod) recommend.Resources {
	rr := podLevelActualLists(pod)
	return resourcesOf(rr.Requests, rr.Limits)
}

// podLevelActualLists is podLevelActual as requests and limits lists:
// resize.PodLevelActual, else the spec.
func podLevelActualLists(pod *corev1.Pod) corev1.ResourceRequirements {
	if a := resize.PodLevelActual(pod); a != nil {
		return *a
	}
	if pod.Spec.Resources == nil {
		return corev1.ResourceRequirements{}
	}
	return *pod.Spec.Resources
}

// podLevelUnsupported reports whether a refusal says that the cluster does
// not resize pods with pod-level resources: the API server with
// InPlacePodLevelResourcesVerticalScaling off ("resize of pods with
// pod-level resources is forbidden when
// InPlacePodLevelResourcesVerticalScalingEnabled feature gate is
// disabled", 1.35-1.37) or the kubelet with it off (Infeasible,
// "InPlacePodLevelResourcesVerticalScaling is disabled").
func podLevelUnsupported(msg string) bool {
	return strings.Contains(msg, "resize of pods with pod-level resources is forbidden") ||
		strings.Contains(msg, "InPlacePodLevelResourcesVerticalScaling is disabled")
}

// podLevelTarget keeps of the pod level's target only what the pod sets
// at the pod level, less what a pod-level limit change would restart a
// container for (resize.PodLevelRestarts: restart windows are per
// container): the planner changes pod-level values, never adds one.
func podLevelTarget(pod *corev1.Pod, t corev1.ResourceList) {
	set := podLevelSet(pod)
	for r := range t {
		if !slices.Contains(set, r) || resize.PodLevelRestarts(pod, r) != "" {
			delete(t, r)
		}
	}
}

// holdPodLevel holds a container's changes of the resources its pod sets
// at the pod level (WhyPodLevel): they are sized on the pod level, and a
// container's own wish for them (a restart window among them) would never
// be sent.
func holdPodLevel(pod *corev1.Pod, dec recommend.Decision, actual recommend.Resources) recommend.Decision {
	for _, r := range podLevelSet(pod) {
		ch, request, limit, memory := &dec.CPU, actual.CPURequestMillis, actual.CPULimitMillis, false
		if r == corev1.ResourceMemory {
			ch, request, limit, memory = &dec.Memory, actual.MemRequestBytes, actual.MemLimitBytes, true
		}
		if ch.Action == recommend.Hold {
			continue
		}
		*ch = recommend.Change{Action: recommend.Hold, Request: request, Limit: limit,
			Reason: recommend.Reason{Why: recommend.WhyPodLevel, Memory: memory, Request: request}}
	}
	return dec
}

// notePodLevelOff says once per pod (an event and the log) that the
// cluster does not resize it, a pod with pod-level resources.
func (d *Decider) notePodLevelOff(log logr.Logger, st *podState, pod *corev1.Pod) {
	if st.podLevelNoted {
		return
	}
	st.podLevelNoted = true
	d.event(pod, corev1.EventTypeWarning, ReasonPodLevelResources, "the pod sets pod-level resources ("+st.podLevel+"), and this cluster does not resize such pods in place: "+d.podLevelOff+"; snug leaves the pod as it is")
	log.Info("pod-level resources not resizable in this cluster; leaving the pod alone", "pod", st.ns+"/"+st.name, "podLevel", st.podLevel, "refusal", d.podLevelOff)
}
