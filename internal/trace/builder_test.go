package trace

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podBuilder makes one-container pods for tests.
type podBuilder struct{ pod *corev1.Pod }

func newPod(name, uid string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo", UID: types.UID(uid), Generation: 1, ResourceVersion: "1"},
		Spec: corev1.PodSpec{
			NodeName:   "snug-lab",
			Containers: []corev1.Container{{Name: "app"}},
		},
		Status: corev1.PodStatus{
			Phase:              corev1.PodRunning,
			QOSClass:           corev1.PodQOSBurstable,
			ObservedGeneration: 1,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name:         "app",
				ContainerID:  "containerd://aaaaaaaaaaaaaaaa",
				State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				RestartCount: 0,
			}},
		},
	}}
}

func rl(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

// clone returns a builder for a copy of the pod, with a new resource
// version.
func (b *podBuilder) clone() *podBuilder {
	p := b.pod.DeepCopy()
	p.ResourceVersion += "1"
	return &podBuilder{pod: p}
}

func (b *podBuilder) desired(reqCPU, limCPU, reqMem, limMem string) *podBuilder {
	b.pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl(reqCPU, reqMem), Limits: rl(limCPU, limMem)}
	return b
}

func (b *podBuilder) allocated(cpu, mem string) *podBuilder {
	b.pod.Status.ContainerStatuses[0].AllocatedResources = rl(cpu, mem)
	return b
}

func (b *podBuilder) actual(reqCPU, limCPU, reqMem, limMem string) *podBuilder {
	b.pod.Status.ContainerStatuses[0].Resources = &corev1.ResourceRequirements{Requests: rl(reqCPU, reqMem), Limits: rl(limCPU, limMem)}
	return b
}

func (b *podBuilder) gen(generation, observed int64) *podBuilder {
	b.pod.Generation, b.pod.Status.ObservedGeneration = generation, observed
	return b
}

func (b *podBuilder) condition(t corev1.PodConditionType, reason, message string, gen int64, since time.Time) *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(since),
	})
	return b
}

func (b *podBuilder) noConditions() *podBuilder {
	b.pod.Status.Conditions = nil
	return b
}

func (b *podBuilder) restarted(count int32, id string) *podBuilder {
	cs := &b.pod.Status.ContainerStatuses[0]
	cs.RestartCount, cs.ContainerID = count, id
	return b
}

func event(pod *corev1.Pod, uid, rv, reason, message string, at time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: pod.Name + "." + uid, Namespace: pod.Namespace, UID: types.UID(uid), ResourceVersion: rv},
		InvolvedObject:      corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Reason:              reason,
		Message:             message,
		Type:                corev1.EventTypeNormal,
		Source:              corev1.EventSource{Component: "kubelet"},
		Count:               1,
		LastTimestamp:       metav1.NewTime(at),
		ReportingController: "kubelet",
	}
}

var t0 = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)

func at(seconds float64) time.Time { return t0.Add(time.Duration(seconds * float64(time.Second))) }

// fakeUsage is a UsageSource for tests; cpu grows with every call.
type fakeUsage struct{ calls int }

func (f *fakeUsage) Usage(namespace, pod, container string) (Usage, bool) {
	f.calls++
	return Usage{CPUMillis: float64(80 + 20*min(f.calls, 12)), MemoryBytes: 40 << 20, ThrottledFraction: 0.25}, true
}

// deferredRecording is a made-up trace of a Deferred resize that completes
// once room appears, then a restart, built the way the Recorder builds
// one: samples from pod versions, ticks every second, events, marks.
func deferredRecording() *Recording {
	r, _ := NewRecorder(nil, Options{Namespace: "demo", Pod: "app-1"})
	r.rec.Started = t0
	r.rec.ServerVersion = "v1.35.4"
	u := &fakeUsage{}
	base := newPod("app-1", "1f0e9d8c-0000-4000-8000-000000000001").
		desired("100m", "200m", "64Mi", "64Mi").allocated("100m", "64Mi").actual("100m", "200m", "64Mi", "64Mi")
	pod := func(seconds float64, b *podBuilder, cause Cause) {
		r.mu.Lock()
		r.observePodLocked(b.pod, at(seconds), cause)
		r.mu.Unlock()
	}
	tick := func(seconds float64) {
		r.clock = fixedClock(at(seconds))
		r.opts.Usage = u
		r.tick()
	}
	ev := func(seconds float64, e *corev1.Event) {
		r.mu.Lock()
		r.observeEventLocked(e, at(seconds))
		r.mu.Unlock()
	}
	mark := func(seconds float64, name string) {
		r.clock = fixedClock(at(seconds))
		r.Mark(name)
	}
	pod(0, base, CauseList)
	tick(1)
	mark(1.5, "resize patch sent")
	b := base.clone().desired("400m", "800m", "64Mi", "64Mi").gen(2, 1)
	pod(1.62, b, CauseWatch)
	b = b.clone().gen(2, 2).condition(corev1.PodResizePending, "Deferred", "Node didn't have enough resource: cpu, requested: 400, used: 1700, capacity: 2000", 2, at(1.8))
	pod(1.81, b, CauseWatch)
	ev(1.83, event(b.pod, "e1", "11", "ResizeDeferred", `Pod resize Deferred: {"containers":[{"name":"app","resources":{"limits":{"cpu":"800m","memory":"64Mi"},"requests":{"cpu":"400m","memory":"64Mi"}}}],"generation":2,"error":"Node didn't have enough resource: cpu, requested: 400, used: 1700, capacity: 2000"}`, at(1.8)))
	for s := 2.0; s <= 6; s++ {
		tick(s)
	}
	mark(6.2, "filler deleted")
	b = b.clone().noConditions().allocated("400m", "64Mi").condition(corev1.PodResizeInProgress, "", "", 2, at(7.3))
	pod(7.31, b, CauseWatch)
	ev(7.32, event(b.pod, "e2", "12", "ResizeStarted", "Pod resize started: {\"containers\":[{\"name\":\"app\",\"resources\":{\"requests\":{\"cpu\":\"400m\"}}}]}", at(7.3)))
	b = b.clone().noConditions().actual("400m", "800m", "64Mi", "64Mi")
	pod(7.72, b, CauseWatch)
	ev(7.75, event(b.pod, "e3", "13", "ResizeCompleted", "Pod resize completed", at(7.7)))
	tick(8)
	tick(9)
	b = b.clone().restarted(1, "containerd://bbbbbbbbbbbbbbbb")
	pod(9.4, b, CauseWatch)
	ev(9.41, event(b.pod, "e4", "14", "Started", "Started container app", at(9.4)))
	dns := event(b.pod, "e5", "15", "MissingClusterDNS", "kubelet does not have ClusterDNS IP configured", at(9.5))
	ev(9.5, dns)
	dns = dns.DeepCopy()
	dns.ResourceVersion, dns.Count = "16", 2
	ev(9.9, dns)
	tick(10)
	r.rec.Ended = at(10.5)
	r.rec.EndReason = "stopped"
	return r.copyLocked()
}

// selectorRecording is a made-up trace of two pods selected by a label:
// the first gets an Infeasible resize, then an Error, is evicted and
// deleted; the second joins later.
func selectorRecording() *Recording {
	r, _ := NewRecorder(nil, Options{Namespace: "demo", Selector: "app=web"})
	r.rec.Started = t0
	r.rec.ServerVersion = "v1.35.4"
	r.mu.Lock()
	defer r.mu.Unlock()
	a := newPod("web-a", "uid-a").desired("50m", "", "64Mi", "128Mi").allocated("50m", "64Mi").actual("50m", "", "64Mi", "128Mi")
	r.observePodLocked(a.pod, at(0), CauseList)
	b := a.clone().desired("2500m", "", "64Mi", "128Mi").gen(2, 2).
		condition(corev1.PodResizePending, "Infeasible", "Node didn't have enough capacity: cpu, requested: 2500, capacity: 2000", 2, at(3))
	r.observePodLocked(b.pod, at(3), CauseWatch)
	c := b.clone().desired("50m", "", "32Mi", "32Mi").gen(3, 3).noConditions().
		condition(corev1.PodResizeInProgress, "Error", "memory limit (32Mi) below usage (40Mi)", 3, at(8))
	r.observePodLocked(c.pod, at(8), CauseWatch)
	r.observeEventLocked(event(c.pod, "e1", "1", "EvictedByVPA", "Pod was evicted by VPA Updater to apply resource recommendation.", at(19)), at(19))
	d := c.clone()
	now := metav1.NewTime(at(19.5))
	d.pod.DeletionTimestamp = &now
	r.observePodLocked(d.pod, at(19.5), CauseWatch)
	r.podGoneLocked(d.pod, at(20))
	n := newPod("web-b", "uid-b").desired("250m", "", "64Mi", "128Mi").allocated("250m", "64Mi").actual("250m", "", "64Mi", "128Mi")
	r.observePodLocked(n.pod, at(22), CauseWatch)
	r.rec.Ended = at(30)
	r.rec.EndReason = "stopped"
	return r.copyLocked()
}
