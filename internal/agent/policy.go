package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
)

// PolicyLister lists the SnugPolicies the agent knows of.
type PolicyLister interface {
	List() []*v1alpha1.SnugPolicy
}

// storeLister lists an informer's store of policies.
type storeLister struct{ store cache.Store }

func (s storeLister) List() []*v1alpha1.SnugPolicy {
	var out []*v1alpha1.SnugPolicy
	for _, o := range s.store.List() {
		if p, ok := o.(*v1alpha1.SnugPolicy); ok {
			out = append(out, p)
		}
	}
	return out
}

// WatchPolicies runs an informer over every SnugPolicy in the cluster and
// returns a lister of its cache. It waits up to syncTimeout for the first
// list; when the CRD is not installed (or the list fails for another
// reason) it returns the lister anyway, with an error to log: the informer
// keeps retrying, and policies show up once the CRD exists.
func WatchPolicies(ctx context.Context, pc *policyclient.Client, syncTimeout time.Duration) (PolicyLister, error) {
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			return pc.SnugPolicies("").List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			return pc.SnugPolicies("").Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &v1alpha1.SnugPolicy{}, 0, cache.Indexers{})
	go inf.Run(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	l := storeLister{inf.GetStore()}
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		return l, fmt.Errorf("listing snugpolicies: not done after %v (is the CRD installed?)", syncTimeout)
	}
	return l, nil
}

// workload is the top of a pod's controller chain.
type workload struct {
	Kind, Name string
}

// ownerResolver finds the workload that owns a pod, following
// ReplicaSet -> Deployment and Job -> CronJob with GETs that run off the
// loop goroutine; results are cached per pod UID.
type ownerResolver struct {
	client kubernetes.Interface

	mu      sync.Mutex
	byPod   map[types.UID]workload
	pending map[types.UID]bool
}

func newOwnerResolver(c kubernetes.Interface) *ownerResolver {
	return &ownerResolver{client: c, byPod: map[types.UID]workload{}, pending: map[types.UID]bool{}}
}

// get returns the pod's workload if known. Otherwise it starts resolving it
// in the background and returns false; a later call has the answer.
func (r *ownerResolver) get(ctx context.Context, pod *corev1.Pod) (workload, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return workload{}, true
	}
	switch ref.Kind {
	case "StatefulSet", "DaemonSet":
		return workload{ref.Kind, ref.Name}, true
	case "ReplicaSet", "Job":
	default:
		return workload{ref.Kind, ref.Name}, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.byPod[pod.UID]; ok {
		return w, true
	}
	if r.pending[pod.UID] || r.client == nil {
		return workload{}, false
	}
	r.pending[pod.UID] = true
	go r.resolve(ctx, pod.UID, pod.Namespace, *ref)
	return workload{}, false
}

func (r *ownerResolver) resolve(ctx context.Context, uid types.UID, ns string, ref metav1.OwnerReference) {
	w := workload{ref.Kind, ref.Name}
	var owner *metav1.OwnerReference
	var err error
	switch ref.Kind {
	case "ReplicaSet":
		rs, e := r.client.AppsV1().ReplicaSets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err = e; err == nil {
			owner = metav1.GetControllerOf(rs)
		}
	case "Job":
		j, e := r.client.BatchV1().Jobs(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err = e; err == nil {
			owner = metav1.GetControllerOf(j)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, uid)
	if err != nil && !apierrors.IsNotFound(err) {
		return // tried again on a later sample
	}
	if owner != nil && (owner.Kind == "Deployment" || owner.Kind == "CronJob") {
		w = workload{owner.Kind, owner.Name}
	}
	r.byPod[uid] = w
}

func (r *ownerResolver) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byPod, uid)
}

// matchPolicy returns the policy that covers pod, or nil. A policy's
// targetRef matches the pod's workload (w); a selector matches its labels.
// With several matches the oldest policy wins (then the first by name), so
// the choice is stable.
func matchPolicy(policies []*v1alpha1.SnugPolicy, pod *corev1.Pod, w workload) *v1alpha1.SnugPolicy {
	var best *v1alpha1.SnugPolicy
	for _, p := range policies {
		if p.Namespace != pod.Namespace || !covers(p, pod, w) {
			continue
		}
		if best == nil || p.CreationTimestamp.Before(&best.CreationTimestamp) ||
			(p.CreationTimestamp.Equal(&best.CreationTimestamp) && p.Name < best.Name) {
			best = p
		}
	}
	return best
}

func covers(p *v1alpha1.SnugPolicy, pod *corev1.Pod, w workload) bool {
	if t := p.Spec.TargetRef; t != nil {
		return w.Kind == t.Kind && w.Name == t.Name
	}
	if p.Spec.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if err != nil || sel.Empty() {
		return false
	}
	return sel.Matches(labels.Set(pod.Labels))
}

// needsOwner reports whether any policy in ns names a workload, so that a
// pod's owner chain is worth resolving.
func needsOwner(policies []*v1alpha1.SnugPolicy, ns string) bool {
	return slices.ContainsFunc(policies, func(p *v1alpha1.SnugPolicy) bool {
		return p.Namespace == ns && p.Spec.TargetRef != nil
	})
}

// updateMode returns the policy's update mode, InPlace when unset.
func updateMode(p *v1alpha1.SnugPolicy) v1alpha1.UpdateMode {
	if p.Spec.UpdatePolicy == nil || p.Spec.UpdatePolicy.UpdateMode == "" {
		return v1alpha1.UpdateModeInPlace
	}
	return p.Spec.UpdatePolicy.UpdateMode
}

// actuates reports whether the mode lets the agent patch pods. Off only
// recommends; Initial needs admission, which snug does not have yet.
func actuates(m v1alpha1.UpdateMode) bool {
	return m == v1alpha1.UpdateModeInPlace || m == v1alpha1.UpdateModeInPlaceOrRecreate
}

// containerPolicy returns the entry for name, else "*", else the defaults.
func containerPolicy(p *v1alpha1.SnugPolicy, name string) v1alpha1.ContainerResourcePolicy {
	if p.Spec.ResourcePolicy != nil {
		var star *v1alpha1.ContainerResourcePolicy
		for i, cp := range p.Spec.ResourcePolicy.ContainerPolicies {
			if cp.ContainerName == name {
				return cp
			}
			if cp.ContainerName == "*" {
				star = &p.Spec.ResourcePolicy.ContainerPolicies[i]
			}
		}
		if star != nil {
			return *star
		}
	}
	return v1alpha1.ContainerResourcePolicy{ContainerName: name}
}

// containerRules is what a container policy means to the recommender and
// the planner.
type containerRules struct {
	// Off is mode Off: recommend, never resize.
	Off    bool
	Bounds recommend.Bounds
	Policy resize.Policy
}

// rulesForPod is rulesFor for a container of a pod of the given QoS class.
// A Guaranteed container stays Guaranteed, so under RequestsOnly the planner
// moves its limit with its request (resize.LimitFollowsRequest); the
// recommender must then not treat the limit as fixed, or it would never ask
// for more than the limit a throttled Guaranteed container already has.
func rulesForPod(cp v1alpha1.ContainerResourcePolicy, uncontrolled []corev1.ResourceName, qos corev1.PodQOSClass) containerRules {
	r := rulesFor(cp, uncontrolled)
	if qos == corev1.PodQOSGuaranteed {
		r.Bounds.RequestsOnly = false
	}
	return r
}

// rulesFor reads a container policy. uncontrolled is the policy's
// status.uncontrolledResources (the resources an HPA scales the target on):
// they are taken out of controlledResources, so the container is still
// learnt but never resized in them.
func rulesFor(cp v1alpha1.ContainerResourcePolicy, uncontrolled []corev1.ResourceName) containerRules {
	r := containerRules{Off: cp.Mode == v1alpha1.ContainerScalingModeOff}
	controlled := cp.ControlledResources
	if len(uncontrolled) > 0 {
		if len(controlled) == 0 {
			controlled = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
		}
		// Never nil: an empty list controls nothing (nil would mean both).
		controlled = slices.DeleteFunc(slices.Clone(controlled), func(n corev1.ResourceName) bool {
			return slices.Contains(uncontrolled, n)
		})
	}
	if controlled != nil {
		r.Bounds.IgnoreCPU = !slices.Contains(controlled, corev1.ResourceCPU)
		r.Bounds.IgnoreMemory = !slices.Contains(controlled, corev1.ResourceMemory)
		r.Policy.ControlledResources = slices.Clone(controlled)
		if r.Policy.ControlledResources == nil {
			r.Policy.ControlledResources = []corev1.ResourceName{}
		}
	}
	if r.Off {
		r.Bounds.IgnoreCPU, r.Bounds.IgnoreMemory = true, true
	}
	if cp.ControlledValues == v1alpha1.ContainerControlledValuesRequestsOnly {
		r.Bounds.RequestsOnly = true
		r.Policy.ControlledValues = resize.RequestsOnly
	} else {
		r.Policy.ControlledValues = resize.RequestsAndLimits
	}
	if a := cp.MinAllowed; a != nil {
		r.Policy.MinAllowed = corev1.ResourceList{}
		if a.CPU != nil {
			r.Bounds.MinCPUMillis = a.CPU.MilliValue()
			r.Policy.MinAllowed[corev1.ResourceCPU] = *a.CPU
		}
		if a.Memory != nil {
			r.Bounds.MinMemBytes = a.Memory.Value()
			r.Policy.MinAllowed[corev1.ResourceMemory] = *a.Memory
		}
	}
	if a := cp.MaxAllowed; a != nil {
		r.Policy.MaxAllowed = corev1.ResourceList{}
		if a.CPU != nil {
			r.Bounds.MaxCPUMillis = a.CPU.MilliValue()
			r.Policy.MaxAllowed[corev1.ResourceCPU] = *a.CPU
		}
		if a.Memory != nil {
			r.Bounds.MaxMemBytes = a.Memory.Value()
			r.Policy.MaxAllowed[corev1.ResourceMemory] = *a.Memory
		}
	}
	return r
}

// behaviorConfig turns a policy's behavior into the recommender's Config
// and the planner's Options, starting from base (the agent's defaults,
// which carry the cluster-wide tuning such as the CPU half-life).
func behaviorConfig(base recommend.Config, p *v1alpha1.SnugPolicy) (recommend.Config, resize.Options, error) {
	cfg := base
	opts := resize.DefaultOptions()
	opts.NoRoom = resize.NoRoomCap
	if b := p.Spec.Behavior; b != nil {
		if b.MemoryHeadroomPercent != nil {
			h := float64(*b.MemoryHeadroomPercent) / 100
			cfg.MemoryHeadroom = h
			// The planner reads 0 as its default; ask for almost none.
			opts.MemoryHeadroom = max(h, 1e-6)
		}
		if b.MaxResizesPerHour > 0 {
			cfg.MaxResizesPerHour = int(b.MaxResizesPerHour)
			cfg.GrowReserve = min(cfg.GrowReserve, cfg.MaxResizesPerHour-1)
		}
		if u := b.ScaleUp; u != nil {
			if u.CPUThrottledPercent > 0 {
				cfg.CPUThrottledFraction = float64(u.CPUThrottledPercent) / 100
			}
			if u.MemoryWorkingSetPercent > 0 {
				// 100% means "at the limit"; the recommender needs a
				// positive margin, so that is a tenth of a percent.
				cfg.MemoryNearLimitFraction = max(float64(100-u.MemoryWorkingSetPercent)/100, 0.001)
			}
		}
		if d := b.ScaleDown; d != nil {
			if d.StabilizationWindowSeconds != nil {
				// 0 shrinks at once: the recommender's window must be
				// positive, and a nanosecond ends with the next sample.
				cfg.ShrinkWindow = max(time.Duration(*d.StabilizationWindowSeconds)*time.Second, time.Nanosecond)
			}
			if d.MaxStepPercent > 0 {
				f := float64(d.MaxStepPercent) / 100
				cfg.MaxCPUShrinkFraction = f
				// Memory keeps the planner's per-plan limit as a ceiling.
				cfg.MaxMemoryShrinkFraction = min(f, base.MaxMemoryShrinkFraction)
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, opts, fmt.Errorf("policy %s/%s behavior: %w", p.Namespace, p.Name, err)
	}
	return cfg, opts, nil
}

// ignoresOOMKills reports behavior.scaleUp.onOOMKill Ignore.
func ignoresOOMKills(p *v1alpha1.SnugPolicy) bool {
	b := p.Spec.Behavior
	return b != nil && b.ScaleUp != nil && b.ScaleUp.OnOOMKill == v1alpha1.OOMKillActionIgnore
}
