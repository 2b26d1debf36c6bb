package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/cgroup"
	"github.com/snug-dev/snug/internal/policy"
	"github.com/snug-dev/snug/internal/resize"
)

func TestNextDeferredStep(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rules := func(a v1alpha1.DeferredAction, after time.Duration) policy.Deferred {
		return policy.Deferred{Action: a, After: after}
	}
	for _, tc := range []struct {
		name    string
		r       policy.Deferred
		age     time.Duration // since the deferral
		actedAt time.Duration // ago; 0 = never
		want    deferredStep
	}{
		{"fit: too early", rules(v1alpha1.DeferredActionFitToNode, 30*time.Second), 29 * time.Second, 0, deferredNone},
		{"fit: after afterSeconds", rules(v1alpha1.DeferredActionFitToNode, 30*time.Second), 30 * time.Second, 0, deferredFit},
		{"fit: at once with afterSeconds 0", rules(v1alpha1.DeferredActionFitToNode, 0), 0, 0, deferredFit},
		{"fit: not again within the refit interval", rules(v1alpha1.DeferredActionFitToNode, 0), time.Minute, 5 * time.Second, deferredNone},
		{"fit: again after it", rules(v1alpha1.DeferredActionFitToNode, 0), time.Minute, minRefit, deferredFit},
		{"fit: not again within afterSeconds", rules(v1alpha1.DeferredActionFitToNode, 30*time.Second), time.Minute, 20 * time.Second, deferredNone},
		{"wait: always wait", rules(v1alpha1.DeferredActionWait, 30*time.Second), time.Hour, 0, deferredWait},
		{"evict: the controller's turn first", rules(v1alpha1.DeferredActionEvict, 30*time.Second), 59 * time.Second, 0, deferredNone},
		{"evict: then fit", rules(v1alpha1.DeferredActionEvict, 30*time.Second), 30*time.Second + evictGrace, 0, deferredFit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0.Add(time.Hour)
			var acted time.Time
			if tc.actedAt > 0 {
				acted = now.Add(-tc.actedAt)
			}
			if got := nextDeferredStep(tc.r, now.Add(-tc.age), acted, now); got != tc.want {
				t.Errorf("step %d, want %d", got, tc.want)
			}
		})
	}
}

// deferredPod is a running pod whose resize from actual to spec the
// kubelet deferred a minute before now.
func deferredPod(name string, now time.Time, specReq, specLim, actReq, actLim corev1.ResourceList) *corev1.Pod {
	p := testPod(name, map[string]string{"app": "load"}, actReq, actLim)
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: specReq.DeepCopy(), Limits: specLim.DeepCopy()}
	p.Generation = 2
	p.Status.ObservedGeneration = 2
	p.Status.ContainerStatuses[0].AllocatedResources = actReq.DeepCopy()
	p.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred, ObservedGeneration: 2,
		LastTransitionTime: metav1.NewTime(now.Add(-time.Minute)), Message: "Node didn't have enough resource: cpu",
	}}
	return p
}

// applyPatch applies a resize patch's test and replace operations to a
// copy of the pod's first container spec, failing on a test that does not
// hold (the API server would refuse the patch).
func applyPatch(t *testing.T, pod *corev1.Pod, patch []byte) corev1.ResourceRequirements {
	t.Helper()
	var ops []struct {
		Op, Path string
		Value    any
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	rr := *pod.Spec.Containers[0].Resources.DeepCopy()
	for _, op := range ops {
		var kind, res string
		if _, err := fmtSscan(op.Path, &kind, &res); err != nil {
			continue
		}
		l := rr.Requests
		if kind == "limits" {
			l = rr.Limits
		}
		v, ok := op.Value.(string)
		if !ok {
			t.Fatalf("op %+v: value is no quantity", op)
		}
		switch op.Op {
		case "test":
			if cur := l[corev1.ResourceName(res)]; cur.Cmp(resource.MustParse(v)) != 0 {
				t.Fatalf("patch tests %s = %s, spec has %s", op.Path, v, cur.String())
			}
		case "replace", "add":
			l[corev1.ResourceName(res)] = resource.MustParse(v)
		}
	}
	return rr
}

func TestFitToNode(t *testing.T) {
	now := time.Now()
	both := containerRules{}
	noCPU := containerRules{Bounds: policy.RulesFor(v1alpha1.ContainerResourcePolicy{}, []corev1.ResourceName{corev1.ResourceCPU}).Bounds}
	noMemory := containerRules{Bounds: policy.RulesFor(v1alpha1.ContainerResourcePolicy{}, []corev1.ResourceName{corev1.ResourceMemory}).Bounds}
	guaranteed := func() *corev1.Pod {
		return deferredPod("g", now, rl("700m", "128Mi"), rl("700m", "128Mi"), rl("250m", "128Mi"), rl("250m", "128Mi"))
	}
	burstable := func() *corev1.Pod {
		return deferredPod("b", now, rl("400m", "128Mi"), rl("800m", "256Mi"), rl("100m", "64Mi"), rl("200m", "128Mi"))
	}
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		others     corev1.ResourceList
		rules      containerRules
		want       *corev1.ResourceRequirements // nil: no patch
		wantRevert bool
	}{{
		name: "part of the increase fits", pod: guaranteed(), others: rl("1350m", "1Gi"), rules: both,
		want: &corev1.ResourceRequirements{Requests: rl("650m", "128Mi"), Limits: rl("650m", "128Mi")},
	}, {
		name: "nothing fits: back to the actual resources", pod: guaranteed(), others: rl("1750m", "1Gi"), rules: both,
		want: &corev1.ResourceRequirements{Requests: rl("250m", "128Mi"), Limits: rl("250m", "128Mi")}, wantRevert: true,
	}, {
		name: "less than nothing fits: back to the actual resources", pod: guaranteed(), others: rl("1900m", "1Gi"), rules: both,
		want: &corev1.ResourceRequirements{Requests: rl("250m", "128Mi"), Limits: rl("250m", "128Mi")}, wantRevert: true,
	}, {
		name: "it fits now: the kubelet retries by itself", pod: guaranteed(), others: rl("1000m", "1Gi"), rules: both,
	}, {
		name: "cpu is an HPA's: left pending", pod: guaranteed(), others: rl("1750m", "1Gi"), rules: noCPU,
	}, {
		name: "container Off: left pending", pod: guaranteed(), others: rl("1750m", "1Gi"), rules: containerRules{Off: true, Bounds: noCPU.Bounds},
	}, {
		name: "burstable: cpu cut with its limit ratio, memory kept", pod: burstable(), others: rl("1700m", "1Gi"), rules: both,
		want: &corev1.ResourceRequirements{Requests: rl("300m", "128Mi"), Limits: rl("600m", "256Mi")},
	}, {
		name: "memory short: cut, cpu kept", pod: burstable(), others: rl("100m", "4000Mi"), rules: both,
		want: &corev1.ResourceRequirements{Requests: rl("400m", "96Mi"), Limits: rl("800m", "192Mi")},
	}, {
		name: "memory short and memory the HPA's: only cpu is the agent's, and it fits", pod: burstable(), others: rl("100m", "4000Mi"), rules: noMemory,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			usage := map[string]resize.Usage{"app": {MemoryWorkingSetBytes: 40 << 20}}
			fit, err := fitToNode(fitInput{pod: tc.pod, allocatable: rl("2", "4Gi"), othersClaimed: tc.others, usage: usage,
				rules: map[string]containerRules{"app": tc.rules}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if fit.patch != nil {
					t.Fatalf("patch %s (%s), want none", fit.patch, fit.summary)
				}
				return
			}
			if fit.patch == nil {
				t.Fatal("no patch")
			}
			got := applyPatch(t, tc.pod, fit.patch)
			if diff := cmp.Diff(*tc.want, got); diff != "" {
				t.Errorf("spec after the patch (-want +got):\n%s\n%s", diff, fit.summary)
			}
			if diff := cmp.Diff(tc.want.Requests, fit.spec["app"].Requests); diff != "" {
				t.Errorf("reported spec (-want +got):\n%s", diff)
			}
			if fit.revert != tc.wantRevert {
				t.Errorf("revert %v, want %v", fit.revert, tc.wantRevert)
			}
			t.Log(fit.summary)
		})
	}
}

// TestMemoryShortFitsToNode: a large memory increase is cut to the room,
// not by the planner's per-plan decrease step (the pending value is no
// decrease of what runs).
func TestMemoryShortFitsToNode(t *testing.T) {
	now := time.Now()
	pod := deferredPod("b", now, rl("100m", "512Mi"), rl("200m", "1Gi"), rl("100m", "64Mi"), rl("200m", "128Mi"))
	fit, err := fitToNode(fitInput{pod: pod, allocatable: rl("2", "4Gi"), othersClaimed: rl("500m", "3840Mi"),
		usage: map[string]resize.Usage{"app": {MemoryWorkingSetBytes: 40 << 20}}, rules: map[string]containerRules{"app": {}}})
	if err != nil || fit.patch == nil {
		t.Fatalf("fit %+v, %v: want a patch", fit, err)
	}
	got := applyPatch(t, pod, fit.patch)
	// Room 256Mi: the request goes to 256Mi, the limit keeps its 2x ratio.
	want := corev1.ResourceRequirements{Requests: rl("100m", "256Mi"), Limits: rl("200m", "512Mi")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec after the patch (-want +got):\n%s\n%s", diff, fit.summary)
	}
}

func idlePoint(at time.Time) Point {
	return Point{Signals: cgroup.Signals{Time: at, HasRate: true, IntervalSeconds: 1, CPUUsageMillicores: 5, CPULimitMillicores: 250,
		MemoryWorkingSetBytes: 8 << 20, MemoryLimited: true, MemoryHeadroomBytes: 120 << 20, MemoryHeadroomFraction: 0.94}, MemoryLimitBytes: 128 << 20}
}

func fillerPod(cpu string) *corev1.Pod {
	p := testPod("filler", nil, rl(cpu, "16Mi"), nil)
	p.UID = types.UID("filler-uid")
	return p
}

// TestDeciderFitsADeferredResize: under FitToNode a resize Deferred for
// longer than afterSeconds is lowered to the node's room and sent; under
// Wait it is left and reported.
func TestDeciderFitsADeferredResize(t *testing.T) {
	for _, action := range []v1alpha1.DeferredAction{v1alpha1.DeferredActionFitToNode, v1alpha1.DeferredActionWait} {
		t.Run(string(action), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				now := time.Now()
				pod := deferredPod("p", now, rl("700m", "128Mi"), rl("700m", "128Mi"), rl("250m", "128Mi"), rl("250m", "128Mi"))
				pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
				pol.Spec.Behavior = &v1alpha1.Behavior{Deferred: &v1alpha1.DeferredBehavior{Action: action, AfterSeconds: ptr[int32](30)}}
				_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod, fillerPod("1350m")}, pol)
				d.Observe(ctx, refOf(pod), idlePoint(now))
				d.PassDone(ctx)
				if action == v1alpha1.DeferredActionWait {
					d.Wait()
					if len(fk.patches) != 0 {
						t.Errorf("sent %d patches under Wait, want none", len(fk.patches))
					}
					d.Observe(ctx, refOf(pod), idlePoint(now.Add(time.Second)))
					v := d.View(pod.UID, "app")
					if v == nil || v.Deferred == nil || v.Deferred.Action != "Wait" || !v.Deferred.Since.Equal(now.Add(-time.Minute)) {
						t.Errorf("view %+v, want the deferral reported with action Wait", v)
					}
					return
				}
				waitSent(t, fk, "no resize sent for a resize deferred for a minute")
				v := waitResizes(t, d, pod, 1)
				r := v.Resizes[0]
				if r.Outcome != "Applied" || r.Deferred != "FitToNode" || r.Containers["app"].CPURequestMillicores != 650 {
					t.Errorf("resize %+v, want FitToNode applied at 650m", r)
				}
				stored, _ := corelisters.NewPodLister(fk.store).Pods("ns").Get("p")
				if got := stored.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU]; got.MilliValue() != 650 {
					t.Errorf("spec cpu limit %s, want 650m", got.String())
				}
				if !strings.Contains(r.Plan, "cpu 700m/700m -> 650m/650m") {
					t.Errorf("plan %q", r.Plan)
				}
			})
		})
	}
}

// TestDeciderHonoursUncontrolledResources: a throttled container whose
// policy's status lists cpu as uncontrolled (an HPA scales on it) is never
// resized in cpu, also when the status changes under a running recommender;
// once the HPA is gone cpu grows again.
func TestDeciderHonoursUncontrolledResources(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("50m", "64Mi"), rl("100m", "128Mi"))
		pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlace)
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, pol)
		now := time.Now()
		// Known to the decider before the HPA shows up.
		d.Observe(ctx, refOf(pod), idlePoint(now))
		d.PassDone(ctx)
		pol.Status.UncontrolledResources = []corev1.ResourceName{corev1.ResourceCPU}
		for i := 1; i <= 5; i++ {
			d.Observe(ctx, refOf(pod), throttled(now.Add(time.Duration(i)*time.Second), 100))
			d.PassDone(ctx)
		}
		d.Wait()
		if len(fk.patches) != 0 {
			t.Fatalf("sent %d patches while cpu is uncontrolled: %s", len(fk.patches), fk.patches[0])
		}
		v := d.View(pod.UID, "app")
		if v == nil || v.LastDecision == nil || v.LastDecision.CPU.Why != "NotControlled" {
			t.Errorf("last decision %+v, want cpu NotControlled", v.LastDecision)
		}
		pol.Status.UncontrolledResources = nil
		d.Observe(ctx, refOf(pod), throttled(now.Add(6*time.Second), 100))
		d.PassDone(ctx)
		waitSent(t, fk, "no cpu grow after the HPA went")
		d.Wait()
	})
}
