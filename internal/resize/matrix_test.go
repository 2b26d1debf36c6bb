package resize

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestNewPlanMatrix runs every combination of QoS class, controlled values,
// target size, node room and memory usage through NewPlan and checks the
// invariants (checkResult) plus the ratio rule.
func TestNewPlanMatrix(t *testing.T) {
	pods := map[string]*corev1.Pod{
		"besteffort":        newPod("p").with(ctr("app", "", "")).get(),
		"burstable-ratio2":  newPod("p").with(ctr("app", "100m/200m", "128Mi/256Mi")).get(),
		"burstable-ratio15": newPod("p").with(ctr("app", "300m/450m", "300Mi/450Mi"), ctr("proxy", "50m/50m", "64Mi/64Mi")).get(),
		"burstable-nolimit": newPod("p").with(ctr("app", "100m", "128Mi")).get(),
		"burstable-sidecar": newPod("p").sidecar(ctr("app", "100m/300m", "100Mi/300Mi")).with(ctr("main", "1", "1Gi")).get(),
		"guaranteed":        newPod("p").with(ctr("app", "500m/500m", "512Mi/512Mi")).get(),
	}
	modes := []string{"RequestsAndLimits", "RequestsOnly", "explicit"}
	scales := []float64{0.3, 0.9, 1, 1.7, 5}
	type node struct {
		name         string
		tight        bool
		action       NoRoomAction
		noAllocation bool
	}
	nodes := []node{{name: "ample"}, {name: "tight-refuse", tight: true}, {name: "tight-cap", tight: true, action: NoRoomCap},
		{name: "tight-send", tight: true, action: NoRoomSend}, {name: "unknown", noAllocation: true}}
	usages := []string{"none", "low", "high"}

	reasons := map[Reason]int{}
	plans, adjusted := 0, map[Adjustment]int{}
	for podName, pod := range pods {
		app := findContainer(pod, "app")
		cur := readValues(app.Resources)
		for _, mode := range modes {
			for _, scale := range scales {
				for _, n := range nodes {
					for _, usage := range usages {
						name := fmt.Sprintf("%s/%s/x%v/%s/usage-%s", podName, mode, scale, n.name, usage)
						in := Input{Pod: pod, Options: Options{NoRoom: n.action}}
						tgt := corev1.ResourceList{}
						for _, r := range resources {
							base := cur[r].req.units
							if !cur[r].req.set {
								base = map[res]int64{cpu: 100, memory: 128 << 20}[r]
							}
							tgt[r.name()] = quantity(r, max(1, int64(float64(base)*scale)), nil)
						}
						switch mode {
						case "explicit":
							in.Wish.Containers = []ContainerWish{{Name: "app", Requests: tgt}}
						default:
							in.Wish.Containers = []ContainerWish{{Name: "app", Target: tgt, Policy: &Policy{ControlledValues: ControlledValues(mode)}}}
						}
						total := podRequests(pod, false)
						if !n.noAllocation {
							in.NodeAllocatable = bigNode
							if n.tight {
								// Room for 20% more than the pod has now.
								in.NodeAllocatable = rl("cpu=4", "memory=8Gi")
								in.OthersClaimed = corev1.ResourceList{}
								for _, r := range resources {
									have, _ := unitsOf(total, r)
									alloc, _ := unitsOf(in.NodeAllocatable, r)
									in.OthersClaimed[r.name()] = quantity(r, alloc-have-have/5-1, nil)
								}
							}
						}
						mem := cur[memory].req.units
						switch usage {
						case "low":
							in.Usage = map[string]Usage{"app": {MemoryWorkingSetBytes: mem * 3 / 10}}
						case "high":
							in.Usage = map[string]Usage{"app": {MemoryWorkingSetBytes: mem * 12 / 10}}
						}
						t.Run(name, func(t *testing.T) {
							plan, err := NewPlan(in)
							checkResult(t, in, plan, err)
							if r, ok := err.(*Refusal); ok {
								reasons[r.Reason]++
								if podName == "besteffort" && r.Reason != ReasonQoSChange {
									t.Errorf("best effort refused for %s, want QoSChange", r.Reason)
								}
								return
							}
							if podName == "besteffort" {
								t.Fatalf("best effort pod planned: %v", planSummary(plan))
							}
							plans++
							for _, a := range adjustments(plan.Notes) {
								adjusted[a]++
							}
							checkRatio(t, in, pod, plan, mode)
						})
					}
				}
			}
		}
	}
	t.Logf("plans %d, refusals %v, adjustments %v", plans, reasons, adjusted)
	for _, r := range []Reason{ReasonQoSChange, ReasonUsageUnknown, ReasonWouldDefer, ReasonRequestAboveLimit} {
		if reasons[r] == 0 {
			t.Errorf("the matrix never refused with %s", r)
		}
	}
	for _, a := range []Adjustment{CappedToLimit, LimitFollowsRequest, KeptAboveUsage, DecreaseStepLimited, KeptBurstable, CappedToNodeRoom, NodeRoomUnchecked, NoRoomSentAnyway, LoweredWithoutUsage} {
		if adjusted[a] == 0 {
			t.Errorf("the matrix never made adjustment %s", a)
		}
	}
}

// checkRatio asserts RequestsAndLimits kept each limit:request ratio, up to
// rounding, wherever no note explains a departure.
func checkRatio(t *testing.T, in Input, pod *corev1.Pod, plan *Plan, mode string) {
	t.Helper()
	if mode != "RequestsAndLimits" {
		return
	}
	explained := map[corev1.ResourceName]bool{}
	for _, n := range plan.Notes {
		switch n.Adjustment {
		case KeptBurstable, KeptAboveUsage, DecreaseStepLimited:
			explained[n.Resource] = true
		}
	}
	old := readValues(findContainer(pod, "app").Resources)
	for _, c := range plan.Containers {
		if c.Name != "app" {
			continue
		}
		nv := readValues(corev1.ResourceRequirements{Requests: c.Requests, Limits: c.Limits})
		for _, r := range resources {
			o, n := old[r], nv[r]
			if explained[r.name()] || !o.lim.set || !o.req.set || n == o {
				continue
			}
			if want := mulDivCeil(n.req.units, o.lim.units, o.req.units); n.lim.units != want && n.lim.units != o.lim.units {
				t.Errorf("%s limit %d, want %d for request %d (ratio %d:%d); notes %v", r.name(), n.lim.units, want, n.req.units, o.lim.units, o.req.units, plan.Notes)
			}
		}
	}
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}
