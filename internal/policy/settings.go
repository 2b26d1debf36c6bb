package policy

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
)

// UpdateMode returns p's update mode, DefaultUpdateMode when unset.
func UpdateMode(p *v1alpha1.SnugPolicy) v1alpha1.UpdateMode {
	if u := p.Spec.UpdatePolicy; u != nil && u.UpdateMode != "" {
		return u.UpdateMode
	}
	return DefaultUpdateMode
}

// MinReplicas returns updatePolicy.minReplicas, DefaultMinReplicas when
// unset.
func MinReplicas(p *v1alpha1.SnugPolicy) int32 {
	if u := p.Spec.UpdatePolicy; u != nil && u.MinReplicas != nil {
		return *u.MinReplicas
	}
	return DefaultMinReplicas
}

// YieldsToVPA reports whether the controller found a VerticalPodAutoscaler
// that is not Off acting on p's pods (condition VPAConflict True): snug
// then changes none of them, whatever p's mode, and still recommends.
func YieldsToVPA(p *v1alpha1.SnugPolicy) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1alpha1.ConditionVPAConflict {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// Actuates reports whether mode m lets the agent resize pods in place. Off
// only recommends; Initial sizes pods at creation only (internal/admission)
// and is never resized in place.
func Actuates(m v1alpha1.UpdateMode) bool {
	return m == v1alpha1.UpdateModeInPlace || m == v1alpha1.UpdateModeInPlaceOrRecreate
}

// ContainerPolicy returns p's entry for the container name, else its "*"
// entry, else an entry with every field at its default.
func ContainerPolicy(p *v1alpha1.SnugPolicy, name string) v1alpha1.ContainerResourcePolicy {
	if rp := p.Spec.ResourcePolicy; rp != nil {
		var star *v1alpha1.ContainerResourcePolicy
		for i := range rp.ContainerPolicies {
			switch cp := &rp.ContainerPolicies[i]; cp.ContainerName {
			case name:
				return *cp
			case DefaultContainerName:
				star = cp
			}
		}
		if star != nil {
			return *star
		}
	}
	return v1alpha1.ContainerResourcePolicy{ContainerName: name}
}

// Rules is what a container policy means to the recommender and the
// planner.
type Rules struct {
	// Off is mode Off: recommend, never resize.
	Off bool
	// Bounds are the recommender's: under Off it changes nothing.
	Bounds recommend.Bounds
	// Policy is the planner's.
	Policy resize.Policy
}

// ControlledNames are the resources the rules let snug change.
func (r Rules) ControlledNames() []corev1.ResourceName {
	var out []corev1.ResourceName
	if !r.Bounds.IgnoreCPU {
		out = append(out, corev1.ResourceCPU)
	}
	if !r.Bounds.IgnoreMemory {
		out = append(out, corev1.ResourceMemory)
	}
	return out
}

// RulesFor reads a container policy. uncontrolled is the policy's
// status.uncontrolledResources (the resources an HPA scales the target
// on): they are taken out of controlledResources, so the container is
// still learnt but never resized in them.
func RulesFor(cp v1alpha1.ContainerResourcePolicy, uncontrolled []corev1.ResourceName) Rules {
	r := Rules{Off: cp.Mode == v1alpha1.ContainerScalingModeOff, Bounds: LearnBounds(cp, uncontrolled)}
	controlled := controlledResources(cp, uncontrolled)
	if controlled != nil {
		r.Policy.ControlledResources = controlled
	}
	if r.Off {
		r.Bounds.IgnoreCPU, r.Bounds.IgnoreMemory = true, true
	}
	if cp.ControlledValues == v1alpha1.ContainerControlledValuesRequestsOnly {
		r.Policy.ControlledValues = resize.RequestsOnly
	} else {
		r.Policy.ControlledValues = resize.RequestsAndLimits
	}
	if a := cp.MinAllowed; a != nil {
		r.Policy.MinAllowed = corev1.ResourceList{}
		if a.CPU != nil {
			r.Policy.MinAllowed[corev1.ResourceCPU] = *a.CPU
		}
		if a.Memory != nil {
			r.Policy.MinAllowed[corev1.ResourceMemory] = *a.Memory
		}
	}
	if a := cp.MaxAllowed; a != nil {
		r.Policy.MaxAllowed = corev1.ResourceList{}
		if a.CPU != nil {
			r.Policy.MaxAllowed[corev1.ResourceCPU] = *a.CPU
		}
		if a.Memory != nil {
			r.Policy.MaxAllowed[corev1.ResourceMemory] = *a.Memory
		}
	}
	return r
}

// RulesForPod is RulesFor for a container of a pod of QoS class qos. A
// Guaranteed container stays Guaranteed, so under RequestsOnly the planner
// moves its limit with its request (resize.LimitFollowsRequest); the
// recommender must then not treat the limit as fixed, or it would never ask
// for more than the limit a throttled Guaranteed container already has.
func RulesForPod(cp v1alpha1.ContainerResourcePolicy, uncontrolled []corev1.ResourceName, qos corev1.PodQOSClass) Rules {
	r := RulesFor(cp, uncontrolled)
	if qos == corev1.PodQOSGuaranteed {
		r.Bounds.RequestsOnly = false
	}
	return r
}

// LearnBounds are the bounds a container's recommendation is computed
// within: controlledResources less uncontrolled, controlledValues and
// min/maxAllowed. Unlike Rules.Bounds they ignore mode Off, under which
// snug still recommends (the controller's status.recommendation).
func LearnBounds(cp v1alpha1.ContainerResourcePolicy, uncontrolled []corev1.ResourceName) recommend.Bounds {
	var b recommend.Bounds
	if controlled := controlledResources(cp, uncontrolled); controlled != nil {
		b.IgnoreCPU = !slices.Contains(controlled, corev1.ResourceCPU)
		b.IgnoreMemory = !slices.Contains(controlled, corev1.ResourceMemory)
	}
	b.RequestsOnly = cp.ControlledValues == v1alpha1.ContainerControlledValuesRequestsOnly
	if a := cp.MinAllowed; a != nil {
		if a.CPU != nil {
			b.MinCPUMillis = a.CPU.MilliValue()
		}
		if a.Memory != nil {
			b.MinMemBytes = a.Memory.Value()
		}
	}
	if a := cp.MaxAllowed; a != nil {
		if a.CPU != nil {
			b.MaxCPUMillis = a.CPU.MilliValue()
		}
		if a.Memory != nil {
			b.MaxMemBytes = a.Memory.Value()
		}
	}
	return b
}

// controlledResources is the container's controlledResources less
// uncontrolled, as a fresh slice; nil (both) when the policy names none
// and nothing is uncontrolled. Never nil otherwise: an empty list controls
// nothing.
func controlledResources(cp v1alpha1.ContainerResourcePolicy, uncontrolled []corev1.ResourceName) []corev1.ResourceName {
	controlled := cp.ControlledResources
	if len(uncontrolled) == 0 {
		if controlled == nil {
			return nil
		}
		return append([]corev1.ResourceName{}, controlled...)
	}
	if len(controlled) == 0 {
		controlled = DefaultControlledResources()
	}
	return slices.DeleteFunc(append([]corev1.ResourceName{}, controlled...), func(n corev1.ResourceName) bool {
		return slices.Contains(uncontrolled, n)
	})
}

// Behavior turns p's behavior into the recommender's Config and the
// planner's Options, starting from base (which carries the cluster-wide
// tuning such as the CPU half-life). Unset fields take the package's
// defaults, which the CRD applies too.
func Behavior(base recommend.Config, p *v1alpha1.SnugPolicy) (recommend.Config, resize.Options, error) {
	var b v1alpha1.Behavior
	if p.Spec.Behavior != nil {
		b = *p.Spec.Behavior
	}
	var up v1alpha1.ScaleUpBehavior
	if b.ScaleUp != nil {
		up = *b.ScaleUp
	}
	var down v1alpha1.ScaleDownBehavior
	if b.ScaleDown != nil {
		down = *b.ScaleDown
	}
	headroom, window := DefaultMemoryHeadroomPercent, DefaultStabilizationWindowSeconds
	if b.MemoryHeadroomPercent != nil {
		headroom = *b.MemoryHeadroomPercent
	}
	if down.StabilizationWindowSeconds != nil {
		window = *down.StabilizationWindowSeconds
	}
	perHour := orDefault(b.MaxResizesPerHour, DefaultMaxResizesPerHour)
	throttled := orDefault(up.CPUThrottledPercent, DefaultCPUThrottledPercent)
	workingSet := orDefault(up.MemoryWorkingSetPercent, DefaultMemoryWorkingSetPercent)
	step := orDefault(down.MaxStepPercent, DefaultMaxStepPercent)

	cfg := base
	opts := resize.DefaultOptions()
	opts.NoRoom = resize.NoRoomCap
	h := float64(headroom) / 100
	cfg.MemoryHeadroom = h
	// The planner reads 0 as its default; ask for almost none.
	opts.MemoryHeadroom = max(h, 1e-6)
	cfg.MaxResizesPerHour = int(perHour)
	cfg.GrowReserve = min(cfg.GrowReserve, cfg.MaxResizesPerHour-1)
	cfg.CPUThrottledFraction = float64(throttled) / 100
	// 100% means "at the limit"; the recommender needs a positive margin,
	// so that is a tenth of a percent.
	cfg.MemoryNearLimitFraction = max(float64(100-workingSet)/100, 0.001)
	// 0 shrinks at once: the recommender's window must be positive, and a
	// nanosecond ends with the next sample.
	cfg.ShrinkWindow = max(time.Duration(window)*time.Second, time.Nanosecond)
	f := float64(step) / 100
	cfg.MaxCPUShrinkFraction = f
	// Memory keeps the planner's per-plan limit as a ceiling.
	cfg.MaxMemoryShrinkFraction = min(f, base.MaxMemoryShrinkFraction)
	if err := cfg.Validate(); err != nil {
		return cfg, opts, fmt.Errorf("reading policy %s/%s behavior: %w", p.Namespace, p.Name, err)
	}
	return cfg, opts, nil
}

// HistoryConfig is the recommender configuration the controller folds a
// policy's history with: the defaults with the policy's memory headroom.
// The half-lives must stay the agents' defaults, or snapshots would not
// merge.
func HistoryConfig(p *v1alpha1.SnugPolicy) recommend.Config {
	cfg := recommend.DefaultConfig()
	headroom := DefaultMemoryHeadroomPercent
	if b := p.Spec.Behavior; b != nil && b.MemoryHeadroomPercent != nil {
		headroom = *b.MemoryHeadroomPercent
	}
	cfg.MemoryHeadroom = float64(headroom) / 100
	return cfg
}

func orDefault(v, def int32) int32 {
	if v > 0 {
		return v
	}
	return def
}

// IgnoresOOMKills reports behavior.scaleUp.onOOMKill Ignore.
func IgnoresOOMKills(p *v1alpha1.SnugPolicy) bool {
	b := p.Spec.Behavior
	return b != nil && b.ScaleUp != nil && b.ScaleUp.OnOOMKill == v1alpha1.OOMKillActionIgnore
}

// Deferred is what a policy says about a resize the kubelet Deferred.
type Deferred struct {
	// Action is behavior.deferred.action.
	Action v1alpha1.DeferredAction
	// After is behavior.deferred.afterSeconds.
	After time.Duration
}

// DeferredOf reads behavior.deferred, with the defaults for unset fields.
func DeferredOf(p *v1alpha1.SnugPolicy) Deferred {
	r := Deferred{Action: DefaultDeferredAction, After: DefaultDeferredAfter}
	if b := p.Spec.Behavior; b != nil && b.Deferred != nil {
		if b.Deferred.Action != "" {
			r.Action = b.Deferred.Action
		}
		if b.Deferred.AfterSeconds != nil {
			r.After = time.Duration(*b.Deferred.AfterSeconds) * time.Second
		}
	}
	return r
}

// Evicts reports whether the controller evicts p's pods whose resize stays
// Deferred: update mode InPlaceOrRecreate with deferred action Evict.
func Evicts(p *v1alpha1.SnugPolicy) bool {
	return UpdateMode(p) == v1alpha1.UpdateModeInPlaceOrRecreate && DeferredOf(p).Action == v1alpha1.DeferredActionEvict
}

// DeferredSince returns when pod's resize became Deferred (its
// PodResizePending condition true with reason Deferred) and whether it is.
func DeferredSince(pod *corev1.Pod) (time.Time, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonDeferred {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}
