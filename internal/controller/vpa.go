package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/convert"
	"github.com/snug-dev/snug/internal/kube"
)

// A SnugPolicy and a VerticalPodAutoscaler that is not Off acting on the
// same pods would fight: each resizes (VPA also evicts) towards its own
// recommendation. snug cannot stop a VPA, so the rule is that snug yields:
// while a VPA whose updateMode is not Off targets the policy's workload or
// selects any of the pods the policy governs, the policy gets condition
// VPAConflict (reason YieldsToVPA) and an event, snug keeps learning and
// recommending for it, and changes none of its pods: the agents do not
// resize them (policy.YieldsToVPA) and the controller does not evict them.
// Setting the VPA to Off or deleting it hands the pods back to snug.

// reasonNoVPA goes with VPAConflict False.
const reasonNoVPA = "NoActiveVPA"

// vpaView is a VerticalPodAutoscaler as conflict detection sees it.
type vpaView struct {
	name, mode string
	// kind and target are its targetRef's kind and name.
	kind, target string
	// sel is the selector of its target's pods; nil when the controller
	// cannot resolve it (a kind it does not watch, a missing workload).
	sel labels.Selector
}

// vpaConflicts returns the VPAs of vpas, sorted by name, that are not Off
// and either target the policy's workload or select one of pods.
func vpaConflicts(target *v1alpha1.CrossVersionObjectReference, pods []*corev1.Pod, vpas []vpaView) []vpaView {
	var out []vpaView
	for _, v := range vpas {
		if v.mode == convert.VPAModeOff {
			continue
		}
		same := target != nil && target.Kind == v.kind && target.Name == v.target
		if !same && v.sel != nil {
			same = slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return v.sel.Matches(labels.Set(p.Labels)) })
		}
		if same {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b vpaView) int { return strings.Compare(a.name, b.name) })
	return out
}

// vpaCondition is the VPAConflict condition for the conflicting VPAs.
func vpaCondition(conflicts []vpaView) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionVPAConflict, Status: metav1.ConditionFalse, Reason: reasonNoVPA}
	if len(conflicts) == 0 {
		return c
	}
	var names []string
	for _, v := range conflicts {
		names = append(names, fmt.Sprintf("%s (updateMode %s)", v.name, v.mode))
	}
	what := "VerticalPodAutoscaler " + names[0]
	if len(names) > 1 {
		what = "VerticalPodAutoscalers " + strings.Join(names, ", ")
	}
	c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonYieldsToVPA
	c.Message = what + " also sizes this policy's pods; snug yields to it and changes no pod (it still recommends) until the VPA's updateMode is Off or it is deleted"
	return c
}

// vpaDiscoveryInterval is how often the controller looks for the
// VerticalPodAutoscaler API until it is served.
const vpaDiscoveryInterval = time.Minute

// servesVPA reports whether the API server serves VerticalPodAutoscaler
// v1 (the CRD is installed and established).
func (c *Controller) servesVPA() bool {
	gv := convert.VPAResource.GroupVersion().String()
	l, err := c.cs.Discovery().ServerResourcesForGroupVersion(gv)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == convert.VPAResource.Resource })
}

// startVPAs starts the VerticalPodAutoscaler informer if the API server
// serves VPAs now, and returns its HasSynced (nil if it does not). Run
// waits for it with the other caches, so that no policy is reconciled, and
// no pod resized, before the controller knows the cluster's VPAs.
func (c *Controller) startVPAs(ctx context.Context) cache.InformerSynced {
	if c.cfg.Dynamic == nil || !c.servesVPA() {
		return nil
	}
	return c.runVPAInformer(ctx)
}

// watchVPAs waits until the API server serves VerticalPodAutoscalers
// (looking every VPADiscoveryInterval), then starts their informer and
// enqueues every policy. Until then the policies see no VPA. It returns
// when ctx ends.
func (c *Controller) watchVPAs(ctx context.Context) {
	if c.cfg.Dynamic == nil {
		return
	}
	log := klog.FromContext(ctx)
	log.Info("the cluster serves no VerticalPodAutoscalers; looking again periodically", "interval", c.cfg.VPADiscoveryInterval)
	err := wait.PollUntilContextCancel(ctx, c.cfg.VPADiscoveryInterval, false, func(context.Context) (bool, error) {
		return c.servesVPA(), nil
	})
	if err != nil {
		return
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.runVPAInformer(ctx)) {
		return
	}
	for _, o := range c.policyInf.GetStore().List() {
		if p, ok := o.(*v1alpha1.SnugPolicy); ok {
			c.enqueue(key(p.Namespace, p.Name))
		}
	}
}

// runVPAInformer starts the VPA informer, which publishes its store to
// the reconciles once synced, and returns its HasSynced.
func (c *Controller) runVPAInformer(ctx context.Context) cache.InformerSynced {
	inf := dynamicinformer.NewFilteredDynamicInformer(c.cfg.Dynamic, convert.VPAResource, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	utilruntime.Must(inf.SetTransform(kube.StripManagedFields))
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onVPA,
		UpdateFunc: func(_, o any) { c.onVPA(o) },
		DeleteFunc: c.onVPA,
	})
	utilruntime.Must(err)
	go inf.RunWithContext(ctx)
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			c.mu.Lock()
			c.vpaStore = inf.GetIndexer()
			c.mu.Unlock()
			klog.FromContext(ctx).Info("watching VerticalPodAutoscalers")
		}
	}()
	return func() bool {
		if !inf.HasSynced() {
			return false
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.vpaStore != nil
	}
}

// onVPA enqueues the policies of the VPA's namespace: which pods a VPA
// covers depends on its target, which a change may move.
func (c *Controller) onVPA(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	m, ok := o.(metav1.Object)
	if !ok {
		return
	}
	c.enqueueNamespace(m.GetNamespace(), func(*v1alpha1.SnugPolicy) bool { return true })
}

// vpasIn returns the namespace's VPAs with their targets resolved; nil
// while VPAs are not watched.
func (c *Controller) vpasIn(ns string) []vpaView {
	c.mu.Lock()
	store := c.vpaStore
	c.mu.Unlock()
	if store == nil {
		return nil
	}
	objs, _ := store.ByIndex(cache.NamespaceIndex, ns)
	var out []vpaView
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		v, err := convert.FromUnstructured(u.Object)
		if err != nil || v.Spec.TargetRef == nil {
			continue
		}
		view := vpaView{name: v.Name, mode: v.UpdateMode(), kind: v.Spec.TargetRef.Kind, target: v.Spec.TargetRef.Name}
		if obj, err := c.workload(ns, view.kind, view.target); err == nil {
			if ls, err := workloadSelector(obj); err == nil {
				view.sel, _ = parseSelector(ls)
			}
		}
		out = append(out, view)
	}
	return out
}
