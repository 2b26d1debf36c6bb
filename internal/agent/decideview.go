package agent

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
)

// AutoscaleJSON is what the decision step knows of one container, in the
// JSON API (field "autoscale" of a container; absent when no policy covers
// its pod).
type AutoscaleJSON struct {
	// Policy is the covering SnugPolicy, namespace/name.
	Policy string `json:"policy"`
	// UpdateMode is the policy's updateMode.
	UpdateMode string `json:"updateMode"`
	// ContainerMode is the container policy's mode (Auto or Off).
	ContainerMode string `json:"containerMode,omitempty"`
	// DryRun is true when the agent decides but never patches.
	DryRun bool `json:"dryRun,omitempty"`
	// Note says why the container is left alone, if it is, or what snug
	// does not do for it (its pod's pod-level resources).
	Note string `json:"note,omitempty"`
	// Recommendation is the container's VPA-style estimate.
	Recommendation *RecommendationJSON `json:"recommendation,omitempty"`
	// LastDecision is the decision of the latest sample.
	LastDecision *DecisionJSON `json:"lastDecision,omitempty"`
	// LastChange is the latest decision that was not Hold for both resources.
	LastChange *DecisionJSON `json:"lastChange,omitempty"`
	// Resizes are the pod's recent resizes (up to 16), oldest first.
	Resizes []ResizeJSON `json:"resizes,omitempty"`
	// ResizesLastHour counts the pod's resizes in the sliding hour.
	ResizesLastHour int `json:"resizesLastHour"`
	// Deferred is the pod's resize that the kubelet deferred, while it is.
	Deferred *DeferredJSON `json:"deferred,omitempty"`
	// Seed is the workload history the container started from, if any.
	Seed *SeedJSON `json:"seed,omitempty"`
	// StartupBoost is the container's startup boost, if it had one.
	StartupBoost *BoostJSON `json:"startupBoost,omitempty"`
}

// RecommendationJSON is a recommend.Recommendation.
type RecommendationJSON struct {
	CPUMillicores EstimateJSON `json:"cpuMillicores"`
	MemoryBytes   EstimateJSON `json:"memoryBytes"`
}

// EstimateJSON is a recommend.Estimate.
type EstimateJSON struct {
	Target         int64 `json:"target"`
	LowerBound     int64 `json:"lowerBound"`
	UpperBound     int64 `json:"upperBound"`
	UncappedTarget int64 `json:"uncappedTarget"`
}

// DecisionJSON is a recommend.Decision at a sample's time.
type DecisionJSON struct {
	Time   time.Time  `json:"time"`
	CPU    ChangeJSON `json:"cpu"`
	Memory ChangeJSON `json:"memory"`
}

// ChangeJSON is one resource's recommend.Change: requests in millicores
// (cpu) or bytes (memory).
type ChangeJSON struct {
	Action  string `json:"action"`
	Request int64  `json:"request"`
	Limit   int64  `json:"limit,omitempty"`
	Fast    bool   `json:"fast,omitempty"`
	Why     string `json:"why"`
	Reason  string `json:"reason"`
}

// ResizeJSON is one resize the agent sent, and what became of it.
type ResizeJSON struct {
	// Outcome is resize.Outcome's name.
	Outcome string `json:"outcome"`
	// Plan says what changed and why.
	Plan string `json:"plan"`
	// Containers are the new values, per container.
	Containers map[string]ResourcesJSON `json:"containers"`
	// DecidedAt is the time of the sample that decided it.
	DecidedAt time.Time `json:"decidedAt"`
	// SentAt is when the patch was sent.
	SentAt time.Time `json:"sentAt"`
	// DecisionToPatchSeconds is from DecidedAt to the API server's answer
	// to the patch.
	DecisionToPatchSeconds float64 `json:"decisionToPatchSeconds"`
	// AppliedAt is when the agent saw the actual resources reflect it.
	AppliedAt                *time.Time `json:"appliedAt,omitempty"`
	DecisionToAppliedSeconds float64    `json:"decisionToAppliedSeconds,omitempty"`
	// Message explains an outcome other than Applied.
	Message string `json:"message,omitempty"`
	// Deferred is set when the resize was the policy's behavior.deferred
	// action on a Deferred resize: FitToNode (lowered to the node's room)
	// or Revert (nothing fitted; back to the actual resources); or
	// RestartWindowClosed, the take-back of a restarting resize's
	// restarting part, unapplied when its restart window closed.
	Deferred string `json:"deferred,omitempty"`
	// StartupBoost is set when the resize started (Boost) or ended
	// (Unboost) a startup boost.
	StartupBoost string `json:"startupBoost,omitempty"`
}

// ResourcesJSON are a container's requests and limits, in millicores and
// bytes; 0 means not set.
type ResourcesJSON struct {
	CPURequestMillicores int64 `json:"cpuRequestMillicores,omitempty"`
	CPULimitMillicores   int64 `json:"cpuLimitMillicores,omitempty"`
	MemoryRequestBytes   int64 `json:"memoryRequestBytes,omitempty"`
	MemoryLimitBytes     int64 `json:"memoryLimitBytes,omitempty"`
}

func changeJSON(c recommend.Change) ChangeJSON {
	return ChangeJSON{Action: c.Action.String(), Request: c.Request, Limit: c.Limit, Fast: c.Fast, Why: c.Reason.Why.String(), Reason: c.Reason.String()}
}

func decisionJSON(t time.Time, d recommend.Decision) DecisionJSON {
	return DecisionJSON{Time: t, CPU: changeJSON(d.CPU), Memory: changeJSON(d.Memory)}
}

func estimateJSON(e recommend.Estimate) EstimateJSON {
	return EstimateJSON{Target: e.Target, LowerBound: e.LowerBound, UpperBound: e.UpperBound, UncappedTarget: e.UncappedTarget}
}

func planTargets(p *resize.Plan) map[string]ResourcesJSON {
	out := map[string]ResourcesJSON{}
	for _, c := range p.Containers {
		r := resourcesOf(c.Requests, c.Limits)
		out[c.Name] = ResourcesJSON{
			CPURequestMillicores: r.CPURequestMillis, CPULimitMillicores: r.CPULimitMillis,
			MemoryRequestBytes: r.MemRequestBytes, MemoryLimitBytes: r.MemLimitBytes,
		}
	}
	return out
}

// viewState is what a container's view is built from: values the loop
// goroutine copies in on every sample without allocating; View builds the
// JSON from them when asked.
type viewState struct {
	policy        string
	mode          v1alpha1.UpdateMode
	containerMode string
	dryRun        bool
	note          string
	// hasRec is false for a view with only a note.
	hasRec          bool
	rec             recommend.Recommendation
	last            recommend.Decision
	lastTime        time.Time
	lastChange      *DecisionJSON
	resizes         []ResizeJSON
	resizesLastHour int
	deferral        deferral
	deferred        bool
	seed            SeedJSON
	seeded          bool
	boost           boostState
	hasBoost        bool
}

// updateView copies a container's state into its view. Loop goroutine
// only; allocates only for a container's first view.
func (d *Decider) updateView(k key, st *podState, cs *containerState, now time.Time) {
	v := viewState{
		policy: st.policy, mode: st.mode, containerMode: containerModeString(cs.rules), dryRun: d.cfg.DryRun,
		hasRec: true, rec: cs.rc.Recommendation(now),
		last: cs.last, lastTime: cs.lastTime, lastChange: cs.lastChange,
		resizes:         st.resizes[:len(st.resizes):len(st.resizes)],
		resizesLastHour: st.rec.ResizesInLastHour(now),
	}
	if st.podLevel != "" {
		switch {
		case d.podLevelOff != "":
			v.note = "pod-level resources (" + st.podLevel + "): this cluster does not resize such pods in place, so snug leaves the pod alone"
		case k.name == resize.PodLevel:
			v.note = "the pod's pod-level resources (" + st.podLevel + "), sized from the pod cgroup"
		default:
			v.note = "the pod sets " + st.podLevel + " at the pod level; those are sized on its " + resize.PodLevel + " entry, not here"
		}
	}
	if st.deferral != nil {
		v.deferral, v.deferred = *st.deferral, true
	}
	if b := d.boosts[k]; b != nil && !b.since.IsZero() {
		v.boost, v.hasBoost = *b, true
	}
	if d.ckpt != nil {
		v.seed, v.seeded = d.ckpt.seeds[k]
	}
	d.setView(k, &v)
}

// setView sets a container's view to v (nil: none), copying it into the
// container's slot.
func (d *Decider) setView(k key, v *viewState) {
	d.viewMu.Lock()
	defer d.viewMu.Unlock()
	if v == nil {
		delete(d.views, k)
		return
	}
	if slot, ok := d.views[k]; ok {
		*slot = *v
		return
	}
	slot := *v
	d.views[k] = &slot
}

func (d *Decider) dropViews(uid types.UID) {
	d.viewMu.Lock()
	defer d.viewMu.Unlock()
	for k := range d.views {
		if k.uid == uid {
			delete(d.views, k)
		}
	}
}

// View returns the decision step's view of a container, or nil if no
// policy covers it. Each call builds a fresh value.
func (d *Decider) View(uid types.UID, container string) *AutoscaleJSON {
	d.viewMu.RLock()
	defer d.viewMu.RUnlock()
	v, ok := d.views[key{uid, container}]
	if !ok {
		return nil
	}
	out := &AutoscaleJSON{
		Policy: v.policy, UpdateMode: string(v.mode), ContainerMode: v.containerMode, DryRun: v.dryRun, Note: v.note,
		LastChange: v.lastChange, Resizes: v.resizes, ResizesLastHour: v.resizesLastHour,
	}
	if v.hasRec {
		out.Recommendation = &RecommendationJSON{CPUMillicores: estimateJSON(v.rec.CPU), MemoryBytes: estimateJSON(v.rec.Memory)}
	}
	if !v.lastTime.IsZero() {
		dj := decisionJSON(v.lastTime, v.last)
		out.LastDecision = &dj
	}
	if v.deferred {
		out.Deferred = v.deferral.view()
	}
	if v.seeded {
		s := v.seed
		out.Seed = &s
	}
	if v.hasBoost {
		out.StartupBoost = v.boost.view()
	}
	return out
}

// ResizesAfter returns the resizes decided after t, oldest first; none for
// a nil view.
func (v *AutoscaleJSON) ResizesAfter(t time.Time) []ResizeJSON {
	if v == nil {
		return nil
	}
	var out []ResizeJSON
	for _, r := range v.Resizes {
		if r.DecidedAt.After(t) {
			out = append(out, r)
		}
	}
	return out
}
