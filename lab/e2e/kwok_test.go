//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/internal/actuate"
	"github.com/snug-dev/snug/internal/resize"
	"github.com/snug-dev/snug/lab/internal/lab/kwok"
)

// TestKwokStages checks the scale bench's kwok stages
// (lab/internal/lab/kwok/stages.yaml) against the lab's real kubelet: the
// fields snug reads of a started pod, and the same resize sent through
// internal/actuate to a pod on the kubelet and to a pod on a kwok node,
// classified Applied for both with the same status; then a resize that
// does not fit beside a filler on the kubelet and one on a kwok pod drawn
// to defer, both Deferred with the same condition (PodResizePending,
// reason Deferred, at the pod's generation). kwok's message names no
// figures: snug believes a Deferred message without them.
func TestKwokStages(t *testing.T) {
	ctx := t.Context()
	if err := kwok.Up(ctx, labOpts, testLog{t}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kwok.Down(labOpts); err != nil {
			t.Errorf("stopping kwok: %v", err)
		}
	})
	node, err := client.CoreV1().Nodes().Create(ctx, kwok.Node("snug-kwok-stages", "4", "8Gi", 110), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
	})
	waitFor(t, "the kwok node Ready", time.Minute, func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	ns := testNamespace(t, "snug-kwok-")
	shape := func(name string) *corev1.Pod {
		return podShape{name: name, cpuReq: "250m", cpuLim: "500m", memReq: "64Mi", memLim: "128Mi"}.pod()
	}
	onKwok := func(name, outcome string) *corev1.Pod {
		p := shape(name)
		p.Spec.NodeName = node.Name
		p.Spec.Tolerations = []corev1.Toleration{kwok.Toleration}
		p.Annotations = map[string]string{kwok.ResizeAnnotation: outcome}
		return p
	}

	// Started: what snug reads of a running pod.
	real := createRunning(t, ns, shape("real"))
	fake := createRunning(t, ns, onKwok("fake", "admit"))
	for _, p := range []*corev1.Pod{real, fake} {
		cs := p.Status.ContainerStatuses[0]
		t.Logf("%s started: containerID %q, resources %s, allocated %s, observedGeneration %d/%d, qos %s",
			p.Name, cs.ContainerID, actual(p), cs.AllocatedResources.Cpu(), p.Status.ObservedGeneration, p.Generation, p.Status.QOSClass)
		if cs.ContainerID == "" {
			t.Errorf("%s: no containerID", p.Name)
		}
		check(t, p.Name+" actual", actual(p), "cpu 250m/500m mem 64Mi/128Mi")
		check(t, p.Name+" allocated cpu", cs.AllocatedResources.Cpu().String(), "250m")
		check(t, p.Name+" observedGeneration", p.Status.ObservedGeneration, p.Generation)
		check(t, p.Name+" qos", p.Status.QOSClass, corev1.PodQOSBurstable)
	}

	// Applied, through snug's actuator and classifier.
	act := &actuate.Actuator{Client: core}
	for _, name := range []string{"real", "fake"} {
		target, p := plan(t, act, ns, name, cpuTarget("app", "400m"), nil, resize.Options{})
		r, err := act.Apply(ctx, target.Pod, p, actuate.ApplyOptions{Wait: true, WaitOptions: actuate.WaitOptions{Timeout: waitLimit}})
		if err != nil {
			t.Fatal(err)
		}
		logResult(t, r)
		check(t, name+" outcome", r.Outcome, resize.Applied)
		check(t, name+" actual", actual(r.Pod), "cpu 400m/800m mem 64Mi/128Mi")
		check(t, name+" allocated cpu", r.Pod.Status.ContainerStatuses[0].AllocatedResources.Cpu().String(), "400m")
		if r.Pod.Status.ObservedGeneration < r.Generation {
			t.Errorf("%s: observedGeneration %d behind generation %d", name, r.Pod.Status.ObservedGeneration, r.Generation)
		}
		if s := resize.State(r.Pod, time.Now()); s.Pending != nil || s.InProgress != nil {
			t.Errorf("%s: resize conditions left once applied: %s", name, s)
		}
	}

	// Deferred. The real pod goes first, so that the filler fits.
	if err := client.CoreV1().Pods(ns).Delete(ctx, "real", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod real gone", time.Minute, func() (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, "real", metav1.GetOptions{})
		return err != nil, nil
	})
	createRunning(t, ns, podShape{name: "filler", cpuReq: "1400m", memReq: "16Mi"}.pod())
	createRunning(t, ns, podShape{name: "real-deferred", cpuReq: "250m", cpuLim: "250m", memReq: "64Mi", memLim: "64Mi"}.pod())
	createRunning(t, ns, onKwok("fake-deferred", "defer"))
	var conds []corev1.PodCondition
	for _, name := range []string{"real-deferred", "fake-deferred"} {
		target, p := plan(t, act, ns, name, cpuTarget("app", "700m"), nil, resize.Options{NoRoom: resize.NoRoomSend})
		r, err := act.Apply(ctx, target.Pod, p, actuate.ApplyOptions{Wait: true, WaitOptions: actuate.WaitOptions{Timeout: waitLimit}})
		if err != nil {
			t.Fatal(err)
		}
		logResult(t, r)
		check(t, name+" outcome", r.Outcome, resize.Deferred)
		var pending *corev1.PodCondition
		for i := range r.Pod.Status.Conditions {
			if c := &r.Pod.Status.Conditions[i]; c.Type == corev1.PodResizePending {
				pending = c
			}
		}
		if pending == nil {
			t.Fatalf("%s: Deferred without a PodResizePending condition", name)
		}
		t.Logf("%s: %s %s %s at generation %d: %s", name, pending.Type, pending.Status, pending.Reason, pending.ObservedGeneration, pending.Message)
		check(t, name+" condition generation", pending.ObservedGeneration, r.Generation)
		conds = append(conds, corev1.PodCondition{Type: pending.Type, Status: pending.Status, Reason: pending.Reason})
		check(t, name+" actual while deferred", actual(r.Pod), "cpu "+map[bool]string{true: "250m/250m mem 64Mi/64Mi", false: "250m/500m mem 64Mi/128Mi"}[name == "real-deferred"])
	}
	check(t, "deferred condition, kubelet vs kwok", conds[1], conds[0])
}
