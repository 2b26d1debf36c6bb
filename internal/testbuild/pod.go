package testbuild

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// T0 is the tests' reference time.
var T0 = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

// Namespace is the builders' namespace unless one is set.
const Namespace = "ns"

// PodBuilder builds a pod. Its methods change the pod and return the
// builder.
type PodBuilder struct{ pod *corev1.Pod }

// Pod starts a running pod named name in Namespace with UID "uid-"+name.
func Pod(name string) *PodBuilder {
	return &PodBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, UID: types.UID("uid-" + name)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

// Namespace sets the pod's namespace.
func (b *PodBuilder) Namespace(ns string) *PodBuilder { b.pod.Namespace = ns; return b }

// Labels sets the pod's labels (kv alternates keys and values).
func (b *PodBuilder) Labels(kv ...string) *PodBuilder {
	b.pod.Labels = pairs(kv)
	return b
}

// LabelSet sets the pod's labels to a copy of m.
func (b *PodBuilder) LabelSet(m map[string]string) *PodBuilder {
	b.pod.Labels = make(map[string]string, len(m))
	for k, v := range m {
		b.pod.Labels[k] = v
	}
	return b
}

// OwnedBy makes the pod's controller the ReplicaSet name, with UID
// "uid-"+name.
func (b *PodBuilder) OwnedBy(name string) *PodBuilder {
	yes := true
	b.pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: types.UID("uid-" + name), Controller: &yes}}
	return b
}

// Node binds the pod to node.
func (b *PodBuilder) Node(node string) *PodBuilder { b.pod.Spec.NodeName = node; return b }

// Container adds a running container whose spec and status resources are
// the requests and limits given as cpu and memory quantities ("" leaves
// one out).
func (b *PodBuilder) Container(name, cpuRequest, cpuLimit, memRequest, memLimit string) *PodBuilder {
	rr := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	set := func(l corev1.ResourceList, r corev1.ResourceName, q string) {
		if q != "" {
			l[r] = resource.MustParse(q)
		}
	}
	set(rr.Requests, corev1.ResourceCPU, cpuRequest)
	set(rr.Limits, corev1.ResourceCPU, cpuLimit)
	set(rr.Requests, corev1.ResourceMemory, memRequest)
	set(rr.Limits, corev1.ResourceMemory, memLimit)
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: name, Resources: rr})
	b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses, corev1.ContainerStatus{
		Name: name, ContainerID: "containerd://" + name, Resources: rr.DeepCopy(),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	})
	return b
}

// QOS sets the pod's status.qosClass.
func (b *PodBuilder) QOS(q corev1.PodQOSClass) *PodBuilder { b.pod.Status.QOSClass = q; return b }

// Phase sets the pod's phase.
func (b *PodBuilder) Phase(p corev1.PodPhase) *PodBuilder { b.pod.Status.Phase = p; return b }

// Ready adds a true Ready condition.
func (b *PodBuilder) Ready() *PodBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	return b
}

// DeferredSince adds a PodResizePending condition with reason Deferred
// that turned true at t.
func (b *PodBuilder) DeferredSince(t time.Time) *PodBuilder {
	return b.pending(corev1.PodReasonDeferred, t)
}

// Infeasible adds a PodResizePending condition with reason Infeasible.
func (b *PodBuilder) Infeasible() *PodBuilder { return b.pending(corev1.PodReasonInfeasible, T0) }

func (b *PodBuilder) pending(reason string, t time.Time) *PodBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: reason,
		LastTransitionTime: metav1.NewTime(t),
	})
	return b
}

// Condition adds a condition of type typ with status s that turned so at t.
func (b *PodBuilder) Condition(typ corev1.PodConditionType, s corev1.ConditionStatus, t time.Time) *PodBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{Type: typ, Status: s, LastTransitionTime: metav1.NewTime(t)})
	return b
}

// Deleting sets the pod's deletion timestamp.
func (b *PodBuilder) Deleting() *PodBuilder {
	b.pod.DeletionTimestamp = &metav1.Time{Time: T0}
	return b
}

// Get returns the pod.
func (b *PodBuilder) Get() *corev1.Pod { return b.pod }

func pairs(kv []string) map[string]string {
	if len(kv)%2 != 0 {
		panic("testbuild: odd number of label keys and values")
	}
	m := make(map[string]string, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
