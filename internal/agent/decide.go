package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/actuate"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/policy"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
)

// DefaultResizeTimeout is how long a sent resize may take to show an
// outcome in the pod's status before it counts as a Timeout; the
// recommender's InFlightTimeout.
const DefaultResizeTimeout = 30 * time.Second

// DeciderConfig is what a Decider needs.
type DeciderConfig struct {
	// Pods reads the node's pods (WatchPods' lister). Required.
	Pods corelisters.PodLister
	// Node returns the agent's node, for its allocatable. Required.
	Node func() (*corev1.Node, error)
	// Policies lists the SnugPolicies (WatchPolicies) and tells of their
	// changes. A policy with a targetRef covers the pods its
	// status.selector (published by the controller) matches, none before.
	// Required.
	Policies PolicyLister
	// ResizeClient is what resizes are sent with (through internal/actuate;
	// internal/kube's Client). Nil, or DryRun, never patches.
	ResizeClient actuate.Client
	// DryRun decides and logs, but never patches.
	DryRun bool
	// Recorder records events on pods; nil records none.
	Recorder record.EventRecorder
	// Recommend is the recommender configuration a policy's behavior is
	// applied to. Its cluster-wide fields (half-lives) come from flags.
	Recommend recommend.Config
	// LimitRanges returns a namespace's LimitRanges (WatchLimitRanges);
	// nil plans without them.
	LimitRanges func(ns string) []corev1.LimitRange
	// ListQuotas lists a namespace's ResourceQuotas (ListQuotas), read
	// when a planned resize grows; nil plans without them.
	ListQuotas func(ctx context.Context, ns string) ([]corev1.ResourceQuota, error)
	// ResizeTimeout bounds the wait for a sent resize's outcome.
	// 0 means DefaultResizeTimeout.
	ResizeTimeout time.Duration
}

// Decider is the agent's decision step: an Observer that feeds every sample
// of a container under a SnugPolicy to internal/recommend, plans each
// resizing decision with internal/resize against the node's room, sends it
// as an effect (effects.go; actuation.go: internal/actuate, one resize in
// flight per pod) and feeds the outcome back. Each pod's progress through
// this is an explicit phase (phase.go). Create it with Agent.Decide before
// Run.
//
// Observe, PassDone and Settle run on the agent's loop goroutine and own
// the recommender state and each pod's phase (phase.go); side effects run
// through the executor (effects.go), whose results only the loop
// goroutine takes in. Views (for the JSON API) are safe for concurrent
// use.
type Decider struct {
	cfg     DeciderConfig
	clock   clock.WithTicker
	metrics *Metrics

	// binds are the pods' policies (bind.go); listPolicies is
	// cfg.Policies.List.
	binds        *bindings
	listPolicies func(ns string) []*v1alpha1.SnugPolicy

	// sender sends resizes; nil when the decider never patches.
	sender *sender
	// fx runs every side effect off the loop and joins them (Wait).
	fx *executor

	// Loop-only.
	pods map[types.UID]*podState

	viewMu sync.RWMutex
	views  map[key]*viewState

	ckpt *checkpoints // nil unless UseCheckpoints

	// podLevelOff is the refusal that showed that this cluster (or node)
	// does not resize pods with pod-level resources (podlevel.go); "":
	// assumed to, as 1.36 and later do by default. Loop only.
	podLevelOff string

	// quotas are the fresh reads of namespaces' ResourceQuotas
	// (namespace.go). Loop only.
	quotas map[string]quotaRead
	// quotaVersions are the ResourceQuotas of each namespace as last
	// read, by name and resourceVersion (namespaceInputs).
	quotaVersions map[string]string

	// boosts are the containers' startup boosts (boost.go). Loop only.
	boosts map[key]*boostState
	// boosting are the pods with a container boosted: the loop keeps it,
	// the pod informer's goroutine reads it (podUpdated).
	boostMu  sync.Mutex
	boosting map[types.UID]bool
}

// podState is the recommender state of one pod under one policy.
type podState struct {
	ns, name string
	uid      types.UID
	policy   string // namespace/name
	// policyUID and policyGen are the policy's: a changed policy starts
	// afresh.
	policyUID types.UID
	policyGen int64
	mode      v1alpha1.UpdateMode
	ignoreOOM bool
	// admitted: the admission webhook sized the pod at creation under this
	// policy (history.AdmissionAnnotation), so its containers start at the
	// learnt size; the seed alone does not resize them (holdBaseline).
	admitted bool
	// notedUnadmitted: the NotSizedAtAdmission event was recorded.
	notedUnadmitted bool
	// podLevel says what the pod's pod-level resources (spec.resources)
	// are, when it has them (podlevel.go); podLevelNoted: the
	// PodLevelResources event said that the cluster does not resize them.
	podLevel      string
	podLevelNoted bool
	rec           *recommend.Pod
	opts          resize.Options
	// uncontrolled is the policy's status.uncontrolledResources: resources
	// an HPA scales the target on, which the agent never changes.
	uncontrolled []corev1.ResourceName
	// pol is the policy, at policyGen.
	pol *v1alpha1.SnugPolicy
	// phase is where the pod stands in the agent's work (phase.go); it
	// changes only through fire.
	phase podPhase
	// yields is set while the policy yields to a VerticalPodAutoscaler
	// (policy.YieldsToVPA): the pod is learnt but never changed.
	yields bool
	// deferredRules is the policy's behavior.deferred; deferral the pod's
	// Deferred resize, if any (deferred.go).
	deferredRules policy.Deferred
	deferral      *deferral

	containers map[string]*containerState
	// decidedAt is the time of the earliest sample whose decision made
	// the pod Wanted.
	decidedAt time.Time
	resizes   []ResizeJSON
	// refused are the patches the API server refused (the latest
	// maxRefused), none sent again unchanged while the namespace objects
	// it was fitted to are the same; an applied resize clears them.
	refused []refusedPatch
	// nsCondition is the ConditionNamespaceLimited last written,
	// restartCond the policy.ConditionRestartWanted.
	nsCondition, restartCond podCondition
	// grantAt is the restart window grant the pod shows (its
	// RestartGranted condition's time), grantSeen when the agent first saw
	// it, grantSpent whether the agent said it no longer asks while it was
	// shown (grantUsable).
	grantAt, grantSeen time.Time
	grantSpent         bool
	// pendingReason and pendingSince are the pod's pending resize as its
	// metric shows it (observePending).
	pendingReason string
	pendingSince  time.Time
}

// actuates reports whether the agent may resize the pod: its policy's mode
// resizes, and the policy does not yield to a VerticalPodAutoscaler.
func (st *podState) actuates() bool { return policy.Actuates(st.mode) && !st.yields }

type containerState struct {
	rc    *recommend.Container
	rules containerRules
	// qos is the pod's QoS class when the container was first seen (it
	// never changes: snug keeps it, the API server refuses a change).
	qos         corev1.PodQOSClass
	containerID string
	last        recommend.Decision
	lastTime    time.Time
	lastChange  *DecisionJSON
	samples     int                 // samples observed
	logged      [2]recommend.Change // last logged cpu and memory change
	wsBytes     int64
	cpuMillis   int64
	// restartRes are the resources the container asks a restart window
	// for (restartCPU, restartMemory; 0: none), restartWant the same as
	// the condition's message part, restartWantID the asking instance and
	// restartWantAt the last sample that wanted it (restartGoes);
	// restartSentID is the instance a restarting resize was sent for,
	// until it restarted (handleRestart); oomInstance is the instance that
	// runs because its predecessor was OOM-killed.
	restartRes                                             uint8
	restartWant, restartWantID, restartSentID, oomInstance string
	restartWantAt                                          time.Time
	// restartTakeBacks counts the restarting resizes taken back unapplied
	// (handleRestart); the container asks again only after
	// restartQuietUntil, a backoff that doubles with each.
	restartTakeBacks  int
	restartQuietUntil time.Time
	// restartHeldID is the container instance whose held RestartContainer
	// change was told in an event (once per instance).
	restartHeldID string
	// cpuRequest and memRequest are the container's series of its actual
	// requests (made once, so a sample sets them without hashing labels).
	cpuRequest, memRequest prometheus.Gauge
}

// Decide makes the agent's Decider and installs it as the Observer. Call it
// before Run.
func (a *Agent) Decide(cfg DeciderConfig) (*Decider, error) {
	if cfg.Pods == nil || cfg.Node == nil || cfg.Policies == nil {
		return nil, errors.New("configuring the decider: pods, node and policies are required")
	}
	if err := cfg.Recommend.Validate(); err != nil {
		return nil, fmt.Errorf("configuring the decider: %w", err)
	}
	if cfg.ResizeTimeout <= 0 {
		cfg.ResizeTimeout = DefaultResizeTimeout
	}
	d := &Decider{
		cfg: cfg, clock: a.clock, metrics: a.metrics, binds: a.binds, listPolicies: cfg.Policies.List,
		pods:          map[types.UID]*podState{},
		views:         map[key]*viewState{},
		fx:            newExecutor(),
		quotas:        map[string]quotaRead{},
		quotaVersions: map[string]string{},
		boosts:        map[key]*boostState{},
		boosting:      map[types.UID]bool{},
	}
	if err := cfg.Policies.OnChange(a.binds.policiesChanged); err != nil {
		return nil, fmt.Errorf("configuring the decider: %w", err)
	}
	if cfg.ResizeClient != nil && !cfg.DryRun {
		act := &actuate.Actuator{Client: cfg.ResizeClient, Source: cacheSource{feed: &a.feed, pods: cfg.Pods}, Clock: a.clock}
		d.sender = &sender{act: act, timeout: cfg.ResizeTimeout, clock: a.clock}
	}
	a.cfg.Observer = d
	a.decider = d
	a.podHook.Store(d)
	return d, nil
}

// Wait waits for every side effect started (resizes, reads, writes) to
// end; they end with their context.
func (d *Decider) Wait() { d.fx.wait() }

// Settled implements Settler: it fires when the results of side effects
// wait to be taken in.
func (d *Decider) Settled() <-chan struct{} { return d.fx.ready }

// Settle implements Settler: it takes in the results of side effects (a
// resize's outcome: recommender feedback, metrics, events, the JSON view;
// a read of quotas or of a checkpoint) on the loop goroutine, between
// passes, so they need not wait for the next pass.
func (d *Decider) Settle(ctx context.Context) {
	d.drain(ctx, logr.FromContextOrDiscard(ctx))
}

// Observe implements Observer. It finds the pod's bound policy (a map
// lookup, bind.go), keeps the pod's and container's state, and runs the
// pure decide step. A steady sample allocates nothing: logs, metrics and
// the JSON view are built only when something changes or is asked for.
func (d *Decider) Observe(ctx context.Context, ref ContainerRef, p Point) {
	k := key{ref.PodUID, ref.Container}
	pod, err := d.podOf(ref.PodUID, ref.Namespace, ref.Pod)
	if err != nil {
		return
	}
	pol := d.binds.policyFor(pod, d.listPolicies)
	if pol == nil {
		if _, ok := d.pods[pod.UID]; ok {
			delete(d.pods, pod.UID)
			d.metrics.forgetPod(pod.Namespace, pod.Name)
		}
		d.setView(k, nil)
		return
	}
	if ref.QOSClass == corev1.PodQOSBestEffort {
		d.setView(k, &viewState{
			policy: pol.Namespace + "/" + pol.Name, mode: policy.UpdateMode(pol),
			note: "BestEffort: left alone (a request would change its QoS class)",
		})
		return
	}
	st := d.podStateFor(ctx, pod, pol)
	if st == nil {
		return // policy unusable; logged once per generation
	}
	if unc := pol.Status.UncontrolledResources; !slices.Equal(st.uncontrolled, unc) {
		// The status changes without a new generation: keep the history,
		// change what may be resized.
		d.containerLog(ctx, pod, ref.Container).Info("policy's uncontrolled resources changed", "policy", st.policy, "uncontrolledResources", unc)
		st.uncontrolled = slices.Clone(unc)
		for name, cs := range st.containers {
			cs.rules = policy.RulesForPod(policy.ContainerPolicy(pol, name), st.uncontrolled, cs.qos)
			if err := cs.rc.SetBounds(cs.rules.Bounds); err != nil {
				d.containerLog(ctx, pod, name).Error(err, "applying uncontrolled resources")
			}
		}
	}
	if y := policy.YieldsToVPA(pol); y != st.yields {
		// A status change too: keep the history, stop or resume resizing.
		d.containerLog(ctx, pod, ref.Container).Info("policy's VPA conflict changed", "policy", st.policy, "yieldsToVPA", y)
		st.yields = y
	}
	cs := st.containers[ref.Container]
	if cs == nil {
		if cs = d.containerStateFor(ctx, pod, pol, st, ref); cs == nil {
			return // reading the policy's checkpoint, or failed; next sample
		}
	}
	status := containerStatus(pod, ref.Container)
	oom := !st.ignoreOOM && restartedAfterOOM(cs, ref.ContainerID, status)
	if oom {
		d.containerLog(ctx, pod, ref.Container).Info("container was oom-killed and restarted; growing memory")
	}
	actual := actualResources(pod, ref.Container, status)
	cs.cpuRequest.Set(float64(actual.CPURequestMillis) / 1000)
	cs.memRequest.Set(float64(actual.MemRequestBytes))
	boost := d.boosts[k]
	observeBoost(boost, p)
	if boost.boosted() {
		// The boost owns the CPU while it lasts: its samples are neither
		// learnt nor decided on (boost.go).
		p.HasRate = false
	}
	dec := decide(cs, ref.ContainerID, p, actual, oom)
	if boost.boosted() {
		dec.CPU = boostHold(actual)
		cs.last = dec
	}
	if st.admitted && cs.samples <= d.cfg.Recommend.WarmupSamples {
		dec = holdBaseline(dec)
		cs.last = dec
	}
	if oom {
		cs.oomInstance = ref.ContainerID
	}
	if ref.Container != resize.PodLevel && d.podLevelOff == "" {
		dec = holdPodLevel(pod, dec, actual)
		cs.last = dec
	}
	if held, ok := holdRestarting(pod, ref.Container, dec, actual); !ok {
		cs.restartIdle(ref, p.Time)
	} else if !d.restartGoes(st, cs, pod, ref, status, dec, actual, p.Time) {
		d.saidRestartRequired(pod, st, cs, ref, dec, held)
		dec, cs.last = held, held
	} else {
		dec = sizeForRestart(pod, ref.Container, dec, cs.rc.Recommendation(p.Time), actual)
		cs.last = dec
	}
	if dec.CPU.Action != recommend.Hold {
		d.metrics.decisions.WithLabelValues(dec.CPU.Action.String(), "cpu").Inc()
	}
	if dec.Memory.Action != recommend.Hold {
		d.metrics.decisions.WithLabelValues(dec.Memory.Action.String(), "memory").Inc()
	}
	for _, ch := range [2]recommend.Change{dec.CPU, dec.Memory} {
		if ch.Reason.Why == recommend.WhyBudget {
			d.metrics.budgetHits.Inc()
		}
	}
	if dec.Resize() {
		dj := decisionJSON(p.Time, dec)
		cs.lastChange = &dj
		// Log each new wish at V(0); the same wish repeated (recommend-only
		// modes, dry runs) at V(1).
		wish := [2]recommend.Change{sameWish(dec.CPU), sameWish(dec.Memory)}
		v := 1
		if cs.logged != wish {
			cs.logged = wish
			v = 0
		}
		if log := d.containerLog(ctx, pod, ref.Container); log.V(v).Enabled() {
			log.V(v).Info("decision", "decision", dec.String(), "policy", st.policy, "updateMode", st.mode, "dryRun", d.cfg.DryRun, "containerMode", containerModeString(cs.rules))
		}
		if !cs.rules.Off {
			wanted := st.phase == phaseWanted
			if st.fire(evWish) && (!wanted || p.Time.Before(st.decidedAt)) {
				st.decidedAt = p.Time
			}
		}
	}
	d.updateView(k, st, cs, p.Time)
}

// podOf returns the pod with uid: as its last informer event delivered it
// (no lookup cost), else from the lister (a Decider fed otherwise).
func (d *Decider) podOf(uid types.UID, ns, name string) (*corev1.Pod, error) {
	if pod, ok := d.binds.pod(uid); ok {
		return pod, nil
	}
	pod, err := d.cfg.Pods.Pods(ns).Get(name)
	if err != nil {
		return nil, err
	}
	if pod.UID != uid {
		return nil, fmt.Errorf("pod %s/%s is another pod now", ns, name)
	}
	return pod, nil
}

// decide is the decision step for one sample of one container: it feeds
// the sample and the container's actual resources to the container's
// recommender (an OOM kill first, when the container restarted after one)
// and keeps what the planner needs from it. It reads no clock (the
// sample's time is now), does no I/O and allocates nothing; cs is the only
// state it changes.
func decide(cs *containerState, containerID string, p Point, actual recommend.Resources, oomKilled bool) recommend.Decision {
	if oomKilled {
		cs.rc.OOMKilled()
	}
	cs.containerID = containerID
	cs.samples++
	dec := cs.rc.Observe(p.Time, p.Signals, actual)
	cs.last, cs.lastTime = dec, p.Time
	cs.wsBytes = int64(p.MemoryWorkingSetBytes)
	if p.HasRate {
		cs.cpuMillis = int64(p.CPUUsageMillicores)
	}
	return dec
}

// newPodAge is how young a pod must be for NotSizedAtAdmission: an agent
// restart meets old pods, which no webhook was asked about.
const newPodAge = 2 * time.Minute

func isNew(pod *corev1.Pod, now time.Time) bool {
	return now.Sub(pod.CreationTimestamp.Time) < newPodAge
}

// holdBaseline keeps the fast path's changes of a decision (starvation:
// throttling, OOM, memory near its limit) and holds the baseline's (grow or
// shrink toward the target), for a pod the admission webhook already sized
// from the same learnt history: one mechanism sizes a new pod
// (docs/controller.md, "New pods: one owner"). It applies while the
// container has at most WarmupSamples samples of its own; after that the
// target includes the pod's own history and the baseline acts as for any
// pod.
func holdBaseline(dec recommend.Decision) recommend.Decision {
	for _, ch := range []*recommend.Change{&dec.CPU, &dec.Memory} {
		if w := ch.Reason.Why; ch.Action != recommend.Hold && (w == recommend.WhyAboveRequest || w == recommend.WhyBelowRequest) {
			ch.Action, ch.Request = recommend.Hold, ch.Reason.Request
			ch.Reason.Why = recommend.WhyInBand
		}
	}
	return dec
}

// restartedAfterOOM reports whether the container, known as cs, now runs
// as containerID because the last one was OOM-killed.
func restartedAfterOOM(cs *containerState, containerID string, status *corev1.ContainerStatus) bool {
	if cs.containerID == "" || cs.containerID == containerID || status == nil {
		return false
	}
	t := status.LastTerminationState.Terminated
	return t != nil && t.Reason == "OOMKilled"
}

// containerLog is the logger for a container's messages; built only when
// there is something to log.
func (d *Decider) containerLog(ctx context.Context, pod *corev1.Pod, container string) logr.Logger {
	return logr.FromContextOrDiscard(ctx).WithValues("pod", pod.Namespace+"/"+pod.Name, "container", container)
}

// podStateFor returns the pod's state under pol, starting it afresh when
// the pod is new or the policy changed (a new UID or generation). It
// returns nil while the policy's generation is unusable.
func (d *Decider) podStateFor(ctx context.Context, pod *corev1.Pod, pol *v1alpha1.SnugPolicy) *podState {
	st := d.pods[pod.UID]
	if st != nil && st.policyUID == pol.UID && st.policyGen == pol.Generation {
		if st.phase == phaseUnusable {
			return nil
		}
		return st
	}
	phase := phaseIdle
	noted := false
	if st != nil {
		noted = st.podLevelNoted
		// Another policy, or a new generation: its series start afresh.
		d.metrics.forgetPod(st.ns, st.name)
		if st.phase == phaseInFlight {
			// The resize sent under the old one is still out: its
			// outcome ends the new state's InFlight.
			phase = phaseInFlight
		}
	}
	cfg, opts, err := policy.Behavior(d.cfg.Recommend, pol)
	var rec *recommend.Pod
	if err == nil {
		rec, err = recommend.NewPod(cfg)
	}
	if err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "using policy", "pod", pod.Namespace+"/"+pod.Name, "policy", pol.Namespace+"/"+pol.Name)
		// Kept (with no recommender) so the error is logged once per
		// policy generation, not every second.
		d.pods[pod.UID] = &podState{ns: pod.Namespace, name: pod.Name, uid: pod.UID, policyUID: pol.UID, policyGen: pol.Generation, phase: phaseUnusable}
		return nil
	}
	st = &podState{
		ns: pod.Namespace, name: pod.Name, uid: pod.UID,
		policy: pol.Namespace + "/" + pol.Name, policyUID: pol.UID, policyGen: pol.Generation, mode: policy.UpdateMode(pol),
		pol: pol, phase: phase, ignoreOOM: policy.IgnoresOOMKills(pol), rec: rec, opts: opts,
		containers: map[string]*containerState{}, deferredRules: policy.DeferredOf(pol),
		uncontrolled: slices.Clone(pol.Status.UncontrolledResources),
	}
	if a, ok, _ := history.ParseAdmission(pod); ok && a.Policy == pol.Name {
		st.admitted = true
	}
	if rr := pod.Spec.Resources; rr != nil && (len(rr.Requests) > 0 || len(rr.Limits) > 0) {
		st.podLevel = podLevelSummary(*rr)
		st.podLevelNoted = noted
	}
	d.pods[pod.UID] = st
	return st
}

// containerStateFor starts recommending for a container new to st, seeded
// from the policy's checkpoint; nil while the checkpoint is being read or
// when the recommender refuses.
func (d *Decider) containerStateFor(ctx context.Context, pod *corev1.Pod, pol *v1alpha1.SnugPolicy, st *podState, ref ContainerRef) *containerState {
	log := d.containerLog(ctx, pod, ref.Container)
	rules := policy.RulesForPod(policy.ContainerPolicy(pol, ref.Container), st.uncontrolled, ref.QOSClass)
	seed, ok := d.seed(ctx, log, pol, st, ref.Container)
	if !ok {
		return nil
	}
	rc, err := st.rec.AddContainer(ref.Container, rules.Bounds, seed)
	if err != nil {
		log.Error(err, "starting to recommend")
		return nil
	}
	if seed != nil && !st.admitted && !st.notedUnadmitted && st.mode != v1alpha1.UpdateModeOff && !rules.Off && isNew(pod, d.clock.Now()) {
		// Say it once per pod: the webhook would have sized it.
		st.notedUnadmitted = true
		then := "snug sizes it from the history"
		if !policy.Actuates(st.mode) {
			then = "under updateMode " + string(st.mode) + " it keeps that size until it is recreated"
		}
		d.event(pod, corev1.EventTypeNormal, ReasonNotSizedAtAdmission,
			"created at its template's size although workload history exists (the admission webhook did not size it: down, disabled or opted out); "+then)
	}
	cs := &containerState{rc: rc, rules: rules, qos: ref.QOSClass}
	l := prometheus.Labels{"namespace": pod.Namespace, "pod": pod.Name, "container": ref.Container, "policy": pol.Name}
	cs.cpuRequest, cs.memRequest = d.metrics.cpuRequest.With(l), d.metrics.memoryRequest.With(l)
	st.containers[ref.Container] = cs
	return cs
}

// podLevelSummary says what pod-level resources are: "cpu 200m/400m,
// memory -/1Gi" (request/limit).
func podLevelSummary(rr corev1.ResourceRequirements) string {
	var parts []string
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := rr.Requests[r]
		lim, hasLim := rr.Limits[r]
		if !hasReq && !hasLim {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s/%s", r, qty(req), qty(lim)))
	}
	return strings.Join(parts, ", ")
}

// sameWish strips what changes every second from a change, for comparing
// wishes.
func sameWish(c recommend.Change) recommend.Change {
	return recommend.Change{Action: c.Action, Request: c.Request}
}

func containerModeString(r containerRules) string {
	if r.Off {
		return string(v1alpha1.ContainerScalingModeOff)
	}
	return string(v1alpha1.ContainerScalingModeAuto)
}

// PassDone implements PassObserver: it takes in the results of finished
// side effects, forgets pods that are gone, and plans and sends one resize
// per Wanted pod (its containers asked for one in this pass).
func (d *Decider) PassDone(ctx context.Context) {
	log := logr.FromContextOrDiscard(ctx)
	d.binds.sweep()
	d.drain(ctx, log)
	now := d.clock.Now()
	for uid, st := range d.pods {
		pod, err := d.podOf(uid, st.ns, st.name)
		if err != nil {
			delete(d.pods, uid)
			d.dropViews(uid)
			d.metrics.forgetPod(st.ns, st.name)
			continue
		}
		if st.phase == phaseUnusable {
			continue
		}
		d.observePending(st, pod)
		if d.handleBoost(ctx, log, st, pod, now) {
			continue // the boost's resize is in flight; decide again after it
		}
		if d.handleRestart(ctx, log, st, pod, now) {
			continue // the take-back is in flight; decide again after it
		}
		if d.handleDeferred(ctx, log, st, pod, now) {
			continue // the fit is in flight; decide again after it
		}
		if st.phase != phaseWanted {
			continue
		}
		if !st.actuates() || d.sender == nil {
			st.fire(evHold)
			continue
		}
		st.fire(d.plan(ctx, log, st, pod, now))
	}
	d.sweepBoosts()
	d.publishSnapshots(ctx, log, now)
}

// nodeClaims is what the node's other pods claim (resize.Claimed) and the
// room a grow of pod leaves free for the replacement of a higher-priority
// pod (resize.PreemptionReserve), from the pod informer's cache; nil, nil
// when it cannot be listed.
func (d *Decider) nodeClaims(pod *corev1.Pod) (others, reserve corev1.ResourceList) {
	all, err := d.cfg.Pods.List(labels.Everything())
	if err != nil {
		return nil, nil
	}
	pods := make([]corev1.Pod, 0, len(all))
	for _, p := range all {
		pods = append(pods, *p)
	}
	return resize.Claimed(pods, pod.UID), resize.PreemptionReserve(pods, pod)
}

// plan plans the pod's wished resize and sends it. It returns the event
// that moves the pod on: evSent, evAwaitQuota (reading the namespace's
// quotas first) or evHold.
func (d *Decider) plan(ctx context.Context, log logr.Logger, st *podState, pod *corev1.Pod, now time.Time) podEvent {
	log = log.WithValues("pod", st.ns+"/"+st.name)
	var wish resize.Wish
	usage := map[string]resize.Usage{}
	names := make([]string, 0, len(st.containers))
	for name := range st.containers {
		names = append(names, name)
	}
	slices.Sort(names)
	var why []string
	if st.podLevel != "" && d.podLevelOff != "" {
		// The cluster does not resize pods with pod-level resources, not
		// even their containers.
		d.notePodLevelOff(log, st, pod)
		return evHold
	}
	for _, name := range names {
		cs := st.containers[name]
		usage[name] = resize.Usage{CPUMillis: cs.cpuMillis, MemoryWorkingSetBytes: cs.wsBytes, MemoryPeakBytes: cs.rc.MemoryPeakBytes(now), MemoryLimitFloorBytes: cs.rc.MemoryLimitFloorBytes()}
		if cs.rules.Off {
			continue
		}
		t := corev1.ResourceList{}
		// A change to a RestartContainer resource goes only in a usable
		// restart window, once per container instance (restartGoes holds
		// it otherwise; this also stops a stale decision).
		mayRestart := restartAllowed(st, pod, cs, now)
		if c := cs.last.CPU; c.Action != recommend.Hold && !d.boosts[key{st.uid, name}].boosted() &&
			(mayRestart || restartPolicy(pod, name, corev1.ResourceCPU) != corev1.RestartContainer) {
			t[corev1.ResourceCPU] = *resource.NewMilliQuantity(c.Request, resource.DecimalSI)
			why = append(why, fmt.Sprintf("%s cpu %s: %s", resize.DisplayName(name), c.Action, c.Reason))
		}
		if c := cs.last.Memory; c.Action != recommend.Hold && (mayRestart || restartPolicy(pod, name, corev1.ResourceMemory) != corev1.RestartContainer) {
			t[corev1.ResourceMemory] = *resource.NewQuantity(c.Request, resource.BinarySI)
			why = append(why, fmt.Sprintf("%s memory %s: %s", resize.DisplayName(name), c.Action, c.Reason))
		}
		if name == resize.PodLevel {
			podLevelTarget(pod, t)
		}
		if len(t) == 0 {
			continue
		}
		pol := cs.rules.Policy
		wish.Containers = append(wish.Containers, resize.ContainerWish{Name: name, Target: t, Policy: &pol})
	}
	if len(wish.Containers) == 0 {
		return evHold
	}
	// The wish holds a change to a RestartContainer resource only in a
	// usable restart window (above): the planner may restart then.
	opts := st.opts
	opts.AllowRestart = wishRestarts(pod, wish)
	opts.PodLevelResize = d.podLevelOff == ""
	in := resize.Input{Pod: pod, Usage: usage, Wish: wish, Options: opts}
	if node, err := d.cfg.Node(); err == nil && node != nil {
		in.NodeAllocatable = node.Status.Allocatable
	} else {
		log.Error(err, "reading the node; planning without node room")
	}
	in.OthersClaimed, in.Reserve = d.nodeClaims(pod)
	var quotasKnown bool
	in.Namespace, quotasKnown = d.namespaceFor(pod, now)
	plan, err := resize.NewPlan(in)
	if err != nil {
		var ref *resize.Refusal
		o := resize.Rejected
		if errors.As(err, &ref) {
			switch ref.Reason {
			case resize.ReasonWouldDefer:
				o = resize.Deferred
			case resize.ReasonWouldBeInfeasible:
				o = resize.Infeasible
			case resize.ReasonQuotaFull:
				// As a plan cut to nothing by the node: ask only for
				// what the pod has, for the cap's time.
				st.rec.Feedback(now, recommend.Feedback{Outcome: resize.Deferred, Caps: wishedCaps(pod, wish), CapBy: capByNamespace})
				d.metrics.outcomes.WithLabelValues(st.ns, policyName(st.policy), "Refused").Inc()
				log.Info("no room in the namespace", "err", err.Error(), "wanted", strings.Join(why, "; "))
				d.event(pod, corev1.EventTypeWarning, ReasonNamespaceFull, "snug planned no resize: "+err.Error())
				d.setNamespaceCondition(ctx, log, st, pod, podCondition{corev1.ConditionTrue, ReasonNamespaceFull, ref.Error()})
				return evHold
			}
		}
		st.rec.Feedback(now, recommend.Feedback{Outcome: o})
		d.metrics.outcomes.WithLabelValues(st.ns, policyName(st.policy), "Refused").Inc()
		log.Info("resize refused by the planner", "err", err.Error(), "wanted", strings.Join(why, "; "))
		d.event(pod, corev1.EventTypeWarning, ReasonResizeRefused, "snug planned no resize: "+err.Error())
		return evHold
	}
	if plan.NoOp() {
		// Everything was cut back to what the pod has (no room on the
		// node): tell the recommender what fits, so it stops asking.
		st.rec.Feedback(now, recommend.Feedback{Outcome: resize.Deferred, Caps: currentCaps(pod, wish)})
		d.metrics.outcomes.WithLabelValues(st.ns, policyName(st.policy), "NoOp").Inc()
		log.V(1).Info("resize planned to nothing", "notes", notes(plan))
		return evHold
	}
	if !quotasKnown && planGrows(pod, plan) {
		// A grow: read the namespace's quotas first, then plan again.
		d.readQuotas(ctx, pod.Namespace)
		return evAwaitQuota
	}
	inputs := d.namespaceInputs(pod.Namespace)
	if i := slices.IndexFunc(st.refused, func(r refusedPatch) bool {
		return bytes.Equal(plan.Patch, r.patch) && inputs == r.inputs
	}); i >= 0 {
		// The API server refused this very patch, planned on these very
		// quotas and LimitRanges (a quota full by other pods' changes
		// since they were read, an admission webhook, RBAC): it is never
		// sent again unchanged. A new plan (the pod, its recommendation
		// or the node moved) or a changed quota or LimitRange (its
		// usage or its limits: what the planner fits to) may send it.
		st.rec.Feedback(now, recommend.Feedback{Outcome: resize.Deferred, Caps: wishedCaps(pod, wish), CapBy: "Refused"})
		d.metrics.outcomes.WithLabelValues(st.ns, policyName(st.policy), "NoOp").Inc()
		log.V(1).Info("the API server refused this resize before; not sending it again", "plan", planSummary(pod, plan), "refusal", st.refused[i].message)
		return evHold
	}
	job := sendJob{
		uid: pod.UID, pod: pod, policy: policyName(st.policy), patch: plan.Patch, want: plan.Containers, decidedAt: st.decidedAt, plan: plan,
		summary: planSummary(pod, plan) + " (" + strings.Join(why, "; ") + ")", inputs: inputs,
	}
	if slices.ContainsFunc(plan.Notes, func(n resize.Note) bool { return n.Adjustment == resize.CappedToNodeRoom }) {
		job.caps = planCaps(plan)
	}
	if caps := namespaceCaps(plan); caps != nil {
		job.caps, job.namespaceCapped = mergeCaps(job.caps, caps), true
	}
	if !d.send(ctx, job) {
		// A resize sent under the pod's earlier policy is still out;
		// decide again after it.
		log.V(1).Info("a resize of the pod is still being actuated; not sending", "plan", job.summary)
		return evHold
	}
	st.rec.Sent(now)
	if restarting := plan.Restarts(); len(restarting) > 0 {
		for _, name := range restarting {
			if cs := st.containers[name]; cs != nil {
				cs.restartSentID = cs.containerID
			}
		}
		d.metrics.restartResizes.WithLabelValues(st.ns, policyName(st.policy), "Sent").Inc()
		d.event(pod, corev1.EventTypeNormal, ReasonRestartWindow, "snug resizes "+job.summary+" in the restart window the controller granted; the kubelet restarts "+strings.Join(restarting, ", ")+" to apply it")
	}
	d.metrics.resizesLastHour.Observe(float64(st.rec.ResizesInLastHour(now)))
	log.Info("resizing", "plan", job.summary, "notes", notes(plan), "predicted", plan.Predicted.String())
	return evSent
}

// send hands job to the executor, keyed by its pod so that a pod has one
// resize out at a time; its outcome is taken in by finish. It reports
// whether the job started.
func (d *Decider) send(ctx context.Context, job sendJob) bool {
	return d.fx.start(ctx, "resize/"+string(job.uid), func(ctx context.Context) settleFunc {
		r := d.sender.run(ctx, job)
		return func(ctx context.Context, log logr.Logger) { d.finish(ctx, log, r) }
	})
}

// drain takes in the results of finished side effects, on the loop
// goroutine, and forgets stale quota reads.
func (d *Decider) drain(ctx context.Context, log logr.Logger) {
	for _, settle := range d.fx.take() {
		settle(ctx, log)
	}
	d.expireQuotas(d.clock.Now())
}

func (d *Decider) finish(ctx context.Context, log logr.Logger, r sendResult) {
	now := d.clock.Now()
	pod := r.job.pod
	d.metrics.outcomes.WithLabelValues(pod.Namespace, r.job.policy, r.outcome.String()).Inc()
	log = log.WithValues("pod", pod.Namespace+"/"+pod.Name)
	rj := ResizeJSON{
		Outcome: r.outcome.String(), Plan: r.job.summary, DecidedAt: r.job.decidedAt, SentAt: r.sentAt,
		DecisionToPatchSeconds: r.patchedAt.Sub(r.job.decidedAt).Seconds(),
		Containers:             r.job.targets(),
		Deferred:               r.job.deferred,
		StartupBoost:           r.job.boost,
	}
	if r.outcome == resize.Applied {
		at := r.finishedAt
		rj.AppliedAt = &at
		rj.DecisionToAppliedSeconds = at.Sub(r.job.decidedAt).Seconds()
		d.metrics.appliedLatency.Observe(rj.DecisionToAppliedSeconds)
		log.Info("resized", "plan", r.job.summary, "decisionToPatchSeconds", round3(rj.DecisionToPatchSeconds), "decisionToAppliedSeconds", round3(rj.DecisionToAppliedSeconds))
		switch {
		case r.job.boost != "":
			// finishBoost records it.
		case r.job.deferred == deferredRestartClosed:
			d.event(pod, corev1.EventTypeNormal, ReasonRestartWindow, fmt.Sprintf("snug took back %s, applied in %.1fs", r.job.summary, rj.DecisionToAppliedSeconds))
		case r.job.deferred != "":
			d.event(pod, corev1.EventTypeNormal, ReasonFittedToNode, fmt.Sprintf("snug fitted a deferred resize to the node: %s, applied in %.1fs", r.job.summary, rj.DecisionToAppliedSeconds))
		case r.job.namespaceCapped:
			d.event(pod, corev1.EventTypeNormal, ReasonFittedToNamespace, fmt.Sprintf("snug resized %s in %.1fs, fitted to the namespace: %s", r.job.summary, rj.DecisionToAppliedSeconds, namespaceNotes(r.job.plan)))
		default:
			d.event(pod, corev1.EventTypeNormal, ReasonResized, fmt.Sprintf("snug resized %s in %.1fs", r.job.summary, rj.DecisionToAppliedSeconds))
		}
	} else {
		msg := r.outcome.String()
		if r.err != nil {
			msg += ": " + r.err.Error()
		} else if r.message != "" {
			msg += ": " + r.message
		}
		if r.reverted {
			msg += "; spec reverted to the actual resources"
		}
		rj.Message = msg
		if d.podLevelOff == "" && podLevelSet(pod) != nil && podLevelUnsupported(msg) {
			// Cluster-wide (the API server) or node-wide (the kubelet):
			// no pod with pod-level resources is resized from now on.
			d.podLevelOff = msg
			log.Info("this cluster does not resize pods with pod-level resources in place", "refusal", msg)
		}
		log.Info("resize not applied", "outcome", r.outcome.String(), "message", msg, "plan", r.job.summary)
		d.event(pod, corev1.EventTypeWarning, ReasonResizeRefused, fmt.Sprintf("snug's resize %s: %s", r.job.summary, msg))
	}
	st := d.pods[r.job.uid]
	if st == nil || st.phase == phaseUnusable {
		return
	}
	if d.podLevelOff != "" && st.podLevel != "" {
		d.notePodLevelOff(log, st, pod)
	}
	st.fire(evSettled)
	if r.job.boost != "" {
		d.finishBoost(st, r)
	}
	// A deferred action or a boost is no decision of the recommender's: it
	// sees the result in the actual resources.
	if r.job.deferred == "" && r.job.boost == "" {
		fb := recommend.Feedback{Outcome: r.outcome, Caps: r.job.caps}
		if r.outcome == resize.Unknown {
			fb.Outcome = resize.Timeout
		}
		if r.outcome == resize.Applied {
			fb.Caps = nil
		}
		st.rec.Feedback(now, fb)
		if r.outcome == resize.Applied && r.job.namespaceCapped {
			// What the namespace had room for is what the pod got: the
			// recommender asks for no more for the cap's time.
			st.rec.Feedback(now, recommend.Feedback{Outcome: resize.Deferred, Caps: r.job.caps, CapBy: capByNamespace})
		}
	}
	switch {
	case r.outcome == resize.Rejected && r.job.deferred == "" && r.job.boost == "":
		// Never sent again unchanged on the same quotas and LimitRanges;
		// the quotas are read again before the next grow.
		st.refused = append(st.refused, refusedPatch{patch: r.job.patch, message: rj.Message, inputs: r.job.inputs})
		if len(st.refused) > maxRefused {
			st.refused = slices.Delete(st.refused, 0, len(st.refused)-maxRefused)
		}
		delete(d.quotas, st.ns)
	case r.outcome == resize.Applied:
		st.refused = nil
		cur, err := d.podOf(st.uid, st.ns, st.name)
		switch {
		case err != nil:
		case r.job.namespaceCapped:
			d.setNamespaceCondition(ctx, log, st, cur, podCondition{corev1.ConditionTrue, ReasonFittedToNamespace, namespaceNotes(r.job.plan)})
		case r.job.deferred == "" && r.job.boost == "":
			d.setNamespaceCondition(ctx, log, st, cur, podCondition{corev1.ConditionFalse, reasonFits, "the last resize fitted the namespace whole"})
		}
	}
	// Views share st.resizes' array up to their length: append only, and
	// trim into a fresh array.
	st.resizes = append(st.resizes, rj)
	if len(st.resizes) > maxResizesKept {
		st.resizes = slices.Clone(st.resizes[len(st.resizes)-maxResizesKept:])
	}
	for name, cs := range st.containers {
		d.updateView(key{st.uid, name}, st, cs, now)
	}
}

// observePending keeps the pod's pending-resize series in step with its
// PodResizePending condition; it touches the metric only on a change.
func (d *Decider) observePending(st *podState, pod *corev1.Pod) {
	var reason string
	var since time.Time
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue &&
			(c.Reason == corev1.PodReasonDeferred || c.Reason == corev1.PodReasonInfeasible) {
			reason, since = c.Reason, c.LastTransitionTime.Time
		}
	}
	if reason == st.pendingReason && since.Equal(st.pendingSince) {
		return
	}
	if st.pendingReason != "" {
		d.metrics.pendingSince.DeleteLabelValues(st.ns, st.name, policyName(st.policy), st.pendingReason)
	}
	if reason != "" {
		d.metrics.pendingSince.WithLabelValues(st.ns, st.name, policyName(st.policy), reason).Set(float64(since.UnixNano()) / 1e9)
	}
	st.pendingReason, st.pendingSince = reason, since
}

// maxResizesKept is how many recent resizes a pod's view lists.
const maxResizesKept = 16

func (d *Decider) event(pod *corev1.Pod, typ, reason, msg string) {
	if d.cfg.Recorder == nil {
		return
	}
	d.cfg.Recorder.Event(&corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
	}, typ, reason, msg)
}

func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// actualResources are the container's actual requests and limits
// (status.containerStatuses[].resources), or its spec when the node does
// not report them.
func actualResources(pod *corev1.Pod, name string, st *corev1.ContainerStatus) recommend.Resources {
	if name == resize.PodLevel {
		return podLevelActual(pod)
	}
	var rr *corev1.ResourceRequirements
	if st != nil && st.Resources != nil {
		rr = st.Resources
	} else {
		for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range list {
				if list[i].Name == name {
					rr = &list[i].Resources
				}
			}
		}
	}
	if rr == nil {
		return recommend.Resources{}
	}
	return resourcesOf(rr.Requests, rr.Limits)
}

// resourcesOf reads cpu (millicores) and memory (bytes) out of requests
// and limits; a missing entry is 0.
func resourcesOf(requests, limits corev1.ResourceList) recommend.Resources {
	var r recommend.Resources
	if q, ok := requests[corev1.ResourceCPU]; ok {
		r.CPURequestMillis = q.MilliValue()
	}
	if q, ok := limits[corev1.ResourceCPU]; ok {
		r.CPULimitMillis = q.MilliValue()
	}
	if q, ok := requests[corev1.ResourceMemory]; ok {
		r.MemRequestBytes = q.Value()
	}
	if q, ok := limits[corev1.ResourceMemory]; ok {
		r.MemLimitBytes = q.Value()
	}
	return r
}

// currentCaps are the current requests of the wished containers.
func currentCaps(pod *corev1.Pod, w resize.Wish) []recommend.Cap {
	var caps []recommend.Cap
	for _, c := range w.Containers {
		r := actualResources(pod, c.Name, containerStatus(pod, c.Name))
		caps = append(caps, recommend.Cap{Container: c.Name, CPUMillis: r.CPURequestMillis, MemBytes: r.MemRequestBytes})
	}
	return caps
}

// wishedCaps are the current requests of the resources the wish changes,
// and no cap (0) for the others.
func wishedCaps(pod *corev1.Pod, w resize.Wish) []recommend.Cap {
	var caps []recommend.Cap
	for _, c := range w.Containers {
		r := actualResources(pod, c.Name, containerStatus(pod, c.Name))
		cp := recommend.Cap{Container: c.Name}
		if _, ok := c.Target[corev1.ResourceCPU]; ok {
			cp.CPUMillis = r.CPURequestMillis
		}
		if _, ok := c.Target[corev1.ResourceMemory]; ok {
			cp.MemBytes = r.MemRequestBytes
		}
		caps = append(caps, cp)
	}
	return caps
}

// namespaceCaps are the plan's new requests of the resources it cut to
// fit the namespace (CappedToNamespace), and no cap (0) for the others;
// nil when it cut none.
func namespaceCaps(p *resize.Plan) []recommend.Cap {
	cut := map[string]map[corev1.ResourceName]bool{}
	for _, n := range p.Notes {
		if n.Adjustment == resize.CappedToNamespace && n.Container != "" {
			if cut[n.Container] == nil {
				cut[n.Container] = map[corev1.ResourceName]bool{}
			}
			cut[n.Container][n.Resource] = true
		}
	}
	if len(cut) == 0 {
		return nil
	}
	var caps []recommend.Cap
	for _, c := range p.Containers {
		cp := recommend.Cap{Container: c.Name}
		if q, ok := c.Requests[corev1.ResourceCPU]; ok && cut[c.Name][corev1.ResourceCPU] {
			cp.CPUMillis = q.MilliValue()
		}
		if q, ok := c.Requests[corev1.ResourceMemory]; ok && cut[c.Name][corev1.ResourceMemory] {
			cp.MemBytes = q.Value()
		}
		caps = append(caps, cp)
	}
	return caps
}

// mergeCaps is the lower of a's and b's cap of each container's
// resources (0, no cap, counts as none).
func mergeCaps(a, b []recommend.Cap) []recommend.Cap {
	lower := func(x, y int64) int64 {
		if x == 0 || (y != 0 && y < x) {
			return y
		}
		return x
	}
	out := slices.Clone(a)
	for _, cb := range b {
		i := slices.IndexFunc(out, func(c recommend.Cap) bool { return c.Container == cb.Container })
		if i < 0 {
			out = append(out, cb)
			continue
		}
		out[i].CPUMillis, out[i].MemBytes = lower(out[i].CPUMillis, cb.CPUMillis), lower(out[i].MemBytes, cb.MemBytes)
	}
	return out
}

// planCaps are a plan's new requests, the most the node had room for.
func planCaps(p *resize.Plan) []recommend.Cap {
	var caps []recommend.Cap
	for _, c := range p.Containers {
		cp := recommend.Cap{Container: c.Name}
		if q, ok := c.Requests[corev1.ResourceCPU]; ok {
			cp.CPUMillis = q.MilliValue()
		}
		if q, ok := c.Requests[corev1.ResourceMemory]; ok {
			cp.MemBytes = q.Value()
		}
		caps = append(caps, cp)
	}
	return caps
}

// planSummary says what a plan changes: "app cpu 50m/100m -> 125m/250m".
func planSummary(pod *corev1.Pod, p *resize.Plan) string {
	var parts []string
	for _, c := range p.Containers {
		var old corev1.ResourceRequirements
		if st := containerStatus(pod, c.Name); st != nil && st.Resources != nil {
			old = *st.Resources
		}
		if c.PodLevel {
			old = podLevelActualLists(pod)
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			or, ol := old.Requests[res], old.Limits[res]
			nr, nl := c.Requests[res], c.Limits[res]
			if or.Cmp(nr) == 0 && ol.Cmp(nl) == 0 {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %s %s/%s -> %s/%s", resize.DisplayName(c.Name), res, qty(or), qty(ol), qty(nr), qty(nl)))
		}
	}
	return strings.Join(parts, ", ")
}

func qty(q resource.Quantity) string {
	if q.IsZero() {
		return "-"
	}
	return q.String()
}

func notes(p *resize.Plan) string {
	var s []string
	for _, n := range p.Notes {
		s = append(s, n.String())
	}
	return strings.Join(s, "; ")
}

// maxRefused is how many refused patches a pod keeps: a pod whose wishes
// alternate (a cpu grow refused, then a memory shrink refused) sends
// neither twice; the oldest goes first.
const maxRefused = 8

// refusedPatch is a resize patch the API server refused, why, and the
// namespace objects it was planned on (namespaceInputs).
type refusedPatch struct {
	patch   []byte
	message string
	inputs  string
}

// capByNamespace names a cap from the namespace's room in the
// recommender's reasons ("capped at ... (Namespace)").
const capByNamespace = "Namespace"

// namespaceNotes are the plan's notes from fitting it to the namespace.
func namespaceNotes(p *resize.Plan) string {
	var s []string
	for _, n := range p.Notes {
		if n.Adjustment == resize.CappedToNamespace || n.Adjustment == resize.RaisedToNamespace {
			s = append(s, n.String())
		}
	}
	return strings.Join(s, "; ")
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }
