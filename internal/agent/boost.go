package agent

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snug-dev/snug/internal/policy"
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

// boostState is a container's startup boost.
type boostState struct {
	// containerID is the container instance it was decided for.
	containerID string
	phase       boostPhase
	// before is the container's cpu request and limit before the boost
	// (keys it had only).
	before corev1.ResourceRequirements
	// startedAt is when the instance started; boostedAt when the boost was
	// applied; readyAt when it was first seen Ready while boosted.
	startedAt, boostedAt, readyAt time.Time
	// calm counts the samples in a row within the CPU it had before.
	calm int
	// triedAt is when its end was last sent.
	triedAt time.Time
}

// beforeMillis is the most CPU the container could use before the boost:
// its limit, or its request without one.
func (b *boostState) beforeMillis() int64 {
	if q, ok := b.before.Limits[corev1.ResourceCPU]; ok {
		return q.MilliValue()
	}
	q := b.before.Requests[corev1.ResourceCPU]
	return q.MilliValue()
}

// boosted reports whether the container's CPU is the boost's: being
// boosted, boosted, or being set back.
func (b *boostState) boosted() bool {
	return b != nil && b.phase != boostOver
}

// observeBoost counts a boosted container's calm samples (Observe).
func observeBoost(cs *containerState, p Point) {
	b := cs.boost
	if b == nil || b.phase != boostActive || !p.HasRate {
		return
	}
	if int64(p.CPUUsageMillicores) <= b.beforeMillis() {
		b.calm++
	} else {
		b.calm = 0
	}
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
// now, noting when it was first seen Ready.
func boostDone(b *boostState, rule policy.Boost, spec *corev1.Container, st *corev1.ContainerStatus, now time.Time) bool {
	if !hasProbe(spec) {
		return b.calm >= boostSettleSamples || now.Sub(b.startedAt) >= rule.Max
	}
	if !st.Ready {
		b.readyAt = time.Time{}
		// A start-up that never gets Ready does not keep the boost for
		// ever.
		return now.Sub(b.startedAt) >= policy.DefaultBoostMax+rule.After
	}
	if b.readyAt.IsZero() {
		b.readyAt = now
	}
	return now.Sub(b.readyAt) >= rule.After
}

// handleBoost starts and ends the startup boosts of the pod's containers,
// once a pass on the loop goroutine, in one resize; it reports whether it
// sent one (the pod is then InFlight).
func (d *Decider) handleBoost(ctx context.Context, log logr.Logger, st *podState, pod *corev1.Pod, now time.Time) bool {
	if !st.actuates() || d.sender == nil || st.phase == phaseInFlight {
		return false
	}
	var wish resize.Wish
	var starting, ending []string
	for _, name := range slices.Sorted(maps.Keys(st.containers)) {
		cs := st.containers[name]
		if cs.boostRule == nil {
			continue
		}
		status, spec := containerStatus(pod, name), specContainer(pod, name)
		if status == nil || status.State.Running == nil || status.ContainerID == "" || status.Resources == nil {
			continue
		}
		b := cs.boost
		if b == nil || b.containerID != status.ContainerID {
			if b.boosted() {
				// Restarted while boosted: still boosted; its end is
				// judged afresh for the new instance.
				b.containerID, b.startedAt, b.readyAt, b.calm = status.ContainerID, status.State.Running.StartedAt.Time, time.Time{}, 0
				continue
			}
			b = &boostState{containerID: status.ContainerID, startedAt: status.State.Running.StartedAt.Time, phase: boostOver}
			cs.boost = b
			if !startingUp(spec, status, now) {
				continue
			}
			req := status.Resources.Requests[corev1.ResourceCPU]
			to := cs.boostRule.RequestMillis(req.MilliValue())
			if to <= req.MilliValue() {
				continue
			}
			b.before = cpuOnly(*status.Resources)
			pol := resize.Policy{ControlledValues: cs.rules.Policy.ControlledValues, ControlledResources: []corev1.ResourceName{corev1.ResourceCPU}}
			wish.Containers = append(wish.Containers, resize.ContainerWish{
				Name: name, Target: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(to, resource.DecimalSI)}, Policy: &pol,
			})
			starting = append(starting, name)
			continue
		}
		if b.phase != boostActive || now.Sub(b.triedAt) < boostRetry || !boostDone(b, *cs.boostRule, spec, status, now) {
			continue
		}
		wish.Containers = append(wish.Containers, resize.ContainerWish{Name: name, Requests: b.before.Requests, Limits: b.before.Limits})
		ending = append(ending, name)
	}
	if len(wish.Containers) == 0 {
		return false
	}
	log = log.WithValues("pod", st.ns+"/"+st.name)
	in := resize.Input{Pod: pod, Wish: wish, Options: st.opts}
	if node, err := d.cfg.Node(); err == nil && node != nil {
		in.NodeAllocatable = node.Status.Allocatable
	}
	if all, err := d.cfg.Pods.List(labels.Everything()); err == nil {
		others := make([]corev1.Pod, 0, len(all))
		for _, p := range all {
			others = append(others, *p)
		}
		in.OthersClaimed = resize.Claimed(others, pod.UID)
	}
	in.Namespace, _ = d.namespaceFor(pod, now)
	plan, err := resize.NewPlan(in)
	if err != nil || plan.NoOp() {
		why := "nothing fits the node"
		if err != nil {
			why = err.Error()
		}
		// No boost for these instances; an end with nothing to change is
		// over.
		for _, name := range starting {
			st.containers[name].boost.phase = boostOver
		}
		for _, name := range ending {
			st.containers[name].boost.phase = boostOver
		}
		if len(starting) > 0 {
			log.Info("no startup boost", "containers", starting, "why", why)
			d.event(pod, corev1.EventTypeWarning, ReasonStartupBoost, "snug gave no startup boost to "+strings.Join(starting, ", ")+": "+why)
		}
		return false
	}
	kind := boostKindStart
	if len(starting) == 0 {
		kind = boostKindEnd
	}
	summary := planSummary(pod, plan) + " (" + boostWhy(starting, ending) + ")"
	job := sendJob{
		uid: pod.UID, pod: pod, policy: policyName(st.policy), patch: plan.Patch, want: plan.Containers, decidedAt: now, plan: plan,
		summary: summary, boost: kind, boostStarting: starting, boostEnding: ending,
	}
	if !d.send(ctx, job) {
		for _, name := range starting {
			st.containers[name].boost = nil // tried again next pass
		}
		return false
	}
	st.fire(evSent)
	for _, name := range starting {
		st.containers[name].boost.phase = boostStarting
	}
	for _, name := range ending {
		b := st.containers[name].boost
		b.phase, b.triedAt = b.phase.on(boostEnd), now
	}
	log.Info("startup boost", "plan", summary)
	return true
}

// The kinds of a boost's resize (sendJob.boost, ResizeJSON.StartupBoost).
const (
	boostKindStart = "Boost"
	boostKindEnd   = "Unboost"
)

func boostWhy(starting, ending []string) string {
	var parts []string
	if len(starting) > 0 {
		parts = append(parts, "startup boost of "+strings.Join(starting, ", "))
	}
	if len(ending) > 0 {
		parts = append(parts, "end of the startup boost of "+strings.Join(ending, ", "))
	}
	return strings.Join(parts, "; ")
}

// finishBoost takes in the outcome of a boost's resize: the containers'
// boosts move on, and an event says what happened.
func (d *Decider) finishBoost(st *podState, r sendResult, applied bool) {
	e := boostNotApplied
	if applied {
		e = boostApplied
	}
	pod := r.job.pod
	for _, name := range slices.Concat(r.job.boostStarting, r.job.boostEnding) {
		cs := st.containers[name]
		if cs == nil || cs.boost == nil {
			continue
		}
		b := cs.boost
		was := b.phase
		b.phase = b.phase.on(e)
		switch {
		case was == boostStarting && b.phase == boostActive:
			b.boostedAt = r.finishedAt
			d.setBoosting(st.uid, true)
			d.metrics.boosts.WithLabelValues(st.ns, policyName(st.policy), "boosted").Inc()
		case was == boostEnding && b.phase == boostOver:
			d.setBoosting(st.uid, slices.ContainsFunc(slices.Collect(maps.Values(st.containers)), func(cs *containerState) bool { return cs.boost.boosted() }))
			d.metrics.boosts.WithLabelValues(st.ns, policyName(st.policy), "ended").Inc()
			if !b.readyAt.IsZero() {
				// From Ready plus durationSeconds: the delay that is snug's.
				due := readySince(pod, b.readyAt).Add(cs.boostRule.After)
				d.metrics.unboostDelay.Observe(r.finishedAt.Sub(due).Seconds())
			}
		}
	}
	if applied {
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
// the informer's goroutine. An update of a pod with a container boosted
// wakes the loop, which checks the boost's end at once, not at the next
// pass: the goal is the end applied within 2 s of Ready, and a pass is
// 1 s.
func (d *Decider) podUpdated(uid types.UID) {
	d.boostMu.Lock()
	on := d.boosting[uid]
	d.boostMu.Unlock()
	if !on {
		return
	}
	d.fx.post(func(ctx context.Context, log logr.Logger) {
		st := d.pods[uid]
		if st == nil || st.phase == phaseUnusable {
			return
		}
		if pod, err := d.podOf(uid, st.ns, st.name); err == nil {
			d.handleBoost(ctx, log, st, pod, d.clock.Now())
		}
	})
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

// specContainer is the pod's regular or sidecar container name.
func specContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, c := range allContainers(pod) {
		if c.Name == name {
			return c
		}
	}
	return nil
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
