package agent

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/resize"
)

// TestDeciderGrowsAGuaranteedRequestsOnlyContainer is the field report's
// wall 4 in the decision step: a Guaranteed container under RequestsOnly,
// throttled at its limit, is grown with its limit and stays Guaranteed.
func TestDeciderGrowsAGuaranteedRequestsOnlyContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		pod := testPod("p", map[string]string{"app": "load"}, rl("100m", "64Mi"), rl("100m", "64Mi"))
		pol := selectorPolicy("pol", v1alpha1.UpdateModeInPlaceOrRecreate)
		pol.Spec.ResourcePolicy = &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
			ContainerName: "*", ControlledValues: v1alpha1.ContainerControlledValuesRequestsOnly,
		}}}
		_, d, fk := newTestDecider(t, false, []*corev1.Pod{pod}, pol)
		d.Observe(ctx, refOf(pod), throttled(time.Now(), 100))
		d.PassDone(ctx)
		waitSent(t, fk, "no resize sent for a throttled Guaranteed container under RequestsOnly")
		stored, err := corelisters.NewPodLister(fk.store).Pods("ns").Get("p")
		if err != nil {
			t.Fatal(err)
		}
		r := stored.Spec.Containers[0].Resources
		if r.Requests.Cpu().MilliValue() <= 100 || !r.Requests.Cpu().Equal(*r.Limits.Cpu()) || !r.Requests.Memory().Equal(*r.Limits.Memory()) {
			t.Errorf("resources after the resize %v / %v: want cpu above 100m with request == limit", r.Requests, r.Limits)
		}
		if q := resize.ComputeQoS(stored); q != corev1.PodQOSGuaranteed {
			t.Errorf("QoS after the resize %s, want Guaranteed", q)
		}
	})
}
