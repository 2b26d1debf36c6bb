package policy

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// TestBoostOf: both types, the request each gives, durationSeconds as
// the time after Ready and as the cap without probes, and the entries that
// give no boost.
func TestBoostOf(t *testing.T) {
	q := resource.MustParse("500m")
	for _, tc := range []struct {
		name       string
		sb         *v1alpha1.StartupBoost
		ok         bool
		from, want int64
		after, max time.Duration
	}{
		{"absent", nil, false, 0, 0, 0, 0},
		{"factor 3", &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: v1alpha1.CPUBoostFactor, Factor: ptr.To[int32](3)}}, true, 100, 300, 0, DefaultBoostMax},
		{"factor 1", &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: v1alpha1.CPUBoostFactor, Factor: ptr.To[int32](1)}}, false, 0, 0, 0, 0},
		{"quantity, 20 s", &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: v1alpha1.CPUBoostQuantity, Quantity: &q, DurationSeconds: ptr.To[int32](20)}}, true, 100, 600, 20 * time.Second, 20 * time.Second},
		{"quantity on no request", &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: v1alpha1.CPUBoostQuantity, Quantity: &q}}, true, 0, 500, 0, DefaultBoostMax},
		{"unknown type", &v1alpha1.StartupBoost{CPU: v1alpha1.CPUStartupBoost{Type: "Percent"}}, false, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, ok := BoostOf(v1alpha1.ContainerResourcePolicy{ContainerName: "app", StartupBoost: tc.sb})
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if got := b.RequestMillis(tc.from); got != tc.want {
				t.Errorf("request %dm boosted to %dm, want %dm", tc.from, got, tc.want)
			}
			if b.After != tc.after || b.Max != tc.max {
				t.Errorf("after %v max %v, want %v and %v", b.After, b.Max, tc.after, tc.max)
			}
		})
	}
}
