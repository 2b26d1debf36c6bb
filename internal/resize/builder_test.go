package resize

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podBuilder builds test pods in the style of VPA's test_pod.go: a running
// pod whose status mirrors its spec unless told otherwise.
type podBuilder struct {
	pod        *corev1.Pod
	keepStatus bool
}

func newPod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 1},
		Spec:       corev1.PodSpec{NodeName: "node-1", RestartPolicy: corev1.RestartPolicyAlways},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

func (b *podBuilder) with(cs ...*corev1.Container) *podBuilder {
	for _, c := range cs {
		b.pod.Spec.Containers = append(b.pod.Spec.Containers, *c)
	}
	return b
}

func (b *podBuilder) sidecar(c *corev1.Container) *podBuilder {
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, *c)
	return b
}

func (b *podBuilder) init(c *corev1.Container) *podBuilder {
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, *c)
	return b
}

func (b *podBuilder) ephemeral(name string) *podBuilder {
	b.pod.Spec.EphemeralContainers = append(b.pod.Spec.EphemeralContainers,
		corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name}})
	return b
}

func (b *podBuilder) restartNever() *podBuilder {
	b.pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	return b
}

func (b *podBuilder) overhead(list corev1.ResourceList) *podBuilder {
	b.pod.Spec.Overhead = list
	return b
}

func (b *podBuilder) phase(p corev1.PodPhase) *podBuilder {
	b.pod.Status.Phase = p
	return b
}

func (b *podBuilder) edit(f func(*corev1.Pod)) *podBuilder {
	f(b.pod)
	return b
}

// condition adds a resize condition that started at since.
func (b *podBuilder) condition(t corev1.PodConditionType, reason string, since time.Time) *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(since),
	})
	return b
}

// statusAs sets a container's allocated and actual resources; the pod's
// status is then kept as given for the other containers too.
func (b *podBuilder) statusAs(name string, allocated corev1.ResourceList, actual *corev1.ResourceRequirements) *podBuilder {
	b.fillStatus()
	b.keepStatus = true
	for _, list := range []*[]corev1.ContainerStatus{&b.pod.Status.ContainerStatuses, &b.pod.Status.InitContainerStatuses} {
		for i := range *list {
			if (*list)[i].Name == name {
				(*list)[i].AllocatedResources = allocated
				(*list)[i].Resources = actual
			}
		}
	}
	return b
}

func (b *podBuilder) fillStatus() {
	if b.keepStatus {
		return
	}
	b.pod.Status.QOSClass = ComputeQoS(b.pod)
	b.pod.Status.ContainerStatuses = nil
	b.pod.Status.InitContainerStatuses = nil
	status := func(c corev1.Container) corev1.ContainerStatus {
		rr := *c.Resources.DeepCopy()
		return corev1.ContainerStatus{
			Name:               c.Name,
			State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			AllocatedResources: c.Resources.Requests.DeepCopy(),
			Resources:          &rr,
		}
	}
	for _, c := range b.pod.Spec.Containers {
		b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses, status(c))
	}
	for _, c := range b.pod.Spec.InitContainers {
		s := status(c)
		if !isSidecar(&c) {
			s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}
			s.Resources = nil
		}
		b.pod.Status.InitContainerStatuses = append(b.pod.Status.InitContainerStatuses, s)
	}
}

func (b *podBuilder) get() *corev1.Pod {
	b.fillStatus()
	return b.pod
}

// ctr builds a container. cpu and mem are "request/limit", "request" or ""
// (none); an empty side of the slash means that key is absent.
func ctr(name, cpuSpec, memSpec string, opts ...func(*corev1.Container)) *corev1.Container {
	c := &corev1.Container{Name: name}
	set := func(r corev1.ResourceName, spec string) {
		if spec == "" {
			return
		}
		req, lim, hasLim := strings.Cut(spec, "/")
		if req != "" {
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			c.Resources.Requests[r] = resource.MustParse(req)
		}
		if hasLim && lim != "" {
			if c.Resources.Limits == nil {
				c.Resources.Limits = corev1.ResourceList{}
			}
			c.Resources.Limits[r] = resource.MustParse(lim)
		}
	}
	set(corev1.ResourceCPU, cpuSpec)
	set(corev1.ResourceMemory, memSpec)
	for _, o := range opts {
		o(c)
	}
	return c
}

// restartOn sets resizePolicy RestartContainer for the resources.
func restartOn(names ...corev1.ResourceName) func(*corev1.Container) {
	return func(c *corev1.Container) {
		for _, n := range names {
			c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: n, RestartPolicy: corev1.RestartContainer})
		}
	}
}

// rl builds a resource list from "cpu=250m", "memory=1Gi" pairs.
func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

func aim(name string, pol *Policy, pairs ...string) ContainerWish {
	return ContainerWish{Name: name, Target: rl(pairs...), Policy: pol}
}

func exact(name string, requests, limits corev1.ResourceList) ContainerWish {
	return ContainerWish{Name: name, Requests: requests, Limits: limits}
}

var requestsOnly = &Policy{ControlledValues: RequestsOnly}

// summary renders containers' cpu and memory as "cpu=250m/500m
// memory=128Mi/-", "-" for an absent key.
func summary(rr corev1.ResourceRequirements) string {
	get := func(list corev1.ResourceList, r corev1.ResourceName) string {
		q, ok := list[r]
		if !ok {
			return "-"
		}
		return q.String()
	}
	return fmt.Sprintf("cpu=%s/%s memory=%s/%s",
		get(rr.Requests, corev1.ResourceCPU), get(rr.Limits, corev1.ResourceCPU),
		get(rr.Requests, corev1.ResourceMemory), get(rr.Limits, corev1.ResourceMemory))
}

// planSummary maps each changed container to its summary.
func planSummary(p *Plan) map[string]string {
	out := map[string]string{}
	for _, c := range p.Containers {
		out[c.Name] = summary(corev1.ResourceRequirements{Requests: c.Requests, Limits: c.Limits})
	}
	return out
}

func adjustments(notes []Note) []Adjustment {
	var out []Adjustment
	for _, n := range notes {
		out = append(out, n.Adjustment)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// bigNode is a node with room for anything in these tests.
var bigNode = rl("cpu=64", "memory=256Gi")
