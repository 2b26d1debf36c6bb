//go:build e2e

package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/resize"
)

// TestPodLevelResources: a pod sized at the pod level only (spec.resources
// cpu 100m/200m and memory 64Mi/128Mi, request/limit; its container sets
// none) under an InPlace policy, its load asking for 600m, so the pod
// cgroup is throttled at its 200m limit.
//
// On 1.36 and later (InPlacePodLevelResourcesVerticalScaling beta, on by
// default) snug grows the pod-level cpu in place: once, applied, the pod's
// spec.resources and the kubelet's status.resources (read back from the
// pod cgroup) show the new limit, the container still has no resources of
// its own and did not restart, and `snug status` shows the pod level's
// row Synced. On 1.35 (the feature alpha and off) the API server refuses
// any resize of such a pod; snug says so in one PodLevelResources event
// and leaves the pod as it is.
func TestPodLevelResources(t *testing.T) {
	pc := installPolicyCRD(t)
	ag := installSnug(t, snugInstall{})
	ns := testNamespace(t, "snug-podlevel-")
	labels := map[string]string{"snug-e2e": "podlevel"}
	createPolicy(t, pc, ns, "podlevel", v1alpha1.SnugPolicySpec{
		Selector:     &metav1.LabelSelector{MatchLabels: labels},
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
	})
	created := time.Now()
	podRes := &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	pod := createLoadPod(t, ns, loadPod{name: "load", labels: labels, args: []string{"--cpu=600m"}, podResources: podRes})

	if minor := serverMinor(t); minor < 36 {
		e := waitEvent(t, ns, pod, "PodLevelResources")
		if !strings.Contains(e.Message, "this cluster does not resize such pods in place") || !strings.Contains(e.Message, "forbidden") {
			t.Errorf("event %q: want it to say that the cluster does not resize the pod, with the API server's refusal", e.Message)
		}
		p := getPod(t, ns, pod)
		if got := p.Spec.Resources.Limits.Cpu().String(); got != "200m" {
			t.Errorf("pod-level cpu limit %s, want the 200m it was created with", got)
		}
		if n := countEvents(t, ns, pod, "PodLevelResources"); n != 1 {
			t.Errorf("%d PodLevelResources events, want 1", n)
		}
		return
	}

	var grown agent.ResizeJSON
	waitFor(t, "the pod level grown in place", 2*time.Minute, func() (bool, error) {
		c, err := ag.api().Container(t.Context(), ns, pod, resize.PodLevel, agent.Query{Limit: 5})
		if errors.Is(err, agent.ErrNotSampled) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		for _, r := range appliedAfter(c.Autoscale, created) {
			if r.Containers[resize.PodLevel].CPULimitMillicores > 200 {
				grown = r
				return true, nil
			}
		}
		return false, nil
	})
	got := grown.Containers[resize.PodLevel]
	t.Logf("resize: %s; decision->applied %.2fs", grown.Plan, grown.DecisionToAppliedSeconds)
	p := getPod(t, ns, pod)
	spec := p.Spec.Resources
	if spec == nil || spec.Limits.Cpu().MilliValue() != got.CPULimitMillicores || spec.Requests.Cpu().MilliValue() != got.CPURequestMillicores {
		t.Errorf("pod spec.resources %+v, want the applied cpu %dm/%dm", spec, got.CPURequestMillicores, got.CPULimitMillicores)
	}
	if st := p.Status.Resources; st == nil || st.Limits.Cpu().MilliValue() != got.CPULimitMillicores {
		t.Errorf("pod status.resources %+v, want the pod cgroup at the cpu limit %dm", st, got.CPULimitMillicores)
	}
	if a := p.Status.AllocatedResources; a.Cpu().MilliValue() != got.CPURequestMillicores {
		t.Errorf("pod status.allocatedResources cpu %s, want %dm", a.Cpu(), got.CPURequestMillicores)
	}
	c := p.Spec.Containers[0]
	if len(c.Resources.Requests)+len(c.Resources.Limits) != 0 {
		t.Errorf("container app has resources %+v of its own now, want none: the pod is sized at the pod level", c.Resources)
	}
	if rc := p.Status.ContainerStatuses[0].RestartCount; rc != 0 {
		t.Errorf("container restarted %d times, want none: an in-place resize", rc)
	}
	for _, cond := range p.Status.Conditions {
		if (cond.Type == corev1.PodResizePending || cond.Type == corev1.PodResizeInProgress) && cond.Status == corev1.ConditionTrue {
			t.Errorf("pod condition %s %s: %s, want none once applied", cond.Type, cond.Reason, cond.Message)
		}
	}
	out, errOut, code := runSnug(t, "status", "-n", ns)
	t.Logf("snug status:\n%s", out)
	if code != 0 || !containsLine(out, "load", resize.PodLevelDisplay, "Synced") {
		t.Errorf("snug status (exit %d, stderr %q): want the pod level's row (pod) Synced", code, errOut)
	}
}

// countEvents counts the events with reason about the named object.
func countEvents(t *testing.T, ns, object, reason string) int {
	t.Helper()
	list, err := client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.InvolvedObject.Name == object && e.Reason == reason {
			n += max(int(e.Count), 1)
		}
	}
	return n
}

// containsLine reports whether a line of out has every field, in order.
func containsLine(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		i := 0
		for _, w := range f {
			if i < len(fields) && w == fields[i] {
				i++
			}
		}
		if i == len(fields) {
			return true
		}
	}
	return false
}
