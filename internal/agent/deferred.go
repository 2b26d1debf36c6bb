package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
	"github.com/snug-dev/snug/internal/resize"
)

// A resize the kubelet Deferred (the node has no room for it yet) stays in
// the pod's spec until the kubelet can grant it. behavior.deferred says what
// the agent does about it once it has been Deferred for afterSeconds:
// Wait leaves it; FitToNode lowers the pending values to what the node has
// room for now, or sets them back to the actual resources if nothing of the
// increase fits; Evict is the controller's (it evicts through the Eviction
// API), and the agent fits the pod to the node only if it is still there
// and Deferred evictGrace later.

// evictGrace is how long, beyond afterSeconds, the agent leaves a Deferred
// pod under deferred action Evict to the controller before it fits the pod
// to the node itself: the controller may not evict (PodDisruptionBudgets,
// minReplicas).
const evictGrace = 30 * time.Second

// minRefit is the least time between two FitToNode actions on one pod:
// room that the agent saw but the kubelet did not (a pod just bound) gives
// another Deferred, which must not be chased every second.
const minRefit = 10 * time.Second

// deferredStep is what to do about a pod's Deferred resize now.
type deferredStep uint8

const (
	// deferredNone: not Deferred, not for afterSeconds yet, or acted on
	// too recently.
	deferredNone deferredStep = iota
	// deferredWait: leave it (action Wait).
	deferredWait
	// deferredFit: fit it to the node now.
	deferredFit
)

// nextDeferredStep decides what to do about a resize Deferred since since,
// at now; actedAt is the agent's last FitToNode on the pod (zero if none).
func nextDeferredStep(r policy.Deferred, since, actedAt, now time.Time) deferredStep {
	if r.Action == v1alpha1.DeferredActionWait {
		return deferredWait
	}
	after := r.After
	if r.Action == v1alpha1.DeferredActionEvict {
		after += evictGrace
	}
	if now.Sub(since) < after || (!actedAt.IsZero() && now.Sub(actedAt) < max(r.After, minRefit)) {
		return deferredNone
	}
	return deferredFit
}

// fitInput is what fitToNode looks at.
type fitInput struct {
	// pod is the Deferred pod: its spec holds the pending resize, its
	// status the actual resources.
	pod *corev1.Pod
	// allocatable is the node's; othersClaimed what the other pods on it
	// claim (resize.Claimed).
	allocatable, othersClaimed corev1.ResourceList
	// reserve is room left free for a higher-priority pod's replacement
	// (resize.PreemptionReserve).
	reserve corev1.ResourceList
	// usage is each container's measured usage, for the planner's memory
	// floor.
	usage map[string]resize.Usage
	// rules are the containers' rules, by name. Only the resources they
	// control change; a container without rules is left as it is.
	rules map[string]containerRules
}

// fitResult is what fitToNode decided.
type fitResult struct {
	// patch sets the pending values to what fits; nil when nothing is to
	// change (the node has room now by the agent's count, or nothing
	// controlled is pending).
	patch []byte
	// revert is true when nothing of the pending increase fits: patch sets
	// the controlled values back to the actual resources.
	revert bool
	// why says why it is a revert, when the planner refused to fit.
	why string
	// spec is the new spec of each changed container.
	spec map[string]corev1.ResourceRequirements
	// summary says what changes, as "app cpu 700m/700m -> 450m/450m".
	summary string
}

// fitToNode works out how far a Deferred pod's pending resize fits on its
// node now, and the patch that sets the pending values to that. It plans
// the pending values as a resize of the pod as it actually runs, with
// resize.NoRoomCap, so each increase is cut by the same share until the pod
// fits beside the others; the planner's other rules (QoS class, ratios,
// memory floor) hold. A plan the planner refuses becomes a revert. It never
// changes a resource the rules do not control, and it never asks for more
// than is pending.
func fitToNode(in fitInput) (fitResult, error) {
	if in.allocatable == nil {
		return fitResult{}, errors.New("fitting a deferred resize: node allocatable unknown")
	}
	pod := in.pod
	// The pod as it runs: controlled values back at the actual resources.
	running := pod.DeepCopy()
	var wish resize.Wish
	for _, c := range allContainers(running) {
		rules, ok := in.rules[c.Name]
		st := containerStatus(pod, c.Name)
		if !ok || rules.Off || st == nil || st.Resources == nil {
			continue
		}
		pending := c.Resources.DeepCopy()
		w := resize.ContainerWish{Name: c.Name, Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		changed := false
		for _, r := range rules.ControlledNames() {
			changed = setTo(&c.Resources, st.Resources, r) || changed
			if q, ok := pending.Requests[r]; ok {
				w.Requests[r] = q
			}
			if q, ok := pending.Limits[r]; ok {
				w.Limits[r] = q
			}
		}
		if changed {
			wish.Containers = append(wish.Containers, w)
		}
	}
	if len(wish.Containers) == 0 {
		return fitResult{}, nil
	}
	fitted := map[string]corev1.ResourceRequirements{}
	for _, c := range allContainers(running) {
		fitted[c.Name] = c.Resources
	}
	var res fitResult
	plan, err := resize.NewPlan(resize.Input{
		Pod: running, NodeAllocatable: in.allocatable, OthersClaimed: in.othersClaimed, Reserve: in.reserve, Usage: in.usage, Wish: wish,
		// The pending values are no decrease of what runs: only usage
		// bounds memory, not the per-plan step.
		Options: resize.Options{NoRoom: resize.NoRoomCap, MemoryHeadroom: 1e-6, MaxMemoryDecreaseFraction: 1},
	})
	if err != nil {
		var ref *resize.Refusal
		if !errors.As(err, &ref) {
			return fitResult{}, fmt.Errorf("fitting a deferred resize: %w", err)
		}
		res.why = err.Error()
	} else {
		for _, c := range plan.Containers {
			fitted[c.Name] = corev1.ResourceRequirements{Requests: c.Requests, Limits: c.Limits}
		}
	}
	// Set the spec to the fitted values by reverting a copy whose "actual"
	// resources are them: resize.Revert builds the guarded patch (test
	// operations first) and keeps the API's key and QoS rules.
	target := pod.DeepCopy()
	res.spec = map[string]corev1.ResourceRequirements{}
	res.revert = true
	var parts []string
	for i := range target.Status.ContainerStatuses {
		setStatusTo(target, &target.Status.ContainerStatuses[i], fitted, &res, &parts)
	}
	for i := range target.Status.InitContainerStatuses {
		setStatusTo(target, &target.Status.InitContainerStatuses[i], fitted, &res, &parts)
	}
	if len(res.spec) == 0 {
		return fitResult{}, nil // the pending values fit now
	}
	for name, rr := range res.spec {
		if !sameCPUMemory(rr, containerStatus(pod, name).Resources) {
			res.revert = false
		}
	}
	if res.patch, err = resize.Revert(target); err != nil {
		return fitResult{}, fmt.Errorf("fitting a deferred resize: %w", err)
	}
	res.summary = strings.Join(parts, ", ")
	return res, nil
}

// setStatusTo points a container's status resources at the fitted values,
// or at its spec when it is not fitted (so Revert leaves it alone), and
// notes what changes.
func setStatusTo(pod *corev1.Pod, st *corev1.ContainerStatus, fitted map[string]corev1.ResourceRequirements, res *fitResult, parts *[]string) {
	if st.Resources == nil {
		return
	}
	spec := specOf(pod, st.Name)
	if spec == nil {
		return
	}
	f, ok := fitted[st.Name]
	if !ok || sameCPUMemory(f, spec) {
		st.Resources = spec.DeepCopy()
		return
	}
	// Only cpu and memory: other resources stay as the spec has them.
	next := spec.DeepCopy()
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		setTo(next, &f, r)
		or, ol := spec.Requests[r], spec.Limits[r]
		nr, nl := next.Requests[r], next.Limits[r]
		if or.Cmp(nr) != 0 || ol.Cmp(nl) != 0 {
			*parts = append(*parts, fmt.Sprintf("%s %s %s/%s -> %s/%s", st.Name, r, qty(or), qty(ol), qty(nr), qty(nl)))
		}
	}
	st.Resources = next
	res.spec[st.Name] = *next.DeepCopy()
}

// setTo copies resource r's request and limit from src into dst (keys
// src lacks are left alone: the API never lets a key be removed) and
// reports whether anything changed.
func setTo(dst, src *corev1.ResourceRequirements, r corev1.ResourceName) bool {
	changed := false
	for _, p := range [...]struct{ dst, src *corev1.ResourceList }{{&dst.Requests, &src.Requests}, {&dst.Limits, &src.Limits}} {
		q, ok := (*p.src)[r]
		if !ok {
			continue
		}
		if old, had := (*p.dst)[r]; had && old.Cmp(q) == 0 {
			continue
		}
		if *p.dst == nil {
			*p.dst = corev1.ResourceList{}
		}
		(*p.dst)[r] = q
		changed = true
	}
	return changed
}

func sameCPUMemory(a corev1.ResourceRequirements, b *corev1.ResourceRequirements) bool {
	if b == nil {
		return false
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		ar, br := a.Requests[r], b.Requests[r]
		al, bl := a.Limits[r], b.Limits[r]
		if ar.Cmp(br) != 0 || al.Cmp(bl) != 0 {
			return false
		}
	}
	return true
}

// allContainers are the pod's regular and sidecar containers, as pointers
// into its spec.
func allContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return out
}

// specOf is the spec's resources of the named container, or the pod's
// pod-level resources for resize.PodLevel; nil if there are none.
func specOf(pod *corev1.Pod, name string) *corev1.ResourceRequirements {
	if name == resize.PodLevel {
		return pod.Spec.Resources
	}
	for _, c := range allContainers(pod) {
		if c.Name == name {
			return &c.Resources
		}
	}
	return nil
}

// deferral is what the agent knows of a pod's Deferred resize.
type deferral struct {
	since    time.Time
	rules    policy.Deferred
	reported bool      // the Wait event and metric went out for this deferral
	actedAt  time.Time // the last FitToNode sent
}

// DeferredJSON is a pod's Deferred resize, in the JSON API.
type DeferredJSON struct {
	// Since is when the kubelet deferred it.
	Since time.Time `json:"since"`
	// Action is the policy's behavior.deferred.action.
	Action string `json:"action"`
	// AfterSeconds is the policy's behavior.deferred.afterSeconds.
	AfterSeconds int64 `json:"afterSeconds"`
}

// view is the JSON form of the deferral.
func (df deferral) view() *DeferredJSON {
	return &DeferredJSON{Since: df.since, Action: string(df.rules.Action), AfterSeconds: int64(df.rules.After / time.Second)}
}

// handleDeferred applies behavior.deferred to a pod whose resize the
// kubelet Deferred. It runs on the loop goroutine, once a pass, and reports
// whether it sent a resize (the pod is then InFlight).
func (d *Decider) handleDeferred(ctx context.Context, log logr.Logger, st *podState, pod *corev1.Pod, now time.Time) bool {
	since, ok := policy.DeferredSince(pod)
	if !ok {
		st.deferral = nil
		return false
	}
	if st.deferral == nil || !st.deferral.since.Equal(since) {
		st.deferral = &deferral{since: since}
	}
	df := st.deferral
	df.rules = st.deferredRules
	if !st.actuates() || d.sender == nil || st.phase == phaseInFlight {
		return false
	}
	if podLevelSet(pod) != nil {
		// The fit and the eviction act on containers' values; a pod with
		// pod-level resources waits for the kubelet's retry (docs/agent.md,
		// "Pod-level resources").
		return false
	}
	log = log.WithValues("pod", st.ns+"/"+st.name)
	switch nextDeferredStep(df.rules, since, df.actedAt, now) {
	case deferredWait:
		if !df.reported {
			df.reported = true
			d.metrics.deferredActions.WithLabelValues(string(v1alpha1.DeferredActionWait)).Inc()
			log.Info("resize deferred; waiting for room, as the policy says", "since", since, "action", df.rules.Action)
			d.event(pod, corev1.EventTypeWarning, ReasonResizeDeferred, fmt.Sprintf(
				"the kubelet deferred the resize (no room on the node) at %s; snug leaves it pending (behavior.deferred.action Wait)", since.UTC().Format(time.RFC3339)))
		}
		return false
	case deferredNone:
		return false
	}
	df.actedAt = now
	in := fitInput{pod: pod, usage: map[string]resize.Usage{}, rules: map[string]containerRules{}}
	for name, cs := range st.containers {
		in.rules[name] = cs.rules
		in.usage[name] = resize.Usage{CPUMillis: cs.cpuMillis, MemoryWorkingSetBytes: cs.wsBytes, MemoryPeakBytes: cs.rc.MemoryPeakBytes(now), MemoryLimitFloorBytes: cs.rc.MemoryLimitFloorBytes()}
	}
	if node, err := d.cfg.Node(); err == nil && node != nil {
		in.allocatable = node.Status.Allocatable
	}
	in.othersClaimed, in.reserve = d.nodeClaims(pod)
	fit, err := fitToNode(in)
	if err != nil {
		log.Error(err, "fitting a deferred resize to the node")
		return false
	}
	if fit.patch == nil {
		log.V(1).Info("deferred resize fits the node by the agent's count; the kubelet retries it", "since", since)
		return false
	}
	action := string(v1alpha1.DeferredActionFitToNode)
	if fit.revert {
		action = deferredRevert
	}
	d.metrics.deferredActions.WithLabelValues(action).Inc()
	summary := fit.summary + fmt.Sprintf(" (deferred for %s; behavior.deferred.action %s", now.Sub(since).Round(time.Second), df.rules.Action)
	if fit.revert {
		summary += ": nothing of the increase fits, back to the actual resources"
		if fit.why != "" {
			summary += " (" + fit.why + ")"
		}
	}
	summary += ")"
	job := sendJob{uid: pod.UID, pod: pod, policy: policyName(st.policy), patch: fit.patch, want: specPlans(fit.spec), decidedAt: now, deferred: action, spec: fit.spec, summary: summary}
	if !d.send(ctx, job) {
		return false
	}
	st.fire(evSent)
	log.Info("fitting a deferred resize to the node", "plan", summary)
	return true
}

// deferredRevert labels a FitToNode that found no room at all and set the
// spec back to the actual resources.
const deferredRevert = "Revert"

// specTargets are the JSON form of a fit's new spec.
func specTargets(spec map[string]corev1.ResourceRequirements) map[string]ResourcesJSON {
	out := map[string]ResourcesJSON{}
	for name, rr := range spec {
		r := resourcesOf(rr.Requests, rr.Limits)
		out[name] = ResourcesJSON{
			CPURequestMillicores: r.CPURequestMillis, CPULimitMillicores: r.CPULimitMillis,
			MemoryRequestBytes: r.MemRequestBytes, MemoryLimitBytes: r.MemLimitBytes,
		}
	}
	return out
}
