//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/internal/actuate"
	"github.com/snug-dev/snug/internal/resize"
)

// The planner against the real API server: for many generated pods and
// wishes, every plan NewPlan makes is accepted by the API server's resize
// validation and admission (sent with dryRun=All, so nothing changes), and
// every refusal carries a reason and a message.
//
// Resize validation (ValidatePodResize) does not need a running or even a
// bound pod: most pods here are held Pending by a scheduling gate, which
// costs no node room and no kubelet work. The 1.36+ PodResizeValidator
// admission plugin only judges pods bound to a node, against that node's
// allocatable, so a few running pods on the lab's node are tried as well.
//
// SNUG_PROPERTY_SEED picks the seed (default 1); SNUG_PROPERTY_PODS and
// SNUG_PROPERTY_WISHES the sizes.
func TestPlannerPropertyAgainstAPIServer(t *testing.T) {
	seed := envInt("SNUG_PROPERTY_SEED", 1)
	nPods := envInt("SNUG_PROPERTY_PODS", 48)
	nWishes := envInt("SNUG_PROPERTY_WISHES", 25)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	t.Logf("seed %d, %d gated pods with %d wishes each + 4 running pods with %d", seed, nPods, nWishes, 4*nWishes)
	ns := testNamespace(t, "snug-rz-property-")
	ctx := context.Background()
	act := &actuate.Actuator{Client: core}

	var names []string
	for i := 0; i < nPods; i++ {
		p := genPod(rng, fmt.Sprintf("gen-%03d", i))
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "snug.dev/never"}}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating generated pod %s: %v\n%+v", p.Name, err, p.Spec)
		}
		names = append(names, p.Name)
	}
	for i := 0; i < 4; i++ {
		p := genPod(rng, fmt.Sprintf("run-%d", i))
		shrink(p) // small enough that four fit on the node
		createRunning(t, ns, p)
		names = append(names, p.Name)
	}

	minor := serverMinor(t)
	counts := map[string]int{}
	reasons := map[resize.Reason]int{}
	for _, name := range names {
		target, err := act.Gather(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		bound := target.Pod.Spec.NodeName != ""
		wishes := nWishes
		if bound {
			// Few bound pods: more wishes each, so that node room is tried.
			wishes *= 4
			t.Logf("running pod %s: %s", name, podResources(target.Pod))
		}
		for w := 0; w < wishes; w++ {
			wish, usage, opts := genWish(rng, target.Pod)
			if bound && rng.IntN(2) == 0 {
				// Sent anyway, often with a cpu request near or above
				// the node's: the prediction is then checked too.
				opts.NoRoom = resize.NoRoomSend
				if rng.IntN(2) == 0 {
					big := resource.MustParse([]string{"1500m", "1900m", "2", "2001m", "2500m", "3"}[rng.IntN(6)])
					if wish.Target != nil {
						wish.Target[corev1.ResourceCPU] = big
					} else {
						wish.Requests = appendList(wish.Requests, corev1.ResourceCPU, big)
						delete(wish.Limits, corev1.ResourceCPU)
					}
				}
			}
			in := target.Input(resize.Wish{Containers: []resize.ContainerWish{wish}}, usage, opts)
			plan, err := resize.NewPlan(in)
			var ref *resize.Refusal
			switch {
			case errors.As(err, &ref):
				counts["refused"]++
				reasons[ref.Reason]++
				if ref.Reason == "" || ref.Message == "" {
					t.Errorf("pod %s: refusal without a stated reason: %+v", name, ref)
				}
				continue
			case err != nil:
				t.Errorf("pod %s: planner error (a bug): %v", name, err)
				continue
			case plan.NoOp():
				counts["no-op"]++
				continue
			}
			r, err := act.Send(ctx, target.Pod, plan.Patch, actuate.SendOptions{DryRun: true})
			if err != nil {
				t.Fatalf("sending %s: %v", name, err)
			}
			if plan.Predicted == resize.WouldBeInfeasible && minor >= 36 {
				// 1.36+: PodResizeValidator refuses above allocatable.
				if r.Outcome != resize.Rejected || r.APIError == nil || r.APIError.Code != 403 {
					t.Errorf("pod %s: predicted WouldBeInfeasible, the API server said %s %v; want 403\n  patch %s", name, r.Outcome, r.APIError, plan.Patch)
				}
				counts["plan sent anyway, WouldBeInfeasible, 403 as predicted"]++
				continue
			}
			if r.Outcome != resize.InProgress {
				counts["plan refused by the API server"]++
				t.Errorf("pod %s: the API server said %s to a plan: %v\n  predicted %s, notes %v\n  patch %s\n  pod resources %s",
					name, r.Outcome, r.APIError, plan.Predicted, plan.Notes, plan.Patch, podResources(target.Pod))
				continue
			}
			counts["plan accepted ("+plan.Predicted.String()+")"]++
			// Kinds of patch worth knowing were tried: a key added under a
			// test of the whole list, or of an empty resources object.
			if strings.Contains(string(plan.Patch), `/resources","value":{}`) {
				counts["  of which add to a container without resources"]++
			}
			if strings.Contains(string(plan.Patch), `"op":"add"`) {
				counts["  of which add a request or limit"]++
			}
			if len(plan.Restarts()) > 0 {
				counts["  of which restart a container"]++
			}
			if strings.Contains(string(plan.Patch), "/spec/initContainers/") {
				counts["  of which resize a sidecar"]++
			}
			// The server's result must be what the plan says.
			for _, cp := range plan.Containers {
				got := findIn(r.Pod, cp.Name)
				if !equalCPUMem(got.Resources.Requests, cp.Requests) || !equalCPUMem(got.Resources.Limits, cp.Limits) {
					t.Errorf("pod %s container %s: server stored %v, plan said requests %v limits %v", name, cp.Name, got.Resources, cp.Requests, cp.Limits)
				}
			}
		}
	}
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%-40s %d", k, counts[k])
	}
	var rs []string
	for r, n := range reasons {
		rs = append(rs, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(rs)
	t.Logf("refusals by reason: %v", rs)
	if counts["plan accepted (WouldApply)"] == 0 {
		t.Errorf("no plan was tried against the API server")
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

var (
	cpuValues = []string{"1m", "10m", "100m", "250m", "500m", "999m", "1", "1500m", "2", "3"}
	memValues = []string{"4Mi", "16Mi", "32Mi", "64Mi", "100M", "128Mi", "200Mi", "256Mi", "1Gi"}
)

// genContainer makes a container of a class: "g" (request == limit for cpu
// and memory), "b" (some request or limit, not all equal), "e" (none).
func genContainer(rng *rand.Rand, name, class string) corev1.Container {
	c := corev1.Container{Name: name, Image: busybox, ImagePullPolicy: corev1.PullNever, Command: []string{"sh", "-c", sleepSh}}
	pick := func(vals []string) resource.Quantity { return resource.MustParse(vals[rng.IntN(len(vals)-2)]) }
	switch class {
	case "g":
		cpu, mem := pick(cpuValues), pick(memValues)
		c.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
		}
	case "b":
		req, lim := corev1.ResourceList{}, corev1.ResourceList{}
		for _, r := range []struct {
			name corev1.ResourceName
			vals []string
		}{{corev1.ResourceCPU, cpuValues}, {corev1.ResourceMemory, memValues}} {
			switch rng.IntN(4) {
			case 0: // request only
				req[r.name] = pick(r.vals)
			case 1: // request and a larger limit (ratio 1..4)
				q := pick(r.vals)
				req[r.name] = q
				l := q.DeepCopy()
				l.Mul(int64(1 + rng.IntN(4)))
				lim[r.name] = l
			case 2: // equal
				q := pick(r.vals)
				req[r.name], lim[r.name] = q, q
			}
		}
		if len(req) == 0 {
			req[corev1.ResourceCPU] = pick(cpuValues)
		}
		rc, lc, rm, lm := req[corev1.ResourceCPU], lim[corev1.ResourceCPU], req[corev1.ResourceMemory], lim[corev1.ResourceMemory]
		if len(lim) == 2 && len(req) == 2 && rc.Cmp(lc) == 0 && rm.Cmp(lm) == 0 {
			delete(lim, corev1.ResourceCPU)
		}
		c.Resources = corev1.ResourceRequirements{Requests: req}
		if len(lim) > 0 {
			c.Resources.Limits = lim
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if rng.IntN(3) == 0 {
			pol := corev1.NotRequired
			if rng.IntN(2) == 0 {
				pol = corev1.RestartContainer
			}
			c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: r, RestartPolicy: pol})
		}
	}
	return c
}

// genPod makes a pod of a random QoS class with one or two regular
// containers, maybe a sidecar and maybe a plain init container.
func genPod(rng *rand.Rand, name string) *corev1.Pod {
	class := []string{"g", "b", "b", "e"}[rng.IntN(4)]
	classOf := func() string {
		if class == "b" {
			return []string{"b", "g", "e"}[rng.IntN(3)]
		}
		return class
	}
	grace := int64(1)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace},
	}
	if rng.IntN(4) == 0 {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	p.Spec.Containers = append(p.Spec.Containers, genContainer(rng, "app", classOf()))
	if rng.IntN(3) == 0 {
		p.Spec.Containers = append(p.Spec.Containers, genContainer(rng, "helper", classOf()))
	}
	if rng.IntN(3) == 0 {
		s := genContainer(rng, "sidecar", classOf())
		always := corev1.ContainerRestartPolicyAlways
		s.RestartPolicy = &always
		p.Spec.InitContainers = append(p.Spec.InitContainers, s)
	}
	if rng.IntN(4) == 0 {
		i := genContainer(rng, "setup", classOf())
		i.ResizePolicy = nil
		i.Command = []string{"true"}
		p.Spec.InitContainers = append([]corev1.Container{i}, p.Spec.InitContainers...)
	}
	if p.Spec.RestartPolicy == corev1.RestartPolicyNever {
		// RestartContainer is invalid there; the API server refuses such pods.
		for _, list := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
			for i := range list {
				if list[i].RestartPolicy == nil {
					list[i].ResizePolicy = nil
				}
			}
		}
	}
	return p
}

// shrink scales a generated pod down so that four of them run on the
// node: cpu at most 100m and memory at most 64Mi per value, keeping the
// request:limit relations (equal stays equal).
func shrink(p *corev1.Pod) {
	caps := map[corev1.ResourceName]resource.Quantity{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	for _, list := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range list {
			rr := &list[i].Resources
			for name, capq := range caps {
				req, hasReq := rr.Requests[name]
				lim, hasLim := rr.Limits[name]
				if hasReq && req.Cmp(capq) > 0 {
					rr.Requests[name] = capq
					if hasLim && lim.Cmp(req) == 0 {
						rr.Limits[name] = capq
					}
				}
				if hasLim {
					if l := rr.Limits[name]; l.Cmp(rr.Requests[name]) < 0 {
						rr.Limits[name] = rr.Requests[name]
					}
				}
			}
		}
	}
	p.Spec.RestartPolicy = corev1.RestartPolicyAlways
}

// genWish asks for something of one container: explicit values or a
// target, values around the current ones, random options and usage.
func genWish(rng *rand.Rand, pod *corev1.Pod) (resize.ContainerWish, map[string]resize.Usage, resize.Options) {
	var all []corev1.Container
	all = append(all, pod.Spec.Containers...)
	all = append(all, pod.Spec.InitContainers...)
	c := all[rng.IntN(len(all))]
	w := resize.ContainerWish{Name: c.Name}
	scale := func(name corev1.ResourceName, base corev1.ResourceList) resource.Quantity {
		vals := cpuValues
		if name == corev1.ResourceMemory {
			vals = memValues
		}
		q, ok := base[name]
		if !ok || rng.IntN(3) == 0 {
			return resource.MustParse(vals[rng.IntN(len(vals))])
		}
		factors := []float64{0.25, 0.5, 0.8, 0.999, 1, 1.001, 1.25, 2, 4}
		f := factors[rng.IntN(len(factors))]
		if name == corev1.ResourceCPU {
			return *resource.NewMilliQuantity(max(1, int64(float64(q.MilliValue())*f)), resource.DecimalSI)
		}
		return *resource.NewQuantity(max(1, int64(float64(q.Value())*f)), q.Format)
	}
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	chosen := names[:1+rng.IntN(2)]
	if rng.IntN(2) == 0 {
		chosen = []corev1.ResourceName{corev1.ResourceMemory}
	}
	if rng.IntN(2) == 0 {
		w.Target = corev1.ResourceList{}
		for _, n := range chosen {
			w.Target[n] = scale(n, c.Resources.Requests)
		}
		w.Policy = &resize.Policy{}
		if rng.IntN(3) == 0 {
			w.Policy.ControlledValues = resize.RequestsOnly
		}
	} else {
		for _, n := range chosen {
			switch rng.IntN(3) {
			case 0:
				w.Requests = appendList(w.Requests, n, scale(n, c.Resources.Requests))
			case 1:
				w.Limits = appendList(w.Limits, n, scale(n, c.Resources.Limits))
			default:
				w.Requests = appendList(w.Requests, n, scale(n, c.Resources.Requests))
				w.Limits = appendList(w.Limits, n, scale(n, c.Resources.Limits))
			}
		}
	}
	var usage map[string]resize.Usage
	if rng.IntN(2) == 0 {
		usage = map[string]resize.Usage{c.Name: {MemoryWorkingSetBytes: int64(1+rng.IntN(64)) << 20}}
	}
	opts := resize.Options{AllowRestart: rng.IntN(2) == 0, NoRoom: []resize.NoRoomAction{resize.NoRoomRefuse, resize.NoRoomCap}[rng.IntN(2)]}
	if rng.IntN(3) == 0 {
		opts.MaxMemoryDecreaseFraction = 1
	}
	return w, usage, opts
}

func appendList(l corev1.ResourceList, n corev1.ResourceName, q resource.Quantity) corev1.ResourceList {
	if l == nil {
		l = corev1.ResourceList{}
	}
	l[n] = q
	return l
}

func findIn(p *corev1.Pod, name string) corev1.Container {
	for _, list := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range list {
			if c.Name == name {
				return c
			}
		}
	}
	return corev1.Container{}
}

func equalCPUMem(a, b corev1.ResourceList) bool {
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		qa, okA := a[n]
		qb, okB := b[n]
		if okA != okB || (okA && qa.Cmp(qb) != 0) {
			return false
		}
	}
	return true
}

func podResources(p *corev1.Pod) string {
	s := "qos " + string(p.Status.QOSClass)
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			s += fmt.Sprintf("; %s cpu %s/%s mem %s/%s policy %v", c.Name,
				qs(c.Resources.Requests, "cpu"), qs(c.Resources.Limits, "cpu"),
				qs(c.Resources.Requests, "memory"), qs(c.Resources.Limits, "memory"), c.ResizePolicy)
		}
	}
	return s
}

// Why the planner never adds a limit without a request (ReasonKeyChange):
// the API server defaults a missing request to the limit on the resize
// subresource too, a change nobody asked for.
func TestResizeDefaultsRequestToLimit(t *testing.T) {
	ns := testNamespace(t, "snug-rz-default-")
	ctx := context.Background()
	p := podShape{name: "limitless", memReq: "32Mi", gated: true}.pod()
	if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Pods(ns).Patch(ctx, "limitless", "application/json-patch+json",
		[]byte(`[{"op":"add","path":"/spec/containers/0/resources/limits","value":{"cpu":"500m"}}]`),
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "resize")
	if err != nil {
		t.Fatalf("adding a cpu limit alone: %v", err)
	}
	rr := got.Spec.Containers[0].Resources
	t.Logf("after adding only limits.cpu=500m: requests %v limits %v", rr.Requests, rr.Limits)
	check(t, "defaulted cpu request", qs(rr.Requests, "cpu"), "500m")
}
