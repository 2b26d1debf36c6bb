package admission

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/policy"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
)

// OptOutLabel on a namespace or a pod keeps the webhook away from it (the
// chart's namespaceSelector and objectSelector).
const OptOutLabel = "autoscaling.snug.dev/admission"

// OptOutValue is OptOutLabel's value that opts out.
const OptOutValue = "disabled"

// Outcome is what the webhook did with one pod, the label of
// snug_admission_requests_total.
type Outcome string

// The outcomes.
const (
	// Sized: requests and limits set from the workload's recommendation.
	Sized Outcome = "sized"
	// Unchanged: planned, and the pod already had the learnt size.
	Unchanged Outcome = "unchanged"
	// NoPolicy: no SnugPolicy covers the pod.
	NoPolicy Outcome = "no_policy"
	// ModeOff: the policy's updateMode is Off.
	ModeOff Outcome = "mode_off"
	// YieldsToVPA: a VerticalPodAutoscaler that is not Off acts on the
	// policy's pods (condition VPAConflict): snug leaves them to it.
	YieldsToVPA Outcome = "yields_to_vpa"
	// NoHistory: the workload has no learnt history yet.
	NoHistory Outcome = "no_history"
	// Refused: the planner refused (kept the template's values).
	Refused Outcome = "refused"
	// Invalid: the request could not be read.
	Invalid Outcome = "invalid"
)

// Decision is what Size decided for a pod.
type Decision struct {
	Outcome Outcome
	// Policy governs the pod (nil for NoPolicy).
	Policy *v1alpha1.SnugPolicy
	// Patch is the JSON patch to answer with (Sized only): the planner's
	// resource edits, then the annotation.
	Patch []byte
	// Summary says what changed, or why nothing did, in words.
	Summary string
	// Notes are the planner's adjustments.
	Notes []resize.Note
}

// Checkpoints returns a policy's checkpoint ConfigMap data (nil when there
// is none).
type Checkpoints func(namespace, name string) map[string]string

// Size decides a new pod's resources: for a pod governed (policy.Match)
// by a policy in Initial, InPlace or InPlaceOrRecreate mode whose
// checkpoint holds learnt history for its containers, each container's
// workload recommendation (recommend.Aggregate.Recommendation, the size
// the agent's seeded recommender starts from) applied through the
// resize planner under the container's rules (policy.RulesForPod: QoS
// class kept, limit ratios or RequestsOnly, controlledResources,
// min/maxAllowed). The workload's memory peak stands for the missing
// usage figure; there is no node yet, so node room is the scheduler's.
// It does no I/O; pod is not modified.
func Size(pod *corev1.Pod, policies []*v1alpha1.SnugPolicy, ckpt Checkpoints, now time.Time) Decision {
	pol := policy.Match(policies, pod)
	if pol == nil {
		return Decision{Outcome: NoPolicy, Summary: "no SnugPolicy covers the pod"}
	}
	d := Decision{Policy: pol}
	switch m := policy.UpdateMode(pol); m {
	case v1alpha1.UpdateModeInitial, v1alpha1.UpdateModeInPlace, v1alpha1.UpdateModeInPlaceOrRecreate:
	default:
		d.Outcome, d.Summary = ModeOff, fmt.Sprintf("policy %s has updateMode %s", pol.Name, m)
		return d
	}
	if policy.YieldsToVPA(pol) {
		d.Outcome, d.Summary = YieldsToVPA, fmt.Sprintf("policy %s yields to a VerticalPodAutoscaler acting on its pods (condition %s)", pol.Name, v1alpha1.ConditionVPAConflict)
		return d
	}
	qos := resize.ComputeQoS(pod)
	if qos == corev1.PodQOSBestEffort {
		d.Outcome, d.Summary = Refused, "the pod is BestEffort; snug keeps its QoS class"
		return d
	}
	data := ckpt(pol.Namespace, history.CheckpointName(pol.Name))
	cfg := policy.HistoryConfig(pol)
	uncontrolled := pol.Status.UncontrolledResources
	var problems []string
	evicted, fromEviction := evictedFor(data, pod, now, &problems)
	var wish resize.Wish
	usage := map[string]resize.Usage{}
	for _, c := range resizable(pod) {
		cp := policy.ContainerPolicy(pol, c.Name)
		rules := policy.RulesForPod(cp, uncontrolled, qos)
		if rules.Off || len(rules.ControlledNames()) == 0 {
			continue
		}
		target, u, err := learntTarget(data, c, cp, pol, cfg, now)
		if err != nil {
			problems = append(problems, err.Error())
		}
		if fromEviction {
			floor(target, evicted.Requests[c.Name], rules.ControlledNames())
		}
		if len(target) == 0 {
			continue
		}
		pp := rules.Policy
		wish.Containers = append(wish.Containers, resize.ContainerWish{Name: c.Name, Target: target, Policy: &pp})
		if qos != corev1.PodQOSGuaranteed {
			// As the agent: a target lowers a Burstable container's
			// request, not its limit below the one it was written with.
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				u.MemoryLimitFloorBytes = q.Value()
			}
		}
		usage[c.Name] = u
	}
	if len(wish.Containers) == 0 {
		d.Outcome, d.Summary = NoHistory, "the workload has no learnt history yet"
		if len(problems) > 0 {
			d.Summary += " that fits: " + strings.Join(problems, "; ")
		}
		return d
	}
	_, opts, err := policy.Behavior(recommend.DefaultConfig(), pol)
	if err != nil {
		d.Outcome, d.Summary = Refused, "the policy's behavior is unusable: "+err.Error()
		return d
	}
	// Nothing runs yet: no step to take down gently, and no restart.
	opts.MaxMemoryDecreaseFraction = 1
	opts.AllowRestart = true
	plan, err := resize.NewPlan(resize.Input{Pod: pod, Usage: usage, Wish: wish, Options: opts})
	if err != nil {
		d.Outcome, d.Summary = Refused, "snug's planner kept the template's values: "+err.Error()
		return d
	}
	d.Notes = plan.Notes
	if plan.NoOp() {
		d.Outcome, d.Summary = Unchanged, "the pod already has the learnt size"
		return d
	}
	sized := history.Admission{Policy: pol.Name, Generation: pol.Generation}
	if fromEviction {
		sized.Evicted = evicted.Pod
	}
	for _, c := range plan.Containers {
		sized.Containers = append(sized.Containers, history.AdmittedContainer{Name: c.Name, Changes: changes(pod, c)})
	}
	patch, err := withAnnotation(pod, plan.Patch, sized)
	if err != nil {
		d.Outcome, d.Summary = Refused, err.Error()
		return d
	}
	d.Outcome, d.Patch, d.Summary = Sized, patch, sized.String()
	return d
}

// learntTarget is a container's target from the workload's learnt history (the
// checkpoint's aggregate and its recommendation) and the usage that
// stands for it; an empty target when there is none.
func learntTarget(data map[string]string, c corev1.Container, cp v1alpha1.ContainerResourcePolicy, pol *v1alpha1.SnugPolicy, cfg recommend.Config, now time.Time) (corev1.ResourceList, resize.Usage, error) {
	target := corev1.ResourceList{}
	a, err := history.CheckpointAggregate(data, c.Name)
	if err != nil || a == nil || (a.CPUSeconds == 0 && a.MemorySeconds == 0) {
		return target, resize.Usage{}, err
	}
	if err := a.Compatible(cfg); err != nil {
		return target, resize.Usage{}, fmt.Errorf("container %s: %w", c.Name, err)
	}
	r, err := a.Recommendation(cfg, policy.LearnBounds(cp, pol.Status.UncontrolledResources), now)
	if err != nil {
		return target, resize.Usage{}, fmt.Errorf("container %s: %w", c.Name, err)
	}
	if a.CPUSeconds > 0 && r.CPU.Target > 0 {
		target[corev1.ResourceCPU] = *resource.NewMilliQuantity(r.CPU.Target, resource.DecimalSI)
	}
	if a.MemorySeconds > 0 && r.Memory.Target > 0 {
		target[corev1.ResourceMemory] = *resource.NewQuantity(r.Memory.Target, resource.BinarySI)
	}
	return target, resize.Usage{MemoryPeakBytes: a.MemoryPeakBytes}, nil
}

// evictedFor reads the checkpoint's record of a pod of the same owner
// evicted for a Deferred resize (history.For); a record that does not
// decode is a problem, not a size.
func evictedFor(data map[string]string, pod *corev1.Pod, now time.Time, problems *[]string) (history.Evicted, bool) {
	list, err := history.CheckpointEvicted(data)
	if err != nil {
		*problems = append(*problems, err.Error())
		return history.Evicted{}, false
	}
	return history.For(list, pod, now)
}

// floor raises target to asked, resource by resource, for the resources
// snug controls: a replacement of a pod evicted for a Deferred resize
// starts at no less than what that resize asked for.
func floor(target, asked corev1.ResourceList, controlled []corev1.ResourceName) {
	for _, r := range controlled {
		q, ok := asked[r]
		if !ok {
			continue
		}
		if t, ok := target[r]; !ok || q.Cmp(t) > 0 {
			target[r] = q.DeepCopy()
		}
	}
}

// resizable are the containers the planner may size: regular ones and
// sidecars.
func resizable(pod *corev1.Pod) []corev1.Container {
	out := slices.Clone(pod.Spec.Containers)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return out
}

func changes(pod *corev1.Pod, c resize.ContainerPlan) []string {
	var old corev1.ResourceRequirements
	list := pod.Spec.Containers
	if c.Sidecar {
		list = pod.Spec.InitContainers
	}
	old = list[c.Index].Resources
	var out []string
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		or, ol := old.Requests[r], old.Limits[r]
		nr, nl := c.Requests[r], c.Limits[r]
		if or.Cmp(nr) == 0 && ol.Cmp(nl) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s/%s -> %s/%s", r, qty(or), qty(ol), qty(nr), qty(nl)))
	}
	return out
}

func qty(q resource.Quantity) string {
	if q.IsZero() {
		return "-"
	}
	return q.String()
}

// withAnnotation appends the history.AdmissionAnnotation to a planner's JSON patch.
func withAnnotation(pod *corev1.Pod, patch []byte, s history.Admission) ([]byte, error) {
	var ops []map[string]any
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, fmt.Errorf("reading the planner's patch: %w", err)
	}
	v, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding annotation %s: %w", history.AdmissionAnnotation, err)
	}
	if pod.Annotations == nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]string{history.AdmissionAnnotation: string(v)}})
	} else {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/" + strings.ReplaceAll(strings.ReplaceAll(history.AdmissionAnnotation, "~", "~0"), "/", "~1"), "value": string(v)})
	}
	return json.Marshal(ops)
}
