package agent

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
)

// A container whose policy gives it a startupBoost (policy.BoostOf) gets
// more CPU while it starts, in place: when the agent first sees a
// container instance running that started less than boostStartGrace ago
// and is not Ready yet (or has no probe, so is Ready as it starts), it
// resizes the container's CPU request to the boosted one, under the
// container's controlledValues (the limit keeps its ratio; a Guaranteed
// pod stays Guaranteed) and fitted to the node's room; once the container
// is Ready and durationSeconds have passed (without probes: once its CPU
// use has been within what it had before for boostSettleSamples samples,
// or after policy.Boost.Max), it sets the CPU back to what it was. While
// a container is boosted its CPU samples are not learnt and drive no CPU
// decision: the boost sizes the start-up, the recommender the steady state
// after it. A container restarted while boosted keeps the boost, and its
// end is judged afresh; one restarted after it is boosted again.
//
// A container instance's boost moves through boostPhase.on only.

// boostStartGrace is how long after a container started the agent still
// boosts it: an agent that meets a container later (the agent restarted)
// leaves its start-up alone.
const boostStartGrace = 30 * time.Second

// boostSettleSamples is how many samples in a row a container without
// probes must use no more CPU than it could before the boost (its limit,
// or its request without one) for its start-up to count as over.
const boostSettleSamples = 3

// boostRetry is the least time between two tries to end a boost whose end
// was not applied (a Conflict, a refusal).
const boostRetry = 10 * time.Second

// boostPhase is where a container instance's startup boost stands.
type boostPhase uint8

const (
	// boostStarting: the boost resize is out.
	boostStarting boostPhase = iota
	// boostActive: the container runs boosted.
	boostActive
	// boostEnding: the resize that ends it is out.
	boostEnding
	// boostOver: ended, or never given to this instance.
	boostOver
)

// boostEvent moves a boost between phases.
type boostEvent uint8

const (
	// boostApplied: the boost's or its end's resize was applied.
	boostApplied boostEvent = iota
	// boostNotApplied: it was not (refused, Conflict, Timeout...).
	boostNotApplied
	// boostEnd: the end's resize was sent.
	boostEnd
)

// on is the phase after e: Starting -Applied-> Active, Starting
// -NotApplied-> Over (no boost for this instance), Active -End-> Ending,
// Ending -Applied-> Over, Ending -NotApplied-> Active (tried again after
// boostRetry). Any other event leaves the phase.
func (p boostPhase) on(e boostEvent) boostPhase {
	switch {
	case p == boostStarting && e == boostApplied:
		return boostActive
	case p == boostStarting && e == boostNotApplied:
		return boostOver
	case p == boostActive && e == boostEnd:
		return boostEnding
	case p == boostEnding && e == boostApplied:
		return boostOver
	case p == boostEnding && e == boostNotApplied:
		return boostActive
	}
	return p
}

func (p boostPhase) String() string {
	return [...]string{"Starting", "Active", "Ending", "Over"}[p]
}

// boostState is a container's startup boost. The Decider keeps it by pod
// and container (Decider.boosts), not in the policy-scoped podState: a
// boost outlives a policy's new generation, and is ended whatever the
// policy says by then.
type boostState struct {
	// ns and name are the pod's, to find it gone.
	ns, name string
	// containerID is the container instance it was decided for.
	containerID string
	phase       boostPhase
	// rule is the boost it was given.
	rule policy.Boost
	// before is the container's cpu request and limit before the boost
	// (keys it had only); calmMillis the most CPU it could use then (its
	// limit if the boost raised it, else its request).
	before     corev1.ResourceRequirements
	calmMillis int64
	// since is when the boost was sent; startedAt when the instance
	// started; boostedAt when the boost was applied; readyAt when the
	// instance was first seen Ready while boosted.
	since, startedAt, boostedAt, readyAt time.Time
	// calm counts the samples in a row within calmMillis.
	calm int
	// triedAt is when its end was last tried.
	triedAt time.Time
}

// boosted reports whether the container's CPU is the boost's: being
// boosted, boosted, or being set back.
func (b *boostState) boosted() bool {
	return b != nil && b.phase != boostOver
}

// observeBoost counts a boosted container's calm samples (Observe).
func observeBoost(b *boostState, p Point) {
	if b == nil || b.phase != boostActive || !p.HasRate {
		return
	}
	if int64(p.CPUUsageMillicores) <= b.calmMillis {
		b.calm++
	} else {
		b.calm = 0
	}
}

// boostHold is the cpu decision of a boosted container: held, as the
// boost owns its CPU until it ends.
func boostHold(actual recommend.Resources) recommend.Change {
	return recommend.Change{Action: recommend.Hold, Request: actual.CPURequestMillis, Limit: actual.CPULimitMillis,
		Reason: recommend.Reason{Why: recommend.WhyStartupBoost, Request: actual.CPURequestMillis}}
}

// hasProbe reports whether the container says when it is ready: a
// readiness or a startup probe.
func hasProbe(c *corev1.Container) bool {
	return c != nil && (c.ReadinessProbe != nil || c.StartupProbe != nil)
}

// startingUp reports whether the container instance is one to boost: it
// runs, started within boostStartGrace, and is not Ready yet (or has no
// probe to say so).
func startingUp(spec *corev1.Container, st *corev1.ContainerStatus, now time.Time) bool {
	run := st.State.Running
	if run == nil || now.Sub(run.StartedAt.Time) > boostStartGrace {
		return false
	}
	return !hasProbe(spec) || !st.Ready
}

// boostDone reports whether a boosted container's start-up is over at
// now, noting when it was first seen Ready. The caps count from the boost,
// not from the instance: a container that keeps crashing does not keep
// it.
func boostDone(b *boostState, spec *corev1.Container, st *corev1.ContainerStatus, now time.Time) bool {
	if !hasProbe(spec) {
		return b.calm >= boostSettleSamples || now.Sub(b.since) >= b.rule.Max
	}
	if !st.Ready {
		b.readyAt = time.Time{}
		return now.Sub(b.since) >= policy.DefaultBoostMax+b.rule.After
	}
	if b.readyAt.IsZero() {
		b.readyAt = now
	}
	return now.Sub(b.readyAt) >= b.rule.After
}

// handleBoost ends and starts the startup boosts of the pod's containers,
// once a pass (and on an update of a boosted pod) on the loop goroutine;
// it reports whether it sent a resize (the pod is then InFlight). Ends go
// first, in a resize of their own, and whatever the policy says now; a
// boost starts only under a policy that resizes.
func (d *Decider) handleBoost(ctx context.Context, log logr.Logger, st *podState, pod *corev1.Pod, now time.Time) bool {
	if d.sender == nil || st.phase == phaseInFlight {
		return false
	}
	if slices.Contains(podLevelSet(pod), corev1.ResourceCPU) {
		// The pod's cpu is sized at the pod level: a container's boost
		// would stay under the pod cgroup's limit (docs/agent.md,
		// "Pod-level resources").
		return false
	}
	var ends, starts resize.Wish
	var ending, starting []string
	for _, spec := range allContainers(pod) {
		name := spec.Name
		k := key{pod.UID, name}
		status := containerStatus(pod, name)
		if status == nil || status.State.Running == nil || status.ContainerID == "" || status.Resources == nil {
			continue
		}
		b := d.boosts[k]
		if b != nil && b.containerID != status.ContainerID && b.boosted() {
			// Restarted while boosted: still boosted (the resources are
			// the pod's); its end is judged afresh for the new instance.
			b.containerID, b.startedAt, b.readyAt, b.calm = status.ContainerID, status.State.Running.StartedAt.Time, time.Time{}, 0
			continue
		}
		if b != nil && b.containerID == status.ContainerID {
			if b.phase == boostActive && now.Sub(b.triedAt) >= boostRetry && boostDone(b, spec, status, now) {
				ends.Containers = append(ends.Containers, resize.ContainerWish{Name: name, Requests: b.before.Requests, Limits: b.before.Limits})
				ending = append(ending, name)
			}
			continue
		}
		// A container instance not seen before: boosted if its policy
		// says so (read here, not from a container state: the boost may
		// come before the container's first sample).
		cp := policy.ContainerPolicy(st.pol, name)
		rule, ok := policy.BoostOf(cp)
		if !ok || !st.actuates() || pod.Status.QOSClass == corev1.PodQOSBestEffort {
			continue
		}
		if b == nil && pod.Generation > 1 {
			// The first instance this agent sees of a pod resized
			// before (an agent restart): its CPU may be a boost already,
			// which could not be undone.
			d.boosts[k] = &boostState{ns: pod.Namespace, name: pod.Name, containerID: status.ContainerID, phase: boostOver}
			continue
		}
		nb := &boostState{ns: pod.Namespace, name: pod.Name, containerID: status.ContainerID, startedAt: status.State.Running.StartedAt.Time, phase: boostOver}
		d.boosts[k] = nb
		req, ok := status.Resources.Requests[corev1.ResourceCPU]
		if !ok || req.IsZero() || !startingUp(spec, status, now) {
			// No request is nothing to set back to (the API never lets
			// one be removed).
			continue
		}
		to := rule.RequestMillis(req.MilliValue())
		if to <= req.MilliValue() {
			continue
		}
		nb.before, nb.rule = cpuOnly(*status.Resources), rule
		rules := policy.RulesForPod(cp, st.uncontrolled, pod.Status.QOSClass)
		pol := resize.Policy{ControlledValues: rules.Policy.ControlledValues, ControlledResources: []corev1.ResourceName{corev1.ResourceCPU}}
		starts.Containers = append(starts.Containers, resize.ContainerWish{
			Name: name, Target: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(to, resource.DecimalSI)}, Policy: &pol,
		})
		starting = append(starting, name)
	}
	switch {
	case len(ending) > 0:
		for _, name := range starting {
			delete(d.boosts, key{pod.UID, name}) // decided afresh next pass
		}
		return d.sendBoost(ctx, log, st, pod, now, ends, boostKindEnd, ending)
	case len(starting) > 0:
		return d.sendBoost(ctx, log, st, pod, now, starts, boostKindStart, starting)
	}
	return false
}

// sendBoost plans a boost's start or end of the named containers and sends
// it; it reports whether it did.
func (d *Decider) sendBoost(ctx context.Context, log logr.Logger, st *podState, pod *corev1.Pod, now time.Time, wish resize.Wish, kind string, names []string) bool {
	log = log.WithValues("pod", st.ns+"/"+st.name)
	in := resize.Input{Pod: pod, Wish: wish, Options: st.opts}
	in.Options.PodLevelResize = d.podLevelOff == ""
	if node, err := d.cfg.Node(); err == nil && node != nil {
		in.NodeAllocatable = node.Status.Allocatable
	}
	in.OthersClaimed, in.Reserve = d.nodeClaims(pod)
	in.Namespace, _ = d.namespaceFor(pod, now)
	plan, err := resize.NewPlan(in)
	if err != nil || plan.NoOp() {
		why := "nothing of it fits the node"
		if err != nil {
			why = err.Error()
		}
		for _, name := range names {
			b := d.boosts[key{pod.UID, name}]
			switch {
			case kind == boostKindStart:
				b.phase = boostOver
			case err != nil:
				b.triedAt = now // tried again after boostRetry
			default:
				b.phase = boostOver // the spec is back already
			}
		}
		d.noteBoosting(pod.UID)
		if kind == boostKindStart {
			log.Info("no startup boost", "containers", names, "why", why)
			d.event(pod, corev1.EventTypeWarning, ReasonStartupBoost, "snug gave no startup boost to "+strings.Join(names, ", ")+": "+why)
		} else if err != nil {
			log.Error(err, "ending a startup boost; trying again", "containers", names, "in", boostRetry)
		}
		return false
	}
	why := "startup boost of " + strings.Join(names, ", ")
	if kind == boostKindEnd {
		why = "end of the startup boost of " + strings.Join(names, ", ")
	}
	summary := planSummary(pod, plan) + " (" + why + ")"
	job := sendJob{
		uid: pod.UID, pod: pod, policy: policyName(st.policy), patch: plan.Patch, want: plan.Containers, decidedAt: now, plan: plan,
		summary: summary, boost: kind, boosted: names,
	}
	if !d.send(ctx, job) {
		if kind == boostKindStart {
			for _, name := range names {
				delete(d.boosts, key{pod.UID, name}) // decided afresh next pass
			}
		}
		return false
	}
	st.fire(evSent)
	for _, name := range names {
		b := d.boosts[key{pod.UID, name}]
		if kind == boostKindEnd {
			b.phase, b.triedAt = b.phase.on(boostEnd), now
			continue
		}
		b.phase, b.since = boostStarting, now
		b.calmMillis = calmMillis(b.before, plan, name)
	}
	log.Info("startup boost", "plan", summary)
	return true
}

// calmMillis is the most CPU a container could use before its boost: its
// limit when the boost raised it (RequestsAndLimits, a Guaranteed pod),
// else its request (RequestsOnly leaves the limit; the start-up is over
// once the container is back within its old request).
func calmMillis(before corev1.ResourceRequirements, plan *resize.Plan, name string) int64 {
	req := before.Requests[corev1.ResourceCPU]
	lim, hasLimit := before.Limits[corev1.ResourceCPU]
	if !hasLimit {
		return req.MilliValue()
	}
	for _, c := range plan.Containers {
		if q, ok := c.Limits[corev1.ResourceCPU]; c.Name == name && ok && q.Cmp(lim) > 0 {
			return lim.MilliValue()
		}
	}
	return req.MilliValue()
}

// noteBoosting keeps the set of pods whose updates wake the loop in step
// with the pod's boosts. Loop only.
func (d *Decider) noteBoosting(uid types.UID) {
	on := false
	for k, b := range d.boosts {
		if k.uid == uid && b.boosted() {
			on = true
			break
		}
	}
	d.setBoosting(uid, on)
}

// sweepBoosts forgets the boosts of pods that are gone. Loop only.
func (d *Decider) sweepBoosts() {
	for k, b := range d.boosts {
		if _, ok := d.pods[k.uid]; ok {
			continue
		}
		if _, err := d.podOf(k.uid, b.ns, b.name); err != nil {
			delete(d.boosts, k)
			d.setBoosting(k.uid, false)
		}
	}
}

// The kinds of a boost's resize (sendJob.boost, ResizeJSON.StartupBoost).
const (
	boostKindStart = "Boost"
	boostKindEnd   = "Unboost"
)

// finishBoost takes in the outcome of a boost's resize: the containers'
// boosts move on, and an event says what happened. A resize the API server
// took (even if the kubelet has not applied it yet: Deferred, a Timeout)
// left the spec as the boost's resize set it, so the boost moves on as if
// applied; one it refused (Rejected, Conflict) or that was reverted
// (Infeasible) did not.
func (d *Decider) finishBoost(st *podState, r sendResult) {
	e := boostApplied
	if r.outcome == resize.Rejected || r.outcome == resize.Conflict || (r.outcome == resize.Infeasible && r.reverted) {
		e = boostNotApplied
	}
	pod := r.job.pod
	for _, name := range r.job.boosted {
		b := d.boosts[key{pod.UID, name}]
		if b == nil {
			continue
		}
		was := b.phase
		b.phase = b.phase.on(e)
		switch {
		case was == boostStarting && b.phase == boostActive:
			b.boostedAt = r.finishedAt
			d.metrics.boosts.WithLabelValues(st.ns, policyName(st.policy), "boosted").Inc()
		case was == boostEnding && b.phase == boostOver:
			d.metrics.boosts.WithLabelValues(st.ns, policyName(st.policy), "ended").Inc()
			if !b.readyAt.IsZero() && r.outcome == resize.Applied {
				// From Ready plus durationSeconds: the delay that is snug's.
				due := readySince(pod, b.readyAt).Add(b.rule.After)
				d.metrics.unboostDelay.Observe(r.finishedAt.Sub(due).Seconds())
			}
		}
	}
	d.noteBoosting(pod.UID)
	if r.outcome == resize.Applied {
		msg := "snug boosted " + r.job.summary
		if r.job.boost == boostKindEnd {
			msg = "snug ended the startup boost: " + r.job.summary
		}
		d.event(pod, corev1.EventTypeNormal, ReasonStartupBoost, msg)
	}
}

// setBoosting notes whether the pod has a container boosted, so that its
// updates wake the loop (podUpdated). Loop only.
func (d *Decider) setBoosting(uid types.UID, on bool) {
	d.boostMu.Lock()
	defer d.boostMu.Unlock()
	if on {
		d.boosting[uid] = true
	} else {
		delete(d.boosting, uid)
	}
}

// podUpdated is told of each version of a pod the informer delivers, on
// the informer's goroutine. An update of a pod with a container boosted,
// or with a container that has just started, wakes the loop, which starts
// or ends boosts at once, not at the next pass or the container's first
// sample: the goal is the end applied within 2 s of Ready, and a pass is
// 1 s.
func (d *Decider) podUpdated(pod *corev1.Pod) {
	uid := pod.UID
	d.boostMu.Lock()
	on := d.boosting[uid]
	d.boostMu.Unlock()
	if !on && !hasStartingContainer(pod, d.clock.Now()) {
		return
	}
	d.fx.post(func(ctx context.Context, log logr.Logger) {
		pod, err := d.podOf(uid, pod.Namespace, pod.Name)
		if err != nil {
			return
		}
		st := d.pods[uid]
		if st == nil {
			// Not sampled yet: a state of its own only for a policy that
			// boosts.
			pol := d.binds.policyFor(pod, d.listPolicies)
			if pol == nil || pod.Status.QOSClass == corev1.PodQOSBestEffort || !boosts(pol) {
				return
			}
			st = d.podStateFor(ctx, pod, pol)
		}
		if st == nil || st.phase == phaseUnusable {
			return
		}
		d.handleBoost(ctx, log, st, pod, d.clock.Now())
	})
}

// boosts reports whether any of the policy's container policies has a
// startupBoost.
func boosts(pol *v1alpha1.SnugPolicy) bool {
	if rp := pol.Spec.ResourcePolicy; rp != nil {
		for _, cp := range rp.ContainerPolicies {
			if cp.StartupBoost != nil {
				return true
			}
		}
	}
	return false
}

// hasStartingContainer reports whether one of the pod's containers is one
// a boost would be for (startingUp); no policy is looked at.
func hasStartingContainer(pod *corev1.Pod, now time.Time) bool {
	for _, c := range allContainers(pod) {
		if st := containerStatus(pod, c.Name); st != nil && st.ContainerID != "" && startingUp(c, st, now) {
			return true
		}
	}
	return false
}

// readySince is when the pod's containers became Ready, by its
// ContainersReady condition, or seen when none says so.
func readySince(pod *corev1.Pod, seen time.Time) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.ContainersReady && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Time.Before(seen) {
			return c.LastTransitionTime.Time
		}
	}
	return seen
}

// cpuOnly is rr's cpu request and limit, the keys it has only.
func cpuOnly(rr corev1.ResourceRequirements) corev1.ResourceRequirements {
	var out corev1.ResourceRequirements
	if q, ok := rr.Requests[corev1.ResourceCPU]; ok {
		out.Requests = corev1.ResourceList{corev1.ResourceCPU: q}
	}
	if q, ok := rr.Limits[corev1.ResourceCPU]; ok {
		out.Limits = corev1.ResourceList{corev1.ResourceCPU: q}
	}
	return out
}

// BoostJSON is a container's startup boost, in the JSON API.
type BoostJSON struct {
	// Phase is Starting, Active, Ending or Over.
	Phase string `json:"phase"`
	// Before is the container's cpu before the boost.
	Before ResourcesJSON `json:"before"`
	// BoostedAt is when the boost was applied; ReadyAt when the container
	// was seen Ready while boosted.
	BoostedAt *time.Time `json:"boostedAt,omitempty"`
	ReadyAt   *time.Time `json:"readyAt,omitempty"`
}

func (b *boostState) view() *BoostJSON {
	r := resourcesOf(b.before.Requests, b.before.Limits)
	v := &BoostJSON{Phase: b.phase.String(), Before: ResourcesJSON{CPURequestMillicores: r.CPURequestMillis, CPULimitMillicores: r.CPULimitMillis}}
	if !b.boostedAt.IsZero() {
		t := b.boostedAt
		v.BoostedAt = &t
	}
	if !b.readyAt.IsZero() {
		t := b.readyAt
		v.ReadyAt = &t
	}
	return v
}
