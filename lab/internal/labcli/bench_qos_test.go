package labcli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/lab/internal/experiment"
)

// TestBenchQoSFlags: bad flags fail with exit code 2 and a clear message,
// before any lab is touched.
func TestBenchQoSFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "qos", "--autoscaler", "keda"}, `--autoscaler "keda": want snug or vpa`},
		{[]string{"bench", "qos", "--autoscaler", "snug,Snug"}, `--autoscaler "Snug": want snug or vpa`},
		{[]string{"bench", "qos", "--autoscaler", "vpa,vpa"}, "--autoscaler names vpa twice"},
		{[]string{"bench", "qos", "--autoscaler", ""}, "--autoscaler: name at least one of snug, vpa"},
		{[]string{"bench", "qos", "--observe", "1s"}, "--observe 1s is out of range [10s, 1h]"},
		{[]string{"bench", "qos", "--kubernetes-version", "latest"}, "--kubernetes-version must look like 1.35.4"},
		{[]string{"bench", "qos", "--trace-dir", "/etc/hostname"}, "--trace-dir /etc/hostname is not a directory"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), tc.args, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), tc.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("printed %q before failing", stdout.String())
			}
		})
	}
}

func TestQoSVerdict(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    experiment.QoSSummary
		want string
	}{
		{"in place", experiment.QoSSummary{Pods: 2, ResizedInPlace: 2, QoSClasses: []string{"Guaranteed"}, CPUBefore: "100m/100m", CPUAfter: "400m/400m", SameUIDs: true},
			"resized in place keeping QoS Guaranteed: 2/2 pods, cpu 100m/100m -> 400m/400m, restarts 0, same pod UIDs"},
		{"evicted", experiment.QoSSummary{Pods: 2, Replaced: 2, NewPods: 2, Evictions: 2, QoSClasses: []string{"Burstable"}},
			"evicted: 2 of 2 pods replaced by new pods (2 eviction events), QoS now Burstable; no pod resized in place"},
		{"partly", experiment.QoSSummary{Pods: 2, ResizedInPlace: 1, QoSClasses: []string{"Guaranteed"}, CPUBefore: "100m/100m", CPUAfter: "400m/400m"},
			"resized in place: 1/2 pods, cpu 100m/100m -> 400m/400m, QoS now Guaranteed, restarts 0"},
		{"nothing", experiment.QoSSummary{Pods: 2, QoSClasses: []string{"Guaranteed"}, CPUBefore: "100m/100m", CPUAfter: "100m/100m", SameUIDs: true},
			"nothing: no resize and no eviction in 300s (cpu 100m/100m, QoS Guaranteed, restarts 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := qosVerdict(tc.s, 5*time.Minute); got != tc.want {
				t.Errorf("verdict\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestQoSPolicies(t *testing.T) {
	p := qosSnugPolicy()
	cp := p.Spec.ResourcePolicy.ContainerPolicies[0]
	if p.Spec.UpdatePolicy.UpdateMode != v1alpha1.UpdateModeInPlaceOrRecreate || cp.ControlledValues != v1alpha1.ContainerControlledValuesRequestsOnly ||
		p.Spec.TargetRef.Name != experiment.QoSDeployment {
		t.Errorf("SnugPolicy spec %+v", p.Spec)
	}
	v := qosVPA().Build().Object["spec"].(map[string]any)
	if v["updatePolicy"].(map[string]any)["updateMode"] != "InPlaceOrRecreate" {
		t.Errorf("VPA spec %v", v)
	}
	pol := v["resourcePolicy"].(map[string]any)["containerPolicies"].([]any)[0].(map[string]any)
	if pol["controlledValues"] != "RequestsOnly" {
		t.Errorf("VPA container policy %v", pol)
	}
}
