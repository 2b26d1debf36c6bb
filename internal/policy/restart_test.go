package policy

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// TestRestartWindowDefaultsMatchCRD: a restartWindow given as {} reads as
// the CRD's defaults, and unset fields read the same in code.
func TestRestartWindowDefaultsMatchCRD(t *testing.T) {
	p := defaulted(t, map[string]any{
		"selector":     map[string]any{"matchLabels": map[string]any{"app": "web"}},
		"updatePolicy": map[string]any{"restartWindow": map[string]any{}},
	})
	rw := p.Spec.UpdatePolicy.RestartWindow
	if rw == nil || rw.MinIntervalSeconds == nil || rw.MinShrinkPercent == nil {
		t.Fatalf("restartWindow defaulted to %+v, want both numbers set", rw)
	}
	if *rw.MinIntervalSeconds != DefaultRestartMinIntervalSeconds || *rw.MinShrinkPercent != DefaultRestartMinShrinkPercent {
		t.Errorf("CRD defaults minIntervalSeconds %d, minShrinkPercent %d; code %d, %d",
			*rw.MinIntervalSeconds, *rw.MinShrinkPercent, DefaultRestartMinIntervalSeconds, DefaultRestartMinShrinkPercent)
	}
	bare := &v1alpha1.SnugPolicy{Spec: v1alpha1.SnugPolicySpec{
		Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{RestartWindow: &v1alpha1.RestartWindow{}},
	}}
	got, ok := RestartWindowOf(bare)
	want, _ := RestartWindowOf(p)
	if !ok || got != want || want.MinInterval != time.Hour || want.MinShrinkPercent != 20 {
		t.Errorf("unset reads %+v (%v), defaulted %+v; want 1h and 20%%", got, ok, want)
	}
}

// TestRestartWindowOf: no window without the field, nor under a mode that
// resizes no pod in place.
func TestRestartWindowOf(t *testing.T) {
	for _, tc := range []struct {
		mode   v1alpha1.UpdateMode
		window bool
		want   bool
	}{
		{v1alpha1.UpdateModeInPlace, true, true},
		{v1alpha1.UpdateModeInPlaceOrRecreate, true, true},
		{v1alpha1.UpdateModeOff, true, false},
		{v1alpha1.UpdateModeInitial, true, false},
		{v1alpha1.UpdateModeInPlace, false, false},
	} {
		p := &v1alpha1.SnugPolicy{Spec: v1alpha1.SnugPolicySpec{UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: tc.mode}}}
		if tc.window {
			p.Spec.UpdatePolicy.RestartWindow = &v1alpha1.RestartWindow{SingleReplica: true}
		}
		w, ok := RestartWindowOf(p)
		if ok != tc.want || (ok && !w.SingleReplica) {
			t.Errorf("mode %s, window %v: got %+v, %v; want a window: %v", tc.mode, tc.window, w, ok, tc.want)
		}
	}
}

// TestRestartWorth: any grow is worth a restart; a shrink when it takes at
// least minShrinkPercent off.
func TestRestartWorth(t *testing.T) {
	w := RestartWindow{MinShrinkPercent: 20}
	for _, tc := range []struct {
		cur, next int64
		want      bool
	}{
		{100, 101, true},
		{100, 100, false},
		{100, 81, false},
		{100, 80, true},
		{100, 10, true},
		{0, 10, true},
		{0, 0, false},
	} {
		if got := w.Worth(tc.cur, tc.next); got != tc.want {
			t.Errorf("Worth(%d, %d) = %v, want %v", tc.cur, tc.next, got, tc.want)
		}
	}
}
