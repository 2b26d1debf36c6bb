package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
)

// evictRules is what a policy says about evicting for a Deferred resize.
type evictRules struct {
	mode         v1alpha1.UpdateMode
	action       v1alpha1.DeferredAction
	afterSeconds int32
	minReplicas  int32
}

// rulesOf reads the eviction rules of a policy through internal/policy
// (the agent's reading and defaults).
func rulesOf(p *v1alpha1.SnugPolicy) evictRules {
	d := policy.DeferredOf(p)
	return evictRules{mode: policy.UpdateMode(p), action: d.Action, afterSeconds: int32(d.After / time.Second), minReplicas: policy.MinReplicas(p)}
}

// verdict is the answer of mayEvict.
type verdict struct {
	// evict is true when the pod may be evicted now (the API server may
	// still refuse for a PodDisruptionBudget).
	evict bool
	// why says in words why not, or why.
	why string
	// recheckAfter, when positive, is when the answer may change by time
	// alone (the deferral ages).
	recheckAfter time.Duration
}

// podReady reports whether the pod is Ready and not being deleted.
func podReady(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// mayEvict decides whether snug may evict pod now to end a Deferred resize.
// pods are all the pods the policy governs (pod among them). It allows an
// eviction only under InPlaceOrRecreate with deferred action Evict, once
// the resize has been Deferred for afterSeconds, while at least minReplicas
// of the pods are Ready (updatePolicy.minReplicas: the fewest running pods
// for snug to evict one, as VPA's updater) and none is being deleted, so
// that one eviction completes before the next. PodDisruptionBudgets are
// left to the API server: the caller evicts through the Eviction API.
func mayEvict(r evictRules, pod *corev1.Pod, pods []*corev1.Pod, now time.Time) verdict {
	if r.mode != v1alpha1.UpdateModeInPlaceOrRecreate || r.action != v1alpha1.DeferredActionEvict {
		return verdict{why: "the policy does not evict for a deferred resize"}
	}
	if pod.DeletionTimestamp != nil {
		return verdict{why: "the pod is being deleted"}
	}
	if rr := pod.Spec.Resources; rr != nil && (len(rr.Requests) > 0 || len(rr.Limits) > 0) {
		// Its replacement would come back at the template's pod-level
		// values: the webhook sizes containers only.
		return verdict{why: "the pod sets pod-level resources, which an eviction would not resize"}
	}
	since, ok := policy.DeferredSince(pod)
	if !ok {
		return verdict{why: "the pod has no deferred resize"}
	}
	after := time.Duration(r.afterSeconds) * time.Second
	if age := now.Sub(since); age < after {
		return verdict{why: fmt.Sprintf("deferred for %s, under %s", age.Round(time.Second), after), recheckAfter: after - age}
	}
	ready := 0
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			return verdict{why: fmt.Sprintf("pod %s is being deleted; one eviction at a time", p.Name)}
		}
		if podReady(p) {
			ready++
		}
	}
	if int32(ready) < r.minReplicas {
		return verdict{why: fmt.Sprintf("%d ready pods, under minReplicas %d", ready, r.minReplicas)}
	}
	return verdict{evict: true, why: fmt.Sprintf("resize deferred since %s, over afterSeconds %d; %d ready pods, minReplicas %d",
		since.UTC().Format(time.RFC3339), r.afterSeconds, ready, r.minReplicas)}
}

// evictionOf is the Eviction of pod, with the pod's UID as precondition (a
// replacement with the same name is safe); dryRun asks without evicting.
func evictionOf(pod *corev1.Pod, dryRun bool) *policyv1.Eviction {
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(pod.UID)}},
	}
	if dryRun {
		ev.DeleteOptions.DryRun = []string{metav1.DryRunAll}
	}
	return ev
}

// evictPod asks the API server to evict pod through the Eviction API, so
// that its PodDisruptionBudgets are enforced. The UID precondition keeps a
// replacement with the same name safe. blocked is true when a budget (or
// the API server's eviction rate) refused it for now.
func evictPod(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) (blocked bool, err error) {
	err = cs.CoreV1().Pods(pod.Namespace).EvictV1(ctx, evictionOf(pod, false))
	switch {
	case err == nil:
		return false, nil
	case apierrors.IsTooManyRequests(err):
		return true, err
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or replaced: nothing left to evict.
		return false, nil
	default:
		return false, fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
}
