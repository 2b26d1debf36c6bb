package convert

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// Note is a VPA field that does not map as it is, and what snug does
// instead.
type Note struct {
	// Field is the field's path in the VPA, such as
	// spec.updatePolicy.evictionRequirements.
	Field string
	// Message says what became of it and what snug does instead.
	Message string
}

func (n Note) String() string { return n.Field + ": " + n.Message }

// errUnconvertible is wrapped by every error of Convert.
var errUnconvertible = errors.New("cannot be converted")

// targetKinds are the kinds a SnugPolicy's targetRef may name, with their
// group.
var targetKinds = map[string]string{
	"Deployment": "apps", "StatefulSet": "apps", "DaemonSet": "apps", "ReplicaSet": "apps",
	"Job": "batch", "CronJob": "batch",
}

// Object converts a VerticalPodAutoscaler as the dynamic client returns
// it: Convert, plus a note for each field of its spec that VPA 1.8.1 does
// not have (a newer VPA's), which is not converted.
func Object(obj map[string]any) (*v1alpha1.SnugPolicy, []Note, error) {
	v, err := FromUnstructured(obj)
	if err != nil {
		return nil, nil, err
	}
	p, notes, err := Convert(v)
	if err != nil {
		return nil, nil, err
	}
	known, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding VerticalPodAutoscaler: %w", err)
	}
	for _, f := range unknownFields("spec", obj["spec"], known["spec"]) {
		notes = append(notes, Note{f, "not a VPA v1 field snug knows (VPA 1.8.1); not converted"})
	}
	return p, notes, nil
}

// unknownFields returns the paths of the map keys in got that want lacks,
// descending into maps and lists present in both.
func unknownFields(path string, got, want any) []string {
	var out []string
	switch g := got.(type) {
	case map[string]any:
		w, _ := want.(map[string]any)
		keys := make([]string, 0, len(g))
		for k := range g {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			wv, ok := w[k]
			if !ok {
				out = append(out, path+"."+k)
				continue
			}
			out = append(out, unknownFields(path+"."+k, g[k], wv)...)
		}
	case []any:
		w, _ := want.([]any)
		for i := range g {
			if i < len(w) {
				out = append(out, unknownFields(fmt.Sprintf("%s[%d]", path, i), g[i], w[i])...)
			}
		}
	}
	return out
}

// Convert returns the SnugPolicy equivalent to v, of the same name and
// namespace and with v's labels, and a note for each field that does not
// map as it is. Fields snug has and VPA lacks (behavior) are left unset:
// the CRD's defaults apply. An error means v cannot be converted at all:
// it has no targetRef, or targets a kind snug does not size.
func Convert(v *VerticalPodAutoscaler) (*v1alpha1.SnugPolicy, []Note, error) {
	var notes []Note
	note := func(field, format string, a ...any) { notes = append(notes, Note{field, fmt.Sprintf(format, a...)}) }
	p := &v1alpha1.SnugPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SnugPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: v.Name, Namespace: v.Namespace},
	}
	if len(v.Labels) > 0 {
		p.Labels = map[string]string{}
		for k, val := range v.Labels {
			p.Labels[k] = val
		}
	}

	t := v.Spec.TargetRef
	if t == nil || t.Kind == "" || t.Name == "" {
		return nil, nil, fmt.Errorf("spec.targetRef: %w: it names no workload", errUnconvertible)
	}
	group, ok := targetKinds[t.Kind]
	if !ok {
		return nil, nil, fmt.Errorf("spec.targetRef: %w: kind %s is not one snug sizes (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob); write a SnugPolicy with spec.selector on its pods' labels instead", errUnconvertible, t.Kind)
	}
	p.Spec.TargetRef = &v1alpha1.CrossVersionObjectReference{Kind: t.Kind, Name: t.Name}
	if t.APIVersion != "" {
		gv, err := schema.ParseGroupVersion(t.APIVersion)
		want := group + "/v1"
		switch {
		case err == nil && t.APIVersion == want:
			p.Spec.TargetRef.APIVersion = want
		case err == nil && gv.Group == group:
			note("spec.targetRef.apiVersion", "%s is not served for %s; snug names %s", t.APIVersion, t.Kind, want)
		default:
			return nil, nil, fmt.Errorf("spec.targetRef.apiVersion: %w: %q is not the API group of a %s (%s)", errUnconvertible, t.APIVersion, t.Kind, want)
		}
	}

	convertUpdatePolicy(v, p, note)
	convertResourcePolicy(v, p, note)

	for i, r := range v.Spec.Recommenders {
		if r == nil {
			continue
		}
		note(fmt.Sprintf("spec.recommenders[%d]", i), "recommender %q not used: snug has one recommender, in its node agent, tuned through spec.behavior", r.Name)
	}
	if sb := startupBoost(v.Spec.StartupBoost, "spec.startupBoost", note); sb != nil {
		// snug's boost is per container: the pod's goes to every entry
		// without one of its own, and to "*".
		if p.Spec.ResourcePolicy == nil {
			p.Spec.ResourcePolicy = &v1alpha1.PodResourcePolicy{}
		}
		cps := p.Spec.ResourcePolicy.ContainerPolicies
		star := false
		for i := range cps {
			star = star || cps[i].ContainerName == "*"
			if cps[i].StartupBoost == nil {
				cps[i].StartupBoost = sb.DeepCopy()
			}
		}
		if !star {
			p.Spec.ResourcePolicy.ContainerPolicies = append(cps, v1alpha1.ContainerResourcePolicy{ContainerName: "*", StartupBoost: sb})
		}
	}
	return p, notes, nil
}

// maxBoostFactor and maxBoostSeconds are the most the SnugPolicy CRD
// accepts for startupBoost.cpu.factor and durationSeconds.
const (
	maxBoostFactor  = 100
	maxBoostSeconds = 3600
)

// startupBoost is a VPA startupBoost as snug's, noting how snug gives it;
// nil (noted) when it gives no boost.
func startupBoost(b *VPAStartupBoost, field string, note func(field, format string, a ...any)) *v1alpha1.StartupBoost {
	if b == nil || b.CPU == nil {
		return nil
	}
	c := b.CPU
	out := &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: v1alpha1.CPUBoostType(c.Type)}}
	switch c.Type {
	case string(v1alpha1.CPUBoostFactor):
		if c.Factor == nil || *c.Factor < 1 {
			note(field, "type Factor without a factor of 1 or more; dropped (VPA gives no boost either)")
			return nil
		}
		out.CPU.Factor = ptr.To(*c.Factor)
		if *c.Factor > maxBoostFactor {
			out.CPU.Factor = ptr.To[int32](maxBoostFactor)
			note(field+".cpu.factor", "%d written as %d, the most snug accepts", *c.Factor, maxBoostFactor)
		}
	case string(v1alpha1.CPUBoostQuantity):
		if c.Quantity == nil || c.Quantity.Sign() <= 0 {
			note(field, "type Quantity without a quantity above zero; dropped (VPA gives no boost either)")
			return nil
		}
		out.CPU.Quantity = ptr.To(c.Quantity.DeepCopy())
	default:
		note(field, "type %q is not one snug knows; dropped (VPA gives no boost for it either)", c.Type)
		return nil
	}
	if d := c.DurationSeconds; d != nil {
		out.CPU.DurationSeconds = ptr.To(min(max(*d, 0), maxBoostSeconds))
		if *d < 0 || *d > maxBoostSeconds {
			note(field+".cpu.durationSeconds", "%d written as %d: snug accepts 0 to %d", *d, *out.CPU.DurationSeconds, maxBoostSeconds)
		}
	}
	note(field, "snug boosts in place as the container starts, from its actual cpu (VPA: at admission, from its recommendation), and ends the boost once it is Ready and durationSeconds later; a restarted container is boosted again")
	return out
}

func convertUpdatePolicy(v *VerticalPodAutoscaler, p *v1alpha1.SnugPolicy, note func(field, format string, a ...any)) {
	up := &v1alpha1.PodUpdatePolicy{}
	p.Spec.UpdatePolicy = up
	evicts := false
	mode := v.UpdateMode()
	u := v.Spec.UpdatePolicy
	if u == nil || u.UpdateMode == nil || *u.UpdateMode == "" {
		note("spec.updatePolicy.updateMode", "unset, which VPA reads as Recreate; written as InPlaceOrRecreate: snug resizes in place and evicts only a pod whose resize the node keeps deferred (behavior.deferred.action Evict)")
		mode = ""
	}
	switch mode {
	case "":
		up.UpdateMode, evicts = v1alpha1.UpdateModeInPlaceOrRecreate, true
	case VPAModeOff:
		up.UpdateMode = v1alpha1.UpdateModeOff
	case VPAModeInitial:
		up.UpdateMode = v1alpha1.UpdateModeInitial
	case VPAModeInPlace:
		up.UpdateMode = v1alpha1.UpdateModeInPlace
	case VPAModeInPlaceOrRecreate:
		up.UpdateMode, evicts = v1alpha1.UpdateModeInPlaceOrRecreate, true
		note("spec.updatePolicy.updateMode", "InPlaceOrRecreate: VPA evicts when an in-place resize fails; snug evicts only a pod whose resize the node keeps deferred (behavior.deferred.action Evict, after behavior.deferred.afterSeconds) and never changes a pod's QoS class, so it never needs to")
	case VPAModeRecreate, VPAModeAuto:
		up.UpdateMode, evicts = v1alpha1.UpdateModeInPlaceOrRecreate, true
		note("spec.updatePolicy.updateMode", "%s (evict to resize) written as InPlaceOrRecreate: snug resizes in place and evicts only a pod whose resize the node keeps deferred (behavior.deferred.action Evict)", mode)
	default:
		up.UpdateMode = v1alpha1.UpdateModeOff
		note("spec.updatePolicy.updateMode", "%q is not a VPA mode snug knows; written as Off (snug only recommends)", mode)
	}
	if evicts {
		p.Spec.Behavior = &v1alpha1.Behavior{Deferred: &v1alpha1.DeferredBehavior{Action: v1alpha1.DeferredActionEvict}}
	}
	if u == nil {
		return
	}
	if u.MinReplicas != nil {
		up.MinReplicas = ptr.To(*u.MinReplicas)
		if *u.MinReplicas < 1 {
			up.MinReplicas = ptr.To[int32](1)
			note("spec.updatePolicy.minReplicas", "%d written as 1, the least snug accepts", *u.MinReplicas)
		}
	}
	if len(u.EvictionRequirements) > 0 {
		note("spec.updatePolicy.evictionRequirements", "not mapped: snug resizes in place either way and evicts only for a resize the node keeps deferred, whichever its direction")
	}
	if u.EvictAfterOOMSeconds != nil {
		note("spec.updatePolicy.evictAfterOOMSeconds", "not mapped: after an OOM kill snug grows the container's memory in place at once (behavior.scaleUp.onOOMKill Grow); it never evicts for one")
	}
}

func convertResourcePolicy(v *VerticalPodAutoscaler, p *v1alpha1.SnugPolicy, note func(field, format string, a ...any)) {
	rp := v.Spec.ResourcePolicy
	if rp == nil || len(rp.ContainerPolicies) == 0 {
		return
	}
	out := &v1alpha1.PodResourcePolicy{}
	for i, c := range rp.ContainerPolicies {
		field := fmt.Sprintf("spec.resourcePolicy.containerPolicies[%d]", i)
		if c.ContainerName == "" {
			note(field, "has no containerName; dropped (VPA ignores it too)")
			continue
		}
		cp := v1alpha1.ContainerResourcePolicy{ContainerName: c.ContainerName}
		if c.Mode != nil {
			switch *c.Mode {
			case "Auto":
				cp.Mode = v1alpha1.ContainerScalingModeAuto
			case "Off":
				cp.Mode = v1alpha1.ContainerScalingModeOff
			default:
				cp.Mode = v1alpha1.ContainerScalingModeOff
				note(field+".mode", "%q is not a VPA container mode; written as Off", *c.Mode)
			}
		}
		if c.ControlledResources != nil {
			var keep []corev1.ResourceName
			for _, r := range *c.ControlledResources {
				if r == corev1.ResourceCPU || r == corev1.ResourceMemory {
					if !slices.Contains(keep, r) {
						keep = append(keep, r)
					}
					continue
				}
				note(field+".controlledResources", "%s dropped: snug sizes cpu and memory only", r)
			}
			if len(keep) == 0 {
				cp.Mode = v1alpha1.ContainerScalingModeOff
				note(field+".controlledResources", "controls neither cpu nor memory; written as mode Off")
			} else {
				cp.ControlledResources = keep
			}
		}
		if c.ControlledValues != nil {
			switch *c.ControlledValues {
			case "RequestsAndLimits":
				cp.ControlledValues = v1alpha1.ContainerControlledValuesRequestsAndLimits
			case "RequestsOnly":
				cp.ControlledValues = v1alpha1.ContainerControlledValuesRequestsOnly
				note(field+".controlledValues", "RequestsOnly: snug keeps the pod's QoS class, so a Guaranteed container's limit still follows its request (VPA's in-place resize would be refused and evict instead)")
			default:
				note(field+".controlledValues", "%q is not a VPA value; left unset (RequestsAndLimits)", *c.ControlledValues)
			}
		}
		cp.MinAllowed = amounts(c.MinAllowed, field+".minAllowed", note)
		cp.MaxAllowed = amounts(c.MaxAllowed, field+".maxAllowed", note)
		if c.OOMBumpUpRatio != nil || c.OOMMinBumpUp != nil {
			note(field+".oomBumpUpRatio/oomMinBumpUp", "not mapped: after an OOM kill snug grows memory by its own step (behavior.scaleUp.onOOMKill Grow, behavior.memoryHeadroomPercent)")
		}
		if c.MemoryAggregationIntervalSeconds != nil || c.MemoryAggregationIntervalCount != nil {
			note(field+".memoryAggregationInterval*", "not mapped: snug's recommender keeps its own memory peaks, per sample (behavior.memoryHeadroomPercent over the peak working set)")
		}
		cp.StartupBoost = startupBoost(c.StartupBoost, field+".startupBoost", note)
		out.ContainerPolicies = append(out.ContainerPolicies, cp)
	}
	if len(out.ContainerPolicies) > 0 {
		p.Spec.ResourcePolicy = out
	}
}

// amounts keeps the cpu and memory of a VPA ResourceList.
func amounts(l corev1.ResourceList, field string, note func(field, format string, a ...any)) *v1alpha1.ResourceAmounts {
	if len(l) == 0 {
		return nil
	}
	a := &v1alpha1.ResourceAmounts{}
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		q := l[corev1.ResourceName(n)]
		switch corev1.ResourceName(n) {
		case corev1.ResourceCPU:
			a.CPU = ptr.To(q.DeepCopy())
		case corev1.ResourceMemory:
			a.Memory = ptr.To(q.DeepCopy())
		default:
			note(field+"."+n, "dropped: snug sizes cpu and memory only")
		}
	}
	if a.CPU == nil && a.Memory == nil {
		return nil
	}
	return a
}

// Notes formats notes one a line, each prefixed with prefix.
func Notes(prefix string, notes []Note) string {
	var b strings.Builder
	for _, n := range notes {
		fmt.Fprintf(&b, "%s%s\n", prefix, n)
	}
	return b.String()
}
