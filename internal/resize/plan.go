package resize

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Input is everything NewPlan looks at. It is read, never modified.
type Input struct {
	// Pod is the pod to resize, spec and status, as last read from the API
	// server. Required.
	Pod *corev1.Pod
	// NodeAllocatable is status.allocatable of the pod's node. When nil, node
	// room is not checked and the plan says so in a NodeRoomUnchecked note.
	NodeAllocatable corev1.ResourceList
	// OthersClaimed is what the other pods on the node claim, as Claimed
	// computes it. Nil means nothing.
	OthersClaimed corev1.ResourceList
	// Reserve is room a grow leaves free beside OthersClaimed, as
	// PreemptionReserve computes it: the kubelet would grant a grow into
	// it, but the replacement of a higher-priority pod would then preempt
	// this one. Only Options.NoRoom NoRoomCap honours it (an increase is
	// cut to leave it, noted CappedToNodeRoom), and only for cpu: a memory
	// grow cut short is an OOM kill now, worse than a preemption that may
	// come. Refuse and Send judge the kubelet's room alone. Nil means none.
	Reserve corev1.ResourceList
	// Namespace is what the pod's namespace allows: its ResourceQuotas'
	// room and its LimitRanges. Nil: not checked.
	Namespace *Namespace
	// Usage is each container's measured usage, by container name. A
	// container without an entry (or with no memory figure) has unknown
	// memory usage, so its memory limit is never lowered.
	Usage map[string]Usage
	// Wish says what should change.
	Wish Wish
	// Options tune the safety rules. The zero value is DefaultOptions().
	Options Options
}

// PodLevel is the name that stands for the pod's own resources
// (spec.resources, pod-level resources) in a ContainerWish, a
// ContainerPlan, Input.Usage (the pod cgroup's usage) and a Note, and
// wherever snug keys something by container name (the agent's views and
// metrics, checkpoint keys). No container can have it (container names are
// DNS labels), and it is a valid ConfigMap key and label value. People
// read it as PodLevelDisplay.
const PodLevel = "_pod"

// PodLevelDisplay is how logs, events and tables name the pod level.
const PodLevelDisplay = "(pod)"

// DisplayName is name as people read it: PodLevelDisplay for PodLevel,
// the container's name otherwise.
func DisplayName(name string) string {
	if name == PodLevel {
		return PodLevelDisplay
	}
	return name
}

// Wish is the change asked for, one entry per container to resize (or
// PodLevel, for the pod-level resources). Containers not named keep their
// resources.
type Wish struct {
	Containers []ContainerWish
}

// ContainerWish asks for new resources for one container, in one of two
// ways: explicit values (Requests and/or Limits), or a Target request applied
// under a Policy. Giving both, or neither, is a ReasonInvalidWish refusal.
// Only cpu and memory may be named.
type ContainerWish struct {
	// Name is the name of a regular container or of a sidecar (an init
	// container with restartPolicy Always), or PodLevel for the pod's
	// pod-level resources (only those it already sets, and only with
	// Options.PodLevelResize).
	Name string
	// Requests are explicit new requests. Keys not given keep their value.
	// In a Guaranteed pod a request given alone moves its limit with it.
	Requests corev1.ResourceList
	// Limits are explicit new limits. Keys not given keep their value. In a
	// Guaranteed pod a limit given alone moves its request with it.
	Limits corev1.ResourceList
	// Target is a recommended request per resource, applied under Policy.
	Target corev1.ResourceList
	// Policy says how Target is applied. Nil means the default Policy.
	Policy *Policy
}

// ControlledValues says which values a policy changes, as in VPA.
type ControlledValues string

// The values a Policy can control.
const (
	// RequestsAndLimits sets requests to the target and scales each existing
	// limit to keep its limit:request ratio. It never adds a limit.
	RequestsAndLimits ControlledValues = "RequestsAndLimits"
	// RequestsOnly sets requests and never touches limits; a request is
	// capped at its limit (note CappedToLimit). The exception is a
	// container of a Guaranteed pod: it stays Guaranteed, so its limit
	// follows its request (note LimitFollowsRequest).
	RequestsOnly ControlledValues = "RequestsOnly"
)

// Policy governs how a target request is applied, as a VPA container
// resource policy does. The zero value controls requests and limits of cpu
// and memory, with no bounds.
type Policy struct {
	// ControlledValues is RequestsAndLimits (the default, also for "") or
	// RequestsOnly.
	ControlledValues ControlledValues
	// ControlledResources lists the resources the target may change: cpu
	// and/or memory. Nil means both.
	ControlledResources []corev1.ResourceName
	// MinAllowed raises a target below it (note RaisedToMinAllowed).
	MinAllowed corev1.ResourceList
	// MaxAllowed lowers a target above it (note CappedToMaxAllowed).
	MaxAllowed corev1.ResourceList
}

// Usage is a container's measured usage.
type Usage struct {
	// CPUMillis is the recent cpu usage in millicores (informational).
	CPUMillis int64
	// MemoryWorkingSetBytes is the current memory working set.
	MemoryWorkingSetBytes int64
	// MemoryPeakBytes is the peak working set over the recent window; 0 if
	// unknown. The larger of the two is the usage a memory floor is set from.
	MemoryPeakBytes int64
	// MemoryLimitFloorBytes is a memory limit that a target (not an
	// explicit value) never lowers a Burstable container's limit below; 0
	// for none. The recommender gives the limit it first saw: requests are
	// what the scheduler reserves, and lowering a limit frees nothing on
	// the node but moves the OOM line under the container's next burst.
	MemoryLimitFloorBytes int64
}

// Plan is a safe resize, ready to send to the pod's resize subresource.
type Plan struct {
	// Containers lists the containers whose resources change, regular
	// containers first, each in pod order. Empty for a no-op plan.
	Containers []ContainerPlan
	// Patch is an RFC 6902 JSON patch for the resize subresource. It starts
	// with test operations on every value it changes, so a concurrent change
	// makes the API server reject it (Conflict) instead of overwriting it.
	// Nil for a no-op plan.
	Patch []byte
	// Notes lists the adjustments made to the wish, in the order made.
	Notes []Note
	// Predicted is what the kubelet is expected to do with the patch.
	Predicted Prediction
	// PodRequests is the pod's cpu and memory requests after the resize,
	// counted as the kubelet does (init containers, sidecars, overhead).
	PodRequests corev1.ResourceList
}

// NoOp reports whether the plan changes nothing; there is then nothing to
// send.
func (p *Plan) NoOp() bool { return len(p.Containers) == 0 }

// Restarts returns the names of the containers the kubelet will restart to
// apply the plan (resizePolicy RestartContainer for a changed resource).
func (p *Plan) Restarts() []string {
	var names []string
	for _, c := range p.Containers {
		if c.Restart {
			names = append(names, c.Name)
		}
	}
	return names
}

// ContainerPlan is the new resources of one container.
type ContainerPlan struct {
	// Name is the container's name.
	Name string
	// Sidecar is true for a restartable init container
	// (spec.initContainers), false for a regular one (spec.containers).
	Sidecar bool
	// Index is the container's index in spec.containers or
	// spec.initContainers; -1 for PodLevel.
	Index int
	// PodLevel is true for the pod's own resources (Name is PodLevel):
	// Requests and Limits are the new spec.resources.
	PodLevel bool
	// Requests is the container's complete new requests list; resources
	// other than cpu and memory are unchanged.
	Requests corev1.ResourceList
	// Limits is the container's complete new limits list.
	Limits corev1.ResourceList
	// Restart is true when the kubelet will restart the container to apply
	// the change.
	Restart bool
}

// planner holds the state of one NewPlan call.
type planner struct {
	in        Input
	opts      Options
	pod       *corev1.Pod
	qos       corev1.PodQOSClass
	targets   []*target
	notes     []Note
	predicted Prediction
}

// target is one container being planned.
type target struct {
	wish    ContainerWish
	sidecar bool
	index   int
	spec    *corev1.Container // for PodLevel, a container holding spec.resources
	// podLevel: the target is the pod's own resources (PodLevel).
	podLevel bool
	cur      values // the spec now
	next     values // the plan
	wanted   values // the plan before node capping
	restart  bool
}

func (t *target) name() string { return t.spec.Name }

func (t *target) changed() bool { return t.next != t.cur }

// NewPlan turns a pod and a wish into a safe plan, or refuses.
//
// It applies these rules, in this order, to every container wished for:
//
//  1. The pod must be resizable in place: not finished or terminating, not
//     static, not Windows, on a node that reports container resources, and
//     without pod-level resources unless Options.PodLevelResize. The
//     container must be a regular container or a sidecar, or PodLevel for
//     pod-level resources the pod already sets.
//  2. The wish is turned into new values: explicit values as given; a
//     target clamped to minAllowed/maxAllowed, with limits scaled to keep
//     their ratio (RequestsAndLimits) or requests capped at their limits
//     (RequestsOnly; in a Guaranteed pod the limit follows the request).
//     CPU is counted in whole millicores and memory in whole bytes,
//     rounding up. A BestEffort pod is never given requests.
//     Pod-level values never drop below what the containers ask for
//     (note KeptAboveContainers): requests at least the containers'
//     aggregate requests, limits at least each container's limit, as the
//     API server validates.
//  3. Memory never drops below usage * (1 + MemoryHeadroom), nor by more
//     than MaxMemoryDecreaseFraction of its current value per plan. A memory
//     limit is never lowered or added without a usage figure. A target
//     never lowers a Burstable container's memory limit below
//     Usage.MemoryLimitFloorBytes.
//  4. Namespace: changed values are brought within the LimitRanges'
//     container min, max and maxLimitRequestRatio, and the pod's increases
//     are cut, by one common fraction, to what the LimitRanges' pod max and
//     the ResourceQuotas' room allow (notes CappedToNamespace,
//     RaisedToNamespace); with no increase left, ReasonQuotaFull.
//  5. Node room: if the increase does not fit beside the other pods, or
//     beyond the node's allocatable, Options.NoRoom decides: refuse, cap the
//     increase to what fits, or send anyway with the prediction.
//  6. The QoS class must not change. A Burstable pod that would become
//     Guaranteed keeps one request one unit (1m cpu, else 1 byte of memory)
//     below its limit (note KeptBurstable); any other change is refused.
//  7. No request or limit is removed; no limit is added without a request.
//  8. Containers whose resizePolicy is RestartContainer for a changed
//     resource are marked to restart; that is refused unless
//     Options.AllowRestart, and always in a pod with restartPolicy Never.
//     A pod-level limit change that would restart a container (one with
//     RestartContainer for it and no limit of its own, which inherits the
//     pod's) is always refused.
//  9. Pod-level values are only changed, never added (a resource the pod
//     does not set at the pod level stays unset there), and the final
//     values keep the API server's pod-level rules (ReasonPodLevelConflict
//     otherwise).
//
// Every refusal is a *Refusal (use errors.As); any other error is a bug.
func NewPlan(in Input) (*Plan, error) {
	p, r := newPlanner(in)
	if r != nil {
		return nil, r
	}
	for _, t := range p.targets {
		var r *Refusal
		if len(t.wish.Target) > 0 {
			r = p.applyPolicy(t)
		} else {
			r = p.applyExplicit(t)
		}
		if r != nil {
			return nil, r
		}
	}
	for _, step := range []func() *Refusal{p.fitContainers, p.fitNamespace, p.fitNode, p.keepQoS, p.checkKeys, p.checkPodLevel, p.checkRestarts} {
		if r := step(); r != nil {
			return nil, r
		}
	}
	return p.plan()
}

func newPlanner(in Input) (*planner, *Refusal) {
	if in.Pod == nil {
		return nil, refuse(ReasonInvalidWish, "", "no pod was given")
	}
	opts := in.Options.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, refuse(ReasonInvalidWish, "", "invalid options: %v", err)
	}
	if r := checkPod(in.Pod); r != nil {
		return nil, r
	}
	if hasPodLevelResources(in.Pod) && !opts.PodLevelResize {
		return nil, refuse(ReasonUnsupportedPod, "", "pod %s sets pod-level resources, and resizing such pods is off here (Options.PodLevelResize): the API server forbids any resize of them unless InPlacePodLevelResourcesVerticalScaling is on (beta and on by default from Kubernetes 1.36)", in.Pod.Name)
	}
	p := &planner{in: in, opts: opts, pod: in.Pod, qos: currentQoS(in.Pod), predicted: WouldApply}
	seen := map[string]bool{}
	for _, w := range in.Wish.Containers {
		if w.Name == "" {
			return nil, refuse(ReasonInvalidWish, "", "a container wish has no name")
		}
		if seen[w.Name] {
			return nil, refuse(ReasonInvalidWish, w.Name, "the wish names the container twice")
		}
		seen[w.Name] = true
		if r := checkWish(w); r != nil {
			return nil, r
		}
		t, r := p.locate(w)
		if r != nil {
			return nil, r
		}
		p.targets = append(p.targets, t)
	}
	return p, nil
}

// checkPod refuses pods the API server or the kubelet will not resize.
func checkPod(pod *corev1.Pod) *Refusal {
	switch {
	case pod.DeletionTimestamp != nil:
		return refuse(ReasonUnsupportedPod, "", "pod %s is terminating", pod.Name)
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return refuse(ReasonUnsupportedPod, "", "pod %s has finished (%s)", pod.Name, pod.Status.Phase)
	case pod.Annotations[corev1.MirrorPodAnnotationKey] != "":
		return refuse(ReasonUnsupportedPod, "", "pod %s is a static pod, and static pods cannot be resized", pod.Name)
	case pod.Spec.OS != nil && pod.Spec.OS.Name == corev1.Windows:
		return refuse(ReasonUnsupportedPod, "", "pod %s is a Windows pod, and Windows pods cannot be resized", pod.Name)
	}
	// The API server's version-skew guard: the first running container must
	// report its resources, or the node's kubelet cannot resize.
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil {
			if cs.Resources == nil {
				return refuse(ReasonUnsupportedPod, "", "pod %s runs on a node that does not report container resources, so it does not support in-place resize", pod.Name)
			}
			break
		}
	}
	return nil
}

// checkWish refuses malformed wishes.
func checkWish(w ContainerWish) *Refusal {
	explicit := len(w.Requests)+len(w.Limits) > 0
	policy := len(w.Target) > 0 || w.Policy != nil
	switch {
	case explicit && policy:
		return refuse(ReasonInvalidWish, w.Name, "the wish gives both explicit values and a target; give one")
	case !explicit && !policy:
		return refuse(ReasonInvalidWish, w.Name, "the wish asks for nothing")
	case w.Policy != nil && len(w.Target) == 0:
		return refuse(ReasonInvalidWish, w.Name, "the wish has a policy but no target")
	}
	for what, list := range map[string]corev1.ResourceList{"requests": w.Requests, "limits": w.Limits, "target": w.Target} {
		if r := checkList(w.Name, what, list); r != nil {
			return r
		}
	}
	if pol := w.Policy; pol != nil {
		switch pol.ControlledValues {
		case "", RequestsAndLimits, RequestsOnly:
		default:
			return refuse(ReasonInvalidWish, w.Name, "unknown controlledValues %q", pol.ControlledValues)
		}
		for _, name := range pol.ControlledResources {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				return refuse(ReasonInvalidWish, w.Name, "controlledResources names %s; only cpu and memory can be resized in place", name)
			}
		}
		for what, list := range map[string]corev1.ResourceList{"minAllowed": pol.MinAllowed, "maxAllowed": pol.MaxAllowed} {
			if r := checkList(w.Name, what, list); r != nil {
				return r
			}
		}
		for _, r := range resources {
			lo, okLo := unitsOf(pol.MinAllowed, r)
			hi, okHi := unitsOf(pol.MaxAllowed, r)
			if okLo && okHi && lo > hi {
				return refuse(ReasonInvalidWish, w.Name, "minAllowed %s %s is above maxAllowed %s", r.name(), format(r, lo), format(r, hi))
			}
		}
	}
	return nil
}

func checkList(container, what string, list corev1.ResourceList) *Refusal {
	for name, q := range list {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			return refuse(ReasonInvalidWish, container, "%s names %s; only cpu and memory can be resized in place", what, name)
		}
		if q.Sign() <= 0 {
			return refuse(ReasonInvalidWish, container, "%s %s is %s; it must be positive", what, name, q.String())
		}
	}
	return nil
}

// locate finds the wished container and refuses kinds that cannot resize.
func (p *planner) locate(w ContainerWish) (*target, *Refusal) {
	spec := &p.pod.Spec
	if w.Name == PodLevel {
		if !hasPodLevelResources(p.pod) {
			return nil, refuse(ReasonUnknownContainer, w.Name, "pod %s sets no pod-level resources; snug resizes pod-level resources only where the pod has them", p.pod.Name)
		}
		c := &corev1.Container{Name: PodLevel, Resources: *spec.Resources.DeepCopy()}
		t := p.newTarget(w, c, -1, false)
		t.podLevel = true
		return t, nil
	}
	for i := range spec.Containers {
		if spec.Containers[i].Name == w.Name {
			return p.newTarget(w, &spec.Containers[i], i, false), nil
		}
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if c.Name != w.Name {
			continue
		}
		if !isSidecar(c) {
			return nil, refuse(ReasonNotResizable, w.Name, "it is an init container, and only sidecar (restartPolicy Always) init containers can be resized")
		}
		return p.newTarget(w, c, i, true), nil
	}
	for i := range spec.EphemeralContainers {
		if spec.EphemeralContainers[i].Name == w.Name {
			return nil, refuse(ReasonNotResizable, w.Name, "it is an ephemeral container, and ephemeral containers have no resources to resize")
		}
	}
	return nil, refuse(ReasonUnknownContainer, w.Name, "pod %s has no such container", p.pod.Name)
}

func (p *planner) newTarget(w ContainerWish, c *corev1.Container, index int, sidecar bool) *target {
	v := readValues(c.Resources)
	return &target{wish: w, spec: c, index: index, sidecar: sidecar, cur: v, next: v, wanted: v}
}

func (p *planner) note(t *target, r res, adj Adjustment, format string, args ...any) {
	n := Note{Adjustment: adj, Message: fmt.Sprintf(format, args...)}
	if t != nil {
		n.Container = t.name()
		n.Resource = r.name()
		n.Message = fmt.Sprintf("container %q: %s", t.name(), n.Message)
		if t.podLevel {
			n.Message = "pod-level resources: " + fmt.Sprintf(format, args...)
		}
	}
	p.notes = append(p.notes, n)
}

// apply returns a copy of the pod with the planned values, sharing what it
// does not change.
func (p *planner) apply() *corev1.Pod {
	pod := *p.pod
	pod.Spec.Containers = slices.Clone(p.pod.Spec.Containers)
	pod.Spec.InitContainers = slices.Clone(p.pod.Spec.InitContainers)
	for _, t := range p.targets {
		if t.podLevel {
			rr := writeValues(*p.pod.Spec.Resources, t.next)
			pod.Spec.Resources = &rr
			continue
		}
		list := pod.Spec.Containers
		if t.sidecar {
			list = pod.Spec.InitContainers
		}
		list[t.index].Resources = writeValues(list[t.index].Resources, t.next)
	}
	return &pod
}

// checkKeys guards the key rules of ValidatePodResize and pod defaulting.
func (p *planner) checkKeys() *Refusal {
	for _, t := range p.targets {
		for _, r := range resources {
			cur, next := t.cur[r], t.next[r]
			switch {
			case cur.req.set && !next.req.set:
				return refuse(ReasonKeyChange, t.name(), "the %s request would be removed, which the API forbids", r.name())
			case cur.lim.set && !next.lim.set:
				return refuse(ReasonKeyChange, t.name(), "the %s limit would be removed, which the API forbids", r.name())
			case next.lim.set && !next.req.set:
				return refuse(ReasonKeyChange, t.name(), "a %s limit would be added without a request; the API server would set the request to the limit", r.name())
			case next.req.set && next.lim.set && next.req.units > next.lim.units:
				return refuse(ReasonRequestAboveLimit, t.name(), "the %s request %s would be above its limit %s", r.name(), format(r, next.req.units), format(r, next.lim.units))
			}
		}
	}
	return nil
}

// checkRestarts marks containers the kubelet will restart and refuses
// restarts that are not allowed or not possible.
func (p *planner) checkRestarts() *Refusal {
	var restarting []string
	for _, t := range p.targets {
		if t.podLevel {
			if r := p.checkPodLevelRestarts(t); r != nil {
				return r
			}
			continue
		}
		for _, r := range resources {
			if t.next[r] == t.cur[r] || resizePolicy(t.spec, r) != corev1.RestartContainer {
				continue
			}
			if p.pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
				return refuse(ReasonRestartImpossible, t.name(), "its %s resizePolicy is RestartContainer but the pod's restartPolicy is Never, so the container could not come back; its %s cannot be resized", r.name(), r.name())
			}
			t.restart = true
		}
		if t.restart {
			restarting = append(restarting, t.name())
		}
	}
	if len(restarting) > 0 && !p.opts.AllowRestart {
		return refuse(ReasonRestartRequired, restarting[0], "the resize would restart %q (resizePolicy RestartContainer) and restarts are not allowed", restarting)
	}
	return nil
}

// checkPodLevelRestarts refuses a pod-level limit change that the kubelet
// applies by restarting a container: one whose resizePolicy for the
// resource is RestartContainer and that has no limit of its own, so its
// effective limit is the pod's. Restart windows are per container, so
// snug does not restart containers for a pod-level resize.
func (p *planner) checkPodLevelRestarts(t *target) *Refusal {
	for _, r := range resources {
		if t.next[r].lim == t.cur[r].lim {
			continue
		}
		if name := PodLevelRestarts(p.pod, r.name()); name != "" {
			return refuse(ReasonRestartRequired, PodLevel, "changing the pod-level %s limit would restart %q (resizePolicy RestartContainer, no %s limit of its own); snug does not restart containers for a pod-level resize", r.name(), name, r.name())
		}
	}
	return nil
}

// PodLevelRestarts names a container the kubelet restarts when the pod's
// pod-level limit of resource changes: one with resizePolicy
// RestartContainer for it and no limit of its own, whose effective limit
// is the pod's; "" for none.
func PodLevelRestarts(pod *corev1.Pod, resource corev1.ResourceName) string {
	for _, c := range runningContainers(pod) {
		if _, own := c.Resources.Limits[resource]; own {
			continue
		}
		for _, pol := range c.ResizePolicy {
			if pol.ResourceName == resource && pol.RestartPolicy == corev1.RestartContainer {
				return c.Name
			}
		}
	}
	return ""
}

// runningContainers are the pod's regular containers and sidecars: the
// containers that run beside each other (not the init containers that ran
// to completion before them).
func runningContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			out = append(out, &pod.Spec.InitContainers[i])
		}
	}
	return out
}

// resizePolicy returns the container's restart policy for r; NotRequired
// when none is set, as the kubelet assumes.
func resizePolicy(c *corev1.Container, r res) corev1.ResourceResizeRestartPolicy {
	for _, pol := range c.ResizePolicy {
		if pol.ResourceName == r.name() {
			return pol.RestartPolicy
		}
	}
	return corev1.NotRequired
}

// plan assembles the result.
func (p *planner) plan() (*Plan, error) {
	out := &Plan{Notes: p.notes, Predicted: p.predicted}
	newPod := p.apply()
	total := podRequests(newPod, false)
	out.PodRequests = corev1.ResourceList{}
	for _, r := range resources {
		if q, ok := total[r.name()]; ok {
			out.PodRequests[r.name()] = q
		}
	}
	changed := slices.DeleteFunc(slices.Clone(p.targets), func(t *target) bool { return !t.changed() })
	slices.SortFunc(changed, func(a, b *target) int {
		if a.podLevel != b.podLevel {
			if a.podLevel {
				return 1
			}
			return -1
		}
		if a.sidecar != b.sidecar {
			if a.sidecar {
				return 1
			}
			return -1
		}
		return a.index - b.index
	})
	var edits []containerEdit
	for _, t := range changed {
		rr := writeValues(t.spec.Resources, t.next)
		out.Containers = append(out.Containers, ContainerPlan{
			Name: t.name(), Sidecar: t.sidecar, Index: t.index, PodLevel: t.podLevel,
			Requests: rr.Requests, Limits: rr.Limits, Restart: t.restart,
		})
		e := containerEdit{base: containerPath(t.sidecar, t.index), name: t.name(), cur: t.spec.Resources, next: rr}
		if t.podLevel {
			e.base, e.podLevel = "/spec", true
		}
		edits = append(edits, e)
	}
	if len(edits) == 0 {
		return out, nil
	}
	patch, err := buildPatch(edits)
	if err != nil {
		return nil, fmt.Errorf("building resize patch: %w", err)
	}
	out.Patch = patch
	return out, nil
}
