package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
)

// Restart windows (docs/controller.md, "Restart windows"): the agent asks
// for one on a pod (policy.ConditionRestartWanted) when a change to a
// RestartContainer resource is worth a restart; the controller, which sees
// every pod of the policy, grants at most one at a time
// (policy.ConditionRestartGranted) and takes it back when the agent is done
// or after policy.RestartGrantTTL.

// Reasons of policy.ConditionRestartGranted.
const (
	reasonWindowGranted = "Granted"
	reasonWindowClosed  = "Closed"
	reasonWindowExpired = "Expired"
	reasonWindowRevoked = "NoWindow"
)

// windowChange is one write of a pod's RestartGranted condition.
type windowChange struct {
	pod     *corev1.Pod
	grant   bool
	reason  string
	message string
}

// windowPlan is what planWindows decides for a policy's pods.
type windowPlan struct {
	// revoke are grants to take back.
	revoke []windowChange
	// candidates are the pods that may be granted a window now, the
	// longest asking first; the caller grants the first that its
	// PodDisruptionBudgets allow.
	candidates []*corev1.Pod
	// refused says why no pod may be granted one (event for the metric),
	// when pods ask and none is a candidate.
	refused, why string
	// recheckAfter, when positive, is when the plan may change by time
	// alone (a grant expires).
	recheckAfter time.Duration
}

// expiredPause is how long no window is granted after one expired: the
// agent of the expired pod stops using a grant restartGrantMargin (30 s)
// before its expiry, and a resize it sent may still be on its way.
const expiredPause = 30 * time.Second

// planWindows decides the restart windows of a policy's pods (pods: all
// it governs). hasWindow is whether the policy has updatePolicy.
// restartWindow (and does not yield to a VPA). A grant is taken back when
// the policy no longer has a window, when the pod no longer asks (the
// agent restarted the container, or the change is no longer wanted:
// Closed) and after policy.RestartGrantTTL (Expired). While one is
// granted, or a pod has a restarting resize not applied yet (its
// RestartContainer resources differ between spec and status: the kubelet
// may still restart it), none is granted anew: one pod of a policy at a
// time; nor in the expiredPause after a grant expired. A pod that asks is
// a candidate when it is not being deleted, every other pod of the policy
// is Ready and not being deleted, and it is not the policy's only running
// pod (unless singleReplica).
func planWindows(w policy.RestartWindow, hasWindow bool, pods []*corev1.Pod, now time.Time) windowPlan {
	var plan windowPlan
	active := false
	for _, pod := range pods {
		if restartInFlight(pod) {
			active = true
			if slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return policy.PodConditionTrue(p, policy.ConditionRestartWanted) }) {
				plan.refused, plan.why = "inflight", fmt.Sprintf("pod %s has a resize of a RestartContainer resource the kubelet has not applied", pod.Name)
			}
		}
		g := policy.PodCondition(pod, policy.ConditionRestartGranted)
		if g == nil || g.Status != corev1.ConditionTrue {
			if g != nil && g.Reason == reasonWindowExpired && now.Sub(g.LastTransitionTime.Time) < expiredPause {
				active = true
				if left := expiredPause - now.Sub(g.LastTransitionTime.Time); plan.recheckAfter == 0 || left < plan.recheckAfter {
					plan.recheckAfter = left
				}
			}
			continue
		}
		age := now.Sub(g.LastTransitionTime.Time)
		switch {
		case !hasWindow:
			plan.revoke = append(plan.revoke, windowChange{pod: pod, reason: reasonWindowRevoked, message: "the policy has no restartWindow"})
		case !policy.PodConditionTrue(pod, policy.ConditionRestartWanted):
			plan.revoke = append(plan.revoke, windowChange{pod: pod, reason: reasonWindowClosed, message: "closed, the agent no longer asks; granted: " + g.Message})
		case age >= policy.RestartGrantTTL:
			plan.revoke = append(plan.revoke, windowChange{pod: pod, reason: reasonWindowExpired,
				message: fmt.Sprintf("not used within %s", policy.RestartGrantTTL)})
			active = true // no grant until expiredPause has passed
			plan.recheckAfter = expiredPause
		default:
			active = true
			if left := policy.RestartGrantTTL - age; plan.recheckAfter == 0 || left < plan.recheckAfter {
				plan.recheckAfter = left
			}
		}
	}
	if !hasWindow || active {
		if !hasWindow {
			plan.refused = ""
		}
		return plan
	}
	var asking []*corev1.Pod
	for _, pod := range pods {
		if pod.DeletionTimestamp == nil && policy.PodConditionTrue(pod, policy.ConditionRestartWanted) &&
			!slices.ContainsFunc(plan.revoke, func(r windowChange) bool { return r.pod.UID == pod.UID }) {
			asking = append(asking, pod)
		}
	}
	if len(asking) == 0 {
		return plan
	}
	// The longest asking first; a pod whose window expired unused goes
	// behind the others (its agent may be gone), counted from the expiry.
	since := func(p *corev1.Pod) time.Time {
		at := policy.PodCondition(p, policy.ConditionRestartWanted).LastTransitionTime.Time
		if g := policy.PodCondition(p, policy.ConditionRestartGranted); g != nil && g.Reason == reasonWindowExpired && g.LastTransitionTime.After(at) {
			at = g.LastTransitionTime.Time
		}
		return at
	}
	slices.SortFunc(asking, func(a, b *corev1.Pod) int {
		if c := since(a).Compare(since(b)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	running := 0
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	for _, pod := range asking {
		if running <= 1 && !w.SingleReplica {
			plan.refused, plan.why = "single", fmt.Sprintf("pod %s is the policy's only running pod and restartWindow.singleReplica is false", pod.Name)
			continue
		}
		if other := notReadyOther(pod, pods); other != "" {
			plan.refused, plan.why = "notready", other
			continue
		}
		plan.candidates = append(plan.candidates, pod)
	}
	return plan
}

// restartInFlight reports whether a container of pod has a resize of a
// RestartContainer resource that the kubelet has not applied yet: spec and
// status differ for it. The kubelet may still apply it, restarting the
// container, so the policy's next window waits (snug's agent takes back the
// restarting part of its own such resize when its window closes). An
// Infeasible resize is never applied as it is, and is not waited for.
func restartInFlight(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonInfeasible {
			return false
		}
	}
	for i := range pod.Spec.Containers {
		if policy.RestartResizePending(pod, pod.Spec.Containers[i].Name) {
			return true
		}
	}
	return false
}

// notReadyOther says which of pods other than pod is not Ready or is being
// deleted, "" when none.
func notReadyOther(pod *corev1.Pod, pods []*corev1.Pod) string {
	for _, o := range pods {
		if o.UID == pod.UID {
			continue
		}
		if o.DeletionTimestamp != nil {
			return fmt.Sprintf("pod %s is being deleted", o.Name)
		}
		if !podReady(o) {
			return fmt.Sprintf("pod %s is not Ready", o.Name)
		}
	}
	return ""
}

// maxRestartRecords is how many restarts a policy's status.restarts keeps.
const maxRestartRecords = 10

// closedRestarts are the restarts the policy's pods show: a window closed
// (RestartGranted False, reason Closed) after the agent said the container
// restarted (RestartWanted False, reason Restarted), timed by the close. A
// pod shows its last one until its next window, so the records are read
// from the pods (idempotent: a reconcile whose status write failed finds
// them again), not from the close.
func closedRestarts(pods []*corev1.Pod) []v1alpha1.RestartRecord {
	var out []v1alpha1.RestartRecord
	for _, pod := range pods {
		g := policy.PodCondition(pod, policy.ConditionRestartGranted)
		w := policy.PodCondition(pod, policy.ConditionRestartWanted)
		if g == nil || w == nil || g.Status != corev1.ConditionFalse || g.Reason != reasonWindowClosed ||
			w.Status != corev1.ConditionFalse || w.Reason != v1alpha1.PodReasonRestarted {
			continue
		}
		out = append(out, v1alpha1.RestartRecord{PodName: pod.Name, Time: g.LastTransitionTime, Message: truncate(g.Message, 1024)})
	}
	return out
}

// withRestarts is records with those of closed it lacks added (a record is
// its pod and time), oldest first, the oldest dropped beyond
// maxRestartRecords; one older than every record kept when the list is
// full was dropped before and is not added again. Unchanged, it returns
// records itself.
func withRestarts(records, closed []v1alpha1.RestartRecord) []v1alpha1.RestartRecord {
	var out []v1alpha1.RestartRecord
	for _, r := range closed {
		list := records
		if out != nil {
			list = out
		}
		if slices.ContainsFunc(list, func(o v1alpha1.RestartRecord) bool { return o.PodName == r.PodName && o.Time.Equal(&r.Time) }) {
			continue
		}
		if len(list) >= maxRestartRecords && !r.Time.After(list[0].Time.Time) {
			continue
		}
		out = append(slices.Clone(list), r)
		slices.SortStableFunc(out, func(a, b v1alpha1.RestartRecord) int { return a.Time.Compare(b.Time.Time) })
		if n := len(out) - maxRestartRecords; n > 0 {
			out = out[n:]
		}
	}
	if out == nil {
		return records
	}
	return out
}

// restartWindows applies planWindows to p's pods: it takes back the grants
// that ended and grants the first candidate its PodDisruptionBudgets allow
// a disruption of (an Eviction with dryRun: All, which the API server
// answers as it would a real one, without evicting). It returns when to
// look again by time alone (0: no need).
func (c *Controller) restartWindows(ctx context.Context, p *v1alpha1.SnugPolicy, pods []*corev1.Pod, yields bool, now time.Time) time.Duration {
	key := p.Namespace + "/" + p.Name
	if c.grantUnseen(key, pods, now) {
		return time.Second // until the cache shows the last grant
	}
	w, ok := policy.RestartWindowOf(p)
	ok = ok && !yields // a policy that yields to a VPA changes no pod
	plan := planWindows(w, ok, pods, now)
	log := klog.FromContext(ctx)
	for _, r := range plan.revoke {
		if err := setGranted(ctx, c.cs, r, now); err != nil {
			c.metrics.restartWindows.WithLabelValues(p.Namespace, p.Name, "error").Inc()
			log.Error(err, "taking back a restart window", "pod", klog.KObj(r.pod))
			return 10 * time.Second
		}
		event := map[string]string{reasonWindowClosed: "closed", reasonWindowExpired: "expired", reasonWindowRevoked: "revoked"}[r.reason]
		c.metrics.restartWindows.WithLabelValues(p.Namespace, p.Name, event).Inc()
		log.Info("restart window ended", "pod", klog.KObj(r.pod), "reason", r.reason)
	}
	if plan.refused != "" && len(plan.candidates) == 0 {
		c.metrics.restartWindows.WithLabelValues(p.Namespace, p.Name, plan.refused).Inc()
		log.V(1).Info("no restart window", "why", plan.why)
	}
	retry := time.Duration(0)
	for _, pod := range plan.candidates {
		blocked, err := evictDryRun(ctx, c.cs, pod)
		switch {
		case blocked:
			c.metrics.restartWindows.WithLabelValues(p.Namespace, p.Name, "pdb").Inc()
			log.V(1).Info("no restart window: a PodDisruptionBudget allows no disruption now", "pod", klog.KObj(pod), "err", err)
			retry = blockedRetry
			continue
		case err != nil:
			c.metrics.restartWindows.WithLabelValues(p.Namespace, p.Name, "error").Inc()
			log.Error(err, "asking the PodDisruptionBudgets for a restart window", "pod", klog.KObj(pod))
			if retry == 0 {
				retry = 30 * time.Second
			}
			continue
		}
		wanted := policy.PodCondition(pod, policy.ConditionRestartWanted)
		msg := fmt.Sprintf("one pod of policy %s at a time; the others are Ready and the PodDisruptionBudgets allow a disruption (%s)", p.Name, wanted.Message)
		if err := setGranted(ctx, c.cs, windowChange{pod: pod, grant: true, reason: reasonWindowGranted, message: msg}, now); err != nil {
			c.metrics.restartWindows.WithLabelValues(p.Namespace, p.Name, "error").Inc()
			log.Error(err, "granting a restart window", "pod", klog.KObj(pod))
			return 10 * time.Second
		}
		c.mu.Lock()
		c.granted[key] = grantMark{pod: pod.UID, at: now}
		c.mu.Unlock()
		c.metrics.restartWindows.WithLabelValues(p.Namespace, p.Name, "granted").Inc()
		log.Info("restart window granted", "pod", klog.KObj(pod), "wanted", wanted.Message)
		c.recorder.Eventf(pod, corev1.EventTypeNormal, EventRestartWindow, "snug policy %s lets the agent restart the pod's container to resize it: %s", p.Name, wanted.Message)
		return policy.RestartGrantTTL
	}
	if retry > 0 && (plan.recheckAfter == 0 || retry < plan.recheckAfter) {
		return retry
	}
	return plan.recheckAfter
}

// grantMark is a restart window this controller granted: the pod and when.
type grantMark struct {
	pod types.UID
	at  time.Time
}

// grantMarkTTL bounds how long a grant the cache does not show holds the
// policy's windows (the pod went, or the patch was lost).
const grantMarkTTL = 30 * time.Second

// grantUnseen reports whether the last grant this controller made for the
// policy key is not in its cache yet (the pod's RestartGranted True, from
// the grant's second on: the API keeps whole seconds): the reconcile then
// plans no window, as the cache would show none granted. The mark goes
// once seen, or after grantMarkTTL.
func (c *Controller) grantUnseen(key string, pods []*corev1.Pod, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.granted[key]
	if !ok {
		return false
	}
	for _, pod := range pods {
		if pod.UID != m.pod {
			continue
		}
		if g := policy.PodCondition(pod, policy.ConditionRestartGranted); g != nil && g.Status == corev1.ConditionTrue &&
			!g.LastTransitionTime.Time.Before(m.at.Truncate(time.Second)) {
			delete(c.granted, key)
			return false
		}
	}
	if now.Sub(m.at) >= grantMarkTTL {
		delete(c.granted, key)
		return false
	}
	return true
}

// truncate is s cut to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// setGranted writes the pod's RestartGranted condition: a strategic merge
// patch of its status (conditions merge on their type).
func setGranted(ctx context.Context, cs kubernetes.Interface, ch windowChange, now time.Time) error {
	status := corev1.ConditionFalse
	if ch.grant {
		status = corev1.ConditionTrue
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
		Type: policy.ConditionRestartGranted, Status: status, Reason: ch.reason, Message: ch.message, LastTransitionTime: metav1.NewTime(now),
	}}}})
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Pods(ch.pod.Namespace).Patch(ctx, ch.pod.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil // gone: nothing to grant or take back
	}
	return err
}

// evictDryRun asks the API server whether pod may be disrupted now: an
// Eviction with dryRun All is answered as a real one (429 while a
// PodDisruptionBudget allows no disruption) and evicts nothing.
func evictDryRun(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) (blocked bool, err error) {
	err = cs.CoreV1().Pods(pod.Namespace).EvictV1(ctx, evictionOf(pod, true))
	switch {
	case err == nil:
		return false, nil
	case apierrors.IsTooManyRequests(err):
		return true, err
	default:
		return false, fmt.Errorf("asking about an eviction of pod %s/%s (dry run): %w", pod.Namespace, pod.Name, err)
	}
}
