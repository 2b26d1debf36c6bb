//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/agent"
)

// TestNamespaceQuota is issue 31's quota case against the real API server
// (its quota and LimitRanger admission on pods/resize) and kubelet, with
// snug installed by its chart: a pod throttled at its 500m limit, in a
// namespace whose ResourceQuota allows 600m of cpu limits, is grown once
// to what the quota has left, with one FittedToNamespace event and no
// refusal, the pod's NamespaceLimited condition saying why, and then held
// (the recommender capped) while it stays throttled. The same for a
// LimitRange's container max.
func TestNamespaceQuota(t *testing.T) {
	pc := installPolicyCRD(t)
	ag := installSnug(t, snugInstall{})
	for _, tc := range []struct {
		name             string
		req, lim         string
		quota, maxCPU    string
		wantReq          int64
		wantLimit        int64
		wantEventMention string
	}{
		{name: "quota", req: "250m", lim: "500m", quota: "600m", wantReq: 300, wantLimit: 600, wantEventMention: "limits.cpu: 100m left"},
		{name: "limit range", req: "100m", lim: "200m", maxCPU: "300m", wantReq: 150, wantLimit: 300, wantEventMention: "container max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			ns := testNamespace(t, "snug-quota-")
			if tc.quota != "" {
				q := &corev1.ResourceQuota{
					ObjectMeta: metav1.ObjectMeta{Name: "cpu"},
					Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceLimitsCPU: resource.MustParse(tc.quota)}},
				}
				if _, err := client.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				// Pods are refused until the quota controller has written
				// the quota's status.
				waitFor(t, "the quota's status", time.Minute, func() (bool, error) {
					q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, "cpu", metav1.GetOptions{})
					return err == nil && q.Status.Hard != nil, err
				})
			}
			if tc.maxCPU != "" {
				lr := &corev1.LimitRange{
					ObjectMeta: metav1.ObjectMeta{Name: "lr"},
					Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
						Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(tc.maxCPU)},
					}}},
				}
				if _, err := client.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			labels := map[string]string{"snug-e2e": "quota"}
			createPolicy(t, pc, ns, "quota", v1alpha1.SnugPolicySpec{
				Selector:     &metav1.LabelSelector{MatchLabels: labels},
				UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
			})
			created := time.Now()
			pod := createLoadPod(t, ns, loadPod{name: "load", labels: labels, args: []string{"--cpu=900m"},
				cpuRequest: tc.req, cpuLimit: tc.lim, memRequest: "32Mi", memLimit: "64Mi"})
			id := getPod(t, ns, pod).Status.ContainerStatuses[0].ContainerID

			// Fitted once, then held: three samples after the resize at the
			// new limit, still throttled, decided Capped.
			c := ag.waitAutoscale(t, ns, pod, 2*time.Minute, func(c agent.ContainerJSON) bool {
				rs := appliedAfter(c.Autoscale, created)
				if len(rs) == 0 || c.Autoscale.LastDecision == nil || c.Autoscale.LastDecision.CPU.Why != "Capped" {
					return false
				}
				return len(ratePointsAfter(c.History, rs[len(rs)-1].AppliedAt.Add(time.Second))) >= 3
			})
			for _, r := range c.Autoscale.Resizes {
				t.Logf("resize %s: %s", r.Outcome, r.Plan)
			}
			if d := c.Autoscale.LastDecision; d != nil {
				t.Logf("last decision: cpu %s %s", d.CPU.Why, d.CPU.Reason)
			}
			rs := appliedAfter(c.Autoscale, created)
			if len(c.Autoscale.Resizes) != 1 || len(rs) != 1 {
				t.Fatalf("%d resizes (%d applied), want the one fitted", len(c.Autoscale.Resizes), len(rs))
			}
			got := rs[0].Containers["app"]
			// The limit cut to the room, the request by the same fraction
			// of its increase (the limit stays twice the request).
			if got.CPURequestMillicores != tc.wantReq || got.CPULimitMillicores != tc.wantLimit {
				t.Errorf("cpu %dm/%dm after the fit, want %dm/%dm", got.CPURequestMillicores, got.CPULimitMillicores, tc.wantReq, tc.wantLimit)
			}
			p := getPod(t, ns, pod)
			if l := p.Spec.Containers[0].Resources.Limits.Cpu().MilliValue(); l != tc.wantLimit {
				t.Errorf("pod's spec cpu limit %dm, want %dm", l, tc.wantLimit)
			}
			last := c.History[len(c.History)-1]
			t.Logf("NAMESPACE %s %s: cpu %s/%s -> %dm/%dm in one resize, decided %.2fs after the pod was created; still throttled %.2f at the new limit, held (%s)",
				labOpts.KubernetesVersion, tc.name, tc.req, tc.lim, got.CPURequestMillicores, got.CPULimitMillicores,
				rs[0].DecidedAt.Sub(created).Seconds(), *last.CPUThrottledFraction, c.Autoscale.LastDecision.CPU.Why)

			e := waitEvent(t, ns, pod, agent.ReasonFittedToNamespace)
			if !strings.Contains(e.Message, tc.wantEventMention) {
				t.Errorf("event %q, want it to name %q", e.Message, tc.wantEventMention)
			}
			list, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range list.Items {
				if ev.InvolvedObject.Name != pod {
					continue
				}
				switch ev.Reason {
				case agent.ReasonFittedToNamespace:
					if ev.Count > 1 {
						t.Errorf("event %s recorded %d times, want once", ev.Reason, ev.Count)
					}
				case agent.ReasonResizeRefused, agent.ReasonNamespaceFull, agent.ReasonResized:
					t.Errorf("event %s %s: %s, want only the fit", ev.Type, ev.Reason, ev.Message)
				}
			}
			// The condition, written by the agent, kept by the kubelet.
			var cond corev1.PodCondition
			waitFor(t, "the pod's "+string(agent.ConditionNamespaceLimited)+" condition", time.Minute, func() (bool, error) {
				for _, c := range getPod(t, ns, pod).Status.Conditions {
					if c.Type == agent.ConditionNamespaceLimited {
						cond = c
						return true, nil
					}
				}
				return false, nil
			})
			t.Logf("condition %s %s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
			if cond.Status != corev1.ConditionTrue || cond.Reason != agent.ReasonFittedToNamespace || !strings.Contains(cond.Message, tc.wantEventMention) {
				t.Errorf("condition %s %s %s %q, want True %s naming %q", cond.Type, cond.Status, cond.Reason, cond.Message, agent.ReasonFittedToNamespace, tc.wantEventMention)
			}
			assertInPlace(t, ns, pod, id, corev1.PodQOSBurstable)
		})
	}
}
