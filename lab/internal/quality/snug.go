package quality

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/cgroup"
	"github.com/snug-dev/snug/internal/policy"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
	"github.com/snug-dev/snug/lab/internal/quality/node"
)

// resizeTimeout is the agent's DefaultResizeTimeout: a sent resize not
// seen in the actual resources by then is reported as a Timeout.
const resizeTimeout = 30 * time.Second

// nodeAllocatable is the replay node's room: larger than any trace asks,
// so no resize is deferred for room (the replay measures sizing, not
// packing).
var nodeAllocatable = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("16"),
	corev1.ResourceMemory: resource.MustParse("64Gi"),
}

// snugSizer runs the agent's decision step on the real recommender and
// planner: per pod a recommend.Pod under the default SnugPolicy's behavior
// (policy.Behavior, as the agent's podStateFor), per container
// recommend.Container.Observe with the second's cgroup.Signals and the
// actual resources (OOMKilled first after an OOM restart, as the agent's
// decide), then, once all containers of the pass are observed, one
// resize.NewPlan per pod that wished a change (the agent's plan), with the
// outcome fed back (Applied when the node shows it, Timeout after 30 s).
type snugSizer struct {
	pods []*snugPod
}

type snugPod struct {
	rec   *recommend.Pod
	opts  resize.Options
	rules []policy.Rules
	cs    []*recommend.Container
	// inFlight is set from Sent to the outcome; sentAt is when.
	inFlight bool
	sentAt   int
	last     []recommend.Decision
	qos      corev1.PodQOSClass
}

func (s *snugSizer) start(w *world) error {
	pol := &v1alpha1.SnugPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "replay", Name: "replay"}}
	for p, pod := range w.tr.Pods {
		cfg, opts, err := policy.Behavior(recommend.DefaultConfig(), pol)
		if err != nil {
			return err
		}
		rp, err := recommend.NewPod(cfg)
		if err != nil {
			return err
		}
		sp := &snugPod{rec: rp, opts: opts, qos: qosOf(w.cont[p])}
		for _, c := range pod.Containers {
			rules := policy.RulesForPod(policy.ContainerPolicy(pol, c.Name), nil, sp.qos)
			rc, err := rp.AddContainer(c.Name, rules.Bounds, nil)
			if err != nil {
				return err
			}
			sp.rules = append(sp.rules, rules)
			sp.cs = append(sp.cs, rc)
		}
		sp.last = make([]recommend.Decision, len(pod.Containers))
		s.pods = append(s.pods, sp)
	}
	return nil
}

func (*snugSizer) stop() {}

// signals are what the agent's cgroup reader computes for a second of the
// node model.
func signals(t int, s node.Second, r node.Resources) cgroup.Signals {
	sig := cgroup.Signals{
		Time: now(t), HasRate: !s.Restarted, IntervalSeconds: 1,
		MemoryWorkingSetBytes: uint64(s.MemBytes),
	}
	if sig.HasRate {
		sig.CPUUsageMillicores = s.CPUUsageMillis
		sig.CPUThrottledFraction = s.ThrottledFraction
		if s.ThrottledFraction > 0 {
			// Each throttled period waited the rest of its 100 ms.
			sig.CPUThrottledSecondsPerSecond = s.ThrottledFraction * 0.05
		}
	}
	if r.CPULimitMillis > 0 {
		sig.CPULimitMillicores = r.CPULimitMillis
	} else {
		sig.CPUUnlimited = true
	}
	if r.MemLimitBytes > 0 {
		sig.MemoryLimited = true
		if room := float64(r.MemLimitBytes) - s.MemBytes; room > 0 {
			sig.MemoryHeadroomBytes = uint64(room)
			sig.MemoryHeadroomFraction = room / float64(r.MemLimitBytes)
		}
	}
	return sig
}

func (s *snugSizer) second(w *world, t int) ([]resizeReq, error) {
	var out []resizeReq
	for p, sp := range s.pods {
		wanted := false
		resized := false
		for c, rc := range sp.cs {
			ns := w.last[p][c]
			resized = resized || ns.Resized
			if !ns.Running {
				continue // no cgroup to read while the container waits to restart
			}
			if ns.AfterOOM {
				rc.OOMKilled()
			}
			act := w.cont[p][c].Actual
			d := rc.Observe(now(t), signals(t, ns, act), recommend.Resources(act))
			sp.last[c] = d
			if d.Resize() && !sp.rules[c].Off {
				wanted = true
			}
		}
		if sp.inFlight {
			switch {
			case resized:
				sp.rec.Feedback(now(t), recommend.Feedback{Outcome: resize.Applied})
				sp.inFlight = false
			case time.Duration(t-sp.sentAt)*time.Second >= resizeTimeout:
				sp.rec.Feedback(now(t), recommend.Feedback{Outcome: resize.Timeout})
				sp.inFlight = false
			}
		}
		if !wanted || sp.inFlight {
			continue
		}
		reqs, err := sp.plan(w, p, t)
		if err != nil {
			return nil, err
		}
		out = append(out, reqs...)
	}
	return out, nil
}

// plan is the agent's Decider.plan for one pod of the replay.
func (sp *snugPod) plan(w *world, p, t int) ([]resizeReq, error) {
	pod := w.tr.Pods[p]
	var wish resize.Wish
	usage := map[string]resize.Usage{}
	for c, tc := range pod.Containers {
		ns := w.last[p][c]
		usage[tc.Name] = resize.Usage{CPUMillis: int64(ns.CPUUsageMillis), MemoryWorkingSetBytes: int64(ns.MemBytes), MemoryPeakBytes: sp.cs[c].MemoryPeakBytes(now(t)), MemoryLimitFloorBytes: sp.cs[c].MemoryLimitFloorBytes()}
		if sp.rules[c].Off {
			continue
		}
		tl := corev1.ResourceList{}
		if ch := sp.last[c].CPU; ch.Action != recommend.Hold {
			tl[corev1.ResourceCPU] = *resource.NewMilliQuantity(ch.Request, resource.DecimalSI)
		}
		if ch := sp.last[c].Memory; ch.Action != recommend.Hold {
			tl[corev1.ResourceMemory] = *resource.NewQuantity(ch.Request, resource.BinarySI)
		}
		if len(tl) == 0 {
			continue
		}
		pol := sp.rules[c].Policy
		wish.Containers = append(wish.Containers, resize.ContainerWish{Name: tc.Name, Target: tl, Policy: &pol})
	}
	if len(wish.Containers) == 0 {
		return nil, nil
	}
	kpod := podObject(w, p, sp.qos)
	plan, err := resize.NewPlan(resize.Input{Pod: kpod, Usage: usage, Wish: wish, Options: sp.opts, NodeAllocatable: nodeAllocatable})
	if err != nil {
		var ref *resize.Refusal
		if !errors.As(err, &ref) {
			return nil, fmt.Errorf("planning: %w", err)
		}
		o := resize.Rejected
		switch ref.Reason {
		case resize.ReasonWouldDefer:
			o = resize.Deferred
		case resize.ReasonWouldBeInfeasible:
			o = resize.Infeasible
		}
		sp.rec.Feedback(now(t), recommend.Feedback{Outcome: o})
		return nil, nil
	}
	if plan.NoOp() {
		var caps []recommend.Cap
		for _, wc := range wish.Containers {
			for c, tc := range pod.Containers {
				if tc.Name == wc.Name {
					a := w.cont[p][c].Actual
					caps = append(caps, recommend.Cap{Container: tc.Name, CPUMillis: a.CPURequestMillis, MemBytes: a.MemRequestBytes})
				}
			}
		}
		sp.rec.Feedback(now(t), recommend.Feedback{Outcome: resize.Deferred, Caps: caps})
		return nil, nil
	}
	var out []resizeReq
	for _, cp := range plan.Containers {
		for c, tc := range pod.Containers {
			if tc.Name != cp.Name {
				continue
			}
			out = append(out, resizeReq{pod: p, container: c, res: resourcesOf(cp.Requests, cp.Limits)})
		}
	}
	for c := range pod.Containers {
		for _, ch := range []recommend.Change{sp.last[c].CPU, sp.last[c].Memory} {
			if ch.Action != recommend.Hold {
				res := "cpu"
				if ch.Reason.Memory {
					res = "memory"
				}
				w.metrics.Reasons[res+" "+ch.Action.String()+" "+ch.Reason.Why.String()]++
			}
		}
	}
	sp.rec.Sent(now(t))
	sp.inFlight, sp.sentAt = true, t
	return out, nil
}

func resourcesOf(req, lim corev1.ResourceList) node.Resources {
	var r node.Resources
	if q, ok := req[corev1.ResourceCPU]; ok {
		r.CPURequestMillis = q.MilliValue()
	}
	if q, ok := lim[corev1.ResourceCPU]; ok {
		r.CPULimitMillis = q.MilliValue()
	}
	if q, ok := req[corev1.ResourceMemory]; ok {
		r.MemRequestBytes = q.Value()
	}
	if q, ok := lim[corev1.ResourceMemory]; ok {
		r.MemLimitBytes = q.Value()
	}
	return r
}

func resourceList(cpuMillis, memBytes int64) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpuMillis > 0 {
		l[corev1.ResourceCPU] = *resource.NewMilliQuantity(cpuMillis, resource.DecimalSI)
	}
	if memBytes > 0 {
		l[corev1.ResourceMemory] = *resource.NewQuantity(memBytes, resource.BinarySI)
	}
	return l
}

// qosOf is the pod's QoS class from its containers' resources.
func qosOf(cs []*node.Container) corev1.PodQOSClass {
	guaranteed, any := true, false
	for _, c := range cs {
		a := c.Actual
		any = any || a.CPURequestMillis > 0 || a.MemRequestBytes > 0 || a.CPULimitMillis > 0 || a.MemLimitBytes > 0
		guaranteed = guaranteed && a.CPULimitMillis > 0 && a.MemLimitBytes > 0 &&
			(a.CPURequestMillis == 0 || a.CPURequestMillis == a.CPULimitMillis) && (a.MemRequestBytes == 0 || a.MemRequestBytes == a.MemLimitBytes)
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// podObject is the pod as the API server would show it: the spec at the
// resources last asked for (a refused resize stays in the spec), the status
// at the actual ones.
func podObject(w *world, p int, qos corev1.PodQOSClass) *corev1.Pod {
	tp := w.tr.Pods[p]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "replay", Name: tp.Name, UID: types.UID("replay-" + tp.Name)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: qos},
	}
	for c, tc := range tp.Containers {
		nc := w.cont[p][c]
		a := nc.Actual
		spec := a
		if r, ok := nc.PendingResources(); ok {
			spec = r
		}
		k := corev1.Container{
			Name: tc.Name,
			Resources: corev1.ResourceRequirements{
				Requests: resourceList(spec.CPURequestMillis, spec.MemRequestBytes),
				Limits:   resourceList(spec.CPULimitMillis, spec.MemLimitBytes),
			},
			ResizePolicy: []corev1.ContainerResizePolicy{
				{ResourceName: corev1.ResourceCPU, RestartPolicy: restartPolicy(tc.CPURestart)},
				{ResourceName: corev1.ResourceMemory, RestartPolicy: restartPolicy(tc.MemRestart)},
			},
		}
		pod.Spec.Containers = append(pod.Spec.Containers, k)
		st := corev1.ContainerStatus{
			Name: tc.Name, Ready: true, RestartCount: int32(nc.Restarts()),
			State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			AllocatedResources: resourceList(a.CPURequestMillis, a.MemRequestBytes),
			Resources: &corev1.ResourceRequirements{
				Requests: resourceList(a.CPURequestMillis, a.MemRequestBytes),
				Limits:   resourceList(a.CPULimitMillis, a.MemLimitBytes),
			},
		}
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, st)
	}
	return pod
}

func restartPolicy(restart bool) corev1.ResourceResizeRestartPolicy {
	if restart {
		return corev1.RestartContainer
	}
	return corev1.NotRequired
}
