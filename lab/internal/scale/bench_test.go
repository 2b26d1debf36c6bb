package scale

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/admission"
	"github.com/snug-dev/snug/internal/history"
)

// TestSettled: a bench pod with a day of the flat load's history starts at
// the size the webhook gives it, which the webhook then leaves alone (the
// size snug keeps), with its QoS class and limit ratio, and a snapshot
// that does not decode is an error.
func TestSettled(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	snap, err := AgedSnapshot(Steady{CPUMillis: 50, MemBytes: 48 << 20}, 24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	pol := &v1alpha1.SnugPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "group-0", Namespace: "snug-scale-50"},
		Spec: v1alpha1.SnugPolicySpec{
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"snug-scale-group": "0"}},
			UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
		},
	}
	pod := benchPod(0, "n", 30)
	pod.Annotations = map[string]string{history.SnapshotAnnotation: snap}
	got, err := Settled(pod, pol, snap)
	if err != nil {
		t.Fatal(err)
	}
	r := got.Spec.Containers[0].Resources
	cpu, cpuLimit := r.Requests[corev1.ResourceCPU], r.Limits[corev1.ResourceCPU]
	if cpu.MilliValue() >= 100 || cpu.MilliValue() < 50 {
		t.Errorf("cpu request %s; want between the 50m load and the template's 100m", cpu.String())
	}
	if cpuLimit.MilliValue() != 2*cpu.MilliValue() {
		t.Errorf("cpu %s/%s; want the template's 1:2 ratio kept", cpu.String(), cpuLimit.String())
	}
	if got.Annotations[history.SnapshotAnnotation] != snap {
		t.Errorf("the snapshot annotation was lost: %v", got.Annotations)
	}
	if pod.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 100 {
		t.Errorf("the template was modified")
	}
	s, _, err := history.ParseSnapshot(got)
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]string{}
	for c, text := range s.Containers {
		data[history.AggregateKey(c)] = text
	}
	again := got.DeepCopy()
	again.Namespace = pol.Namespace
	if d := admission.Size(again, []*v1alpha1.SnugPolicy{pol}, func(string, string) map[string]string { return data }, now); d.Outcome != admission.Unchanged {
		t.Errorf("the settled pod sized again: %s (%s); want %s", d.Outcome, d.Summary, admission.Unchanged)
	}
	if _, err := Settled(pod, pol, "{"); err == nil {
		t.Error("a snapshot that does not decode: no error")
	}
}
