//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/snug-dev/snug/lab/internal/experiment"
)

// The field report's experiments (lab/docs/experiments.md), one test each. The
// experiments record; these tests hold them to what the report saw, per
// Kubernetes version where the versions differ. Values are exact: they
// assume the lab's node (2000m allocatable cpu, nothing else running).

// experimentTimeout bounds each wait inside an experiment.
const experimentTimeout = 3 * time.Minute

func newEnv(t *testing.T) experiment.Env {
	t.Helper()
	return experiment.Env{
		Client:     client,
		Kubectl:    filepath.Join(labOpts.BinDir(), "kubectl"),
		Kubeconfig: labOpts.Kubeconfig(),
		CgroupRoot: "/sys/fs/cgroup",
		Timeout:    experimentTimeout,
		OnStep:     func(s experiment.Step) { t.Log(s.String()) },
	}
}

// check is a failed expectation unless got equals want.
func check[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func checkContains(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Errorf("%s = %q, want it to contain %q", what, got, want)
	}
}

func checkMatch(t *testing.T, what, got, pattern string) {
	t.Helper()
	if !regexp.MustCompile(pattern).MatchString(got) {
		t.Errorf("%s = %q, want it to match %s", what, got, pattern)
	}
}

// checkEvents logs the pod's events and expects each reason among them.
func checkEvents(t *testing.T, events []experiment.Event, reasons ...string) {
	t.Helper()
	for _, e := range events {
		t.Logf("event %s %s (x%d): %s", e.Type, e.Reason, e.Count, e.Message)
	}
	got := experiment.EventReasons(events)
	for _, r := range reasons {
		found := false
		for _, g := range got {
			found = found || g == r
		}
		if !found {
			t.Errorf("events %v, want one with reason %s", got, r)
		}
	}
}

// finish fails the test on an experiment error and logs how long it took.
func finish(t *testing.T, run experiment.Run, err error) {
	t.Helper()
	if err != nil {
		skipIfV2Hung(t, "experiment %q: %v", run.Name, err)
		t.Fatalf("experiment %q on %s: %v", run.Name, run.ServerVersion, err)
	}
	t.Logf("%s on %s: namespace %s, %.1fs in all", run.Name, run.ServerVersion, run.Namespace, run.Finished.Sub(run.Started).Seconds())
}

func cond(t *testing.T, st experiment.PodState, typ corev1.PodConditionType) experiment.Condition {
	t.Helper()
	c, ok := st.Condition(typ)
	if !ok {
		t.Errorf("pod conditions %s, want %s", st.ConditionsString(), typ)
	}
	return c
}

// Experiment 1: CPU 250m -> 500m with resizePolicy NotRequired, no restart.
func TestFieldReportCPUResize(t *testing.T) { fieldReportCPUResize(t, newEnv(t)) }

// fieldReportCPUResize runs experiment 1 on env's node and checks it.
func fieldReportCPUResize(t *testing.T, env experiment.Env) {
	res, err := experiment.CPUResize(context.Background(), env)
	finish(t, res.Run, err)

	check(t, "restart count", res.After.RestartCount, int32(0))
	check(t, "container ID", res.After.ContainerID, res.Before.ContainerID)
	check(t, "pod UID", res.After.UID, res.Before.UID)
	check(t, "QoS class", res.After.QOSClass, corev1.PodQOSGuaranteed)
	checkMatch(t, "marker before", res.MarkerBefore, `^started [0-9a-f-]{36}$`)
	check(t, "marker after the resize", res.MarkerAfter, res.MarkerBefore)
	check(t, "actual (status) resources", res.After.Actual.String(), "cpu 500m/500m mem 128Mi/128Mi")
	check(t, "allocated resources", res.After.Allocated.String(), "cpu 500m/- mem 128Mi/-")
	check(t, "resize conditions", res.After.ConditionsString(), "-")
	if res.CgroupsBefore == nil || res.CgroupsAfter == nil {
		t.Fatal("no cgroup readings")
	}
	c := res.CgroupsAfter.Container
	check(t, "container "+c.CPUQuotaFile()+" before", res.CgroupsBefore.Container.CPUQuotaMicros, int64(25000))
	check(t, "container "+c.CPUQuotaFile()+" after", c.CPUQuotaMicros, int64(50000))
	check(t, "pod "+c.CPUQuotaFile()+" before", res.CgroupsBefore.PodLevel.CPUQuotaMicros, int64(25000))
	check(t, "pod "+c.CPUQuotaFile()+" after", res.CgroupsAfter.PodLevel.CPUQuotaMicros, int64(50000))
	check(t, "cpu period", c.CPUPeriodMicros, int64(100000))
	checkEvents(t, res.Events, "ResizeStarted", "ResizeCompleted")

	t.Logf("patch->status %.2fs (API server answered in %s); %s %d -> %d; restarts 0; container ID and marker unchanged",
		res.PatchToStatus().Seconds(), res.Patch.Latency().Round(time.Millisecond), c.CPUQuotaFile(),
		res.CgroupsBefore.Container.CPUQuotaMicros, c.CPUQuotaMicros)
}

// Experiment 2: memory 128Mi -> 256Mi with resizePolicy RestartContainer.
func TestFieldReportMemoryRestart(t *testing.T) { fieldReportMemoryRestart(t, newEnv(t)) }

func fieldReportMemoryRestart(t *testing.T, env experiment.Env) {
	res, err := experiment.MemoryRestart(context.Background(), env)
	finish(t, res.Run, err)

	check(t, "restart count", res.After.RestartCount, res.Before.RestartCount+1)
	if res.After.ContainerID == res.Before.ContainerID {
		t.Errorf("container ID %s did not change", res.After.ContainerID)
	}
	check(t, "pod UID", res.After.UID, res.Before.UID)
	if res.MarkerAfter == res.MarkerBefore {
		t.Errorf("marker %q survived the restart; the container's filesystem should be new", res.MarkerAfter)
	}
	checkMatch(t, "marker after", res.MarkerAfter, `^started [0-9a-f-]{36}$`)
	check(t, "actual (status) resources", res.After.Actual.String(), "cpu 250m/250m mem 256Mi/256Mi")
	if res.CgroupsAfter == nil {
		t.Fatal("no cgroup reading")
	}
	check(t, "container "+res.CgroupsAfter.Container.MemoryLimitFile(), res.CgroupsAfter.Container.MemoryLimitBytes, int64(256<<20))
	checkEvents(t, res.Events, "ResizeStarted", "Killing", "ResizeCompleted")

	t.Logf("patch->restarted container running %.2fs; restarts %d -> %d; container ID changed; pod UID kept",
		res.PatchToRunning().Seconds(), res.Before.RestartCount, res.After.RestartCount)
}

// Experiment 3: a resize that does not fit beside a filler is Deferred and
// completes by itself once the filler is deleted.
func TestFieldReportDeferred(t *testing.T) { fieldReportDeferred(t, newEnv(t), "2") }

// fieldReportDeferred runs experiment 3 on env's node, whose allocatable
// cpu is allocatable ("2": the report's sizes; else the same shares).
func fieldReportDeferred(t *testing.T, env experiment.Env, allocatable string) {
	res, err := experiment.Deferred(context.Background(), env)
	finish(t, res.Run, err)

	check(t, "node allocatable cpu", res.NodeAllocatableCPU, allocatable)
	milli := func(s string) int64 { q := resource.MustParse(s); return q.MilliValue() }
	c := cond(t, res.Deferred, corev1.PodResizePending)
	check(t, "PodResizePending reason", c.Reason, "Deferred")
	check(t, "PodResizePending message", c.Message, fmt.Sprintf("Node didn't have enough resource: cpu, requested: %d, used: %d, capacity: %d",
		milli(res.ToCPU), milli(res.FillerCPU), milli(allocatable)))
	check(t, "desired while deferred", res.Held.Desired.CPU(), res.ToCPU+"/"+res.ToCPU)
	check(t, "actual while deferred", res.Held.Actual.CPU(), res.FromCPU+"/"+res.FromCPU)
	check(t, "actual once completed", res.Completed.Actual.String(), "cpu "+res.ToCPU+"/"+res.ToCPU+" mem 128Mi/128Mi")
	check(t, "resize conditions once completed", res.Completed.ConditionsString(), "-")
	check(t, "restart count", res.Completed.RestartCount, int32(0))
	check(t, "container ID", res.Completed.ContainerID, res.Before.ContainerID)
	if res.CgroupsBefore == nil || res.CgroupsAfter == nil {
		t.Fatal("no cgroup readings")
	}
	check(t, "cpu quota before", res.CgroupsBefore.Container.CPUQuotaMicros, milli(res.FromCPU)*100)
	check(t, "cpu quota after", res.CgroupsAfter.Container.CPUQuotaMicros, milli(res.ToCPU)*100)
	checkEvents(t, res.Events, "ResizeDeferred", "ResizeCompleted")

	t.Logf("patch->Deferred %.2fs; filler deleted->resize completed %.2fs (filler object gone after %.2fs); cpu quota %d -> %d",
		res.PatchToDeferred().Seconds(), res.DeleteToCompleted().Seconds(),
		res.FillerGone.Sub(res.FillerDeleted).Seconds(), res.CgroupsBefore.Container.CPUQuotaMicros, res.CgroupsAfter.Container.CPUQuotaMicros)
}

// Experiment 4: a resize above node allocatable. The kubelet says
// Infeasible up to 1.35; since 1.36 the API server's PodResizeValidator
// refuses the patch.
func TestFieldReportInfeasible(t *testing.T) {
	res, err := experiment.Infeasible(context.Background(), newEnv(t))
	finish(t, res.Run, err)

	check(t, "node allocatable cpu", res.NodeAllocatableCPU, "2")
	if res.ServerMinor >= 36 {
		check(t, "outcome", res.Outcome(), "Rejected")
		if res.Patch.Rejected == nil {
			t.Fatalf("patch to %s accepted; want 403 from PodResizeValidator", res.ToCPU)
		}
		check(t, "status code", res.Patch.Rejected.Code, int32(403))
		check(t, "status reason", string(res.Patch.Rejected.Reason), "Forbidden")
		checkContains(t, "message", res.Patch.Rejected.Message,
			"node didn't have enough allocatable resources: cpu, requested: 2500, allocatable: 2000")
		check(t, "status causes", strings.Join(res.Patch.Rejected.Causes, ","), "NodeCapacity")
		check(t, "desired after the refusal", res.After.Desired.CPU(), "250m/250m")
		check(t, "resize conditions", res.After.ConditionsString(), "-")
		t.Logf("rejected by the API server in %s: %s", res.Patch.Latency().Round(time.Millisecond), res.Patch.Rejected)
		return
	}
	check(t, "outcome", res.Outcome(), "Infeasible")
	if res.Pending == nil || res.Cleared == nil {
		t.Fatalf("no pending or cleared state recorded")
	}
	c := cond(t, *res.Pending, corev1.PodResizePending)
	check(t, "PodResizePending message", c.Message, "Node didn't have enough capacity: cpu, requested: 2500, capacity: 2000")
	check(t, "desired while infeasible", res.Pending.Desired.CPU(), "2500m/2500m")
	check(t, "actual while infeasible", res.Pending.Actual.CPU(), "250m/250m")
	check(t, "desired after the revert", res.Cleared.Desired.CPU(), "250m/250m")
	check(t, "actual after the revert", res.Cleared.Actual.CPU(), "250m/250m")
	check(t, "resize conditions after the revert", res.Cleared.ConditionsString(), "-")
	check(t, "restart count", res.After.RestartCount, int32(0))
	checkEvents(t, res.Events, "ResizeInfeasible")
	t.Logf("patch->Infeasible %.2fs; revert->cleared %.2fs",
		res.Pending.At.Sub(res.Patch.Sent).Seconds(), res.Cleared.At.Sub(res.Revert.Sent).Seconds())
}

// Experiment 5: lowering only requests.cpu of a Guaranteed pod would make
// it Burstable; the API server refuses.
func TestFieldReportQoSChange(t *testing.T) {
	res, err := experiment.QoSChange(context.Background(), newEnv(t))
	finish(t, res.Run, err)

	if res.Patch.Rejected == nil {
		t.Fatalf("patch accepted; want it rejected (pod now %s)", res.After)
	}
	check(t, "status code", res.Patch.Rejected.Code, int32(422))
	check(t, "status reason", string(res.Patch.Rejected.Reason), "Invalid")
	checkContains(t, "message", res.Patch.Rejected.Message, `spec: Invalid value: "Guaranteed": Pod QOS Class may not change as a result of resizing`)
	check(t, "desired after the refusal", res.After.Desired.String(), res.Before.Desired.String())
	check(t, "QoS class", res.After.QOSClass, corev1.PodQOSGuaranteed)
	t.Logf("rejected in %s: %s", res.Patch.Latency().Round(time.Millisecond), res.Patch.Rejected.Message)
}

// Experiment 6: lowering a memory limit below what the container uses is
// not applied (best effort: the kubelet checks usage first); above usage
// it applies. No OOM kill either way.
func TestFieldReportMemoryDecrease(t *testing.T) { fieldReportMemoryDecrease(t, newEnv(t)) }

func fieldReportMemoryDecrease(t *testing.T, env experiment.Env) {
	res, err := experiment.MemoryDecrease(context.Background(), env)
	finish(t, res.Run, err)

	if res.UsageBytes < 100<<20 || res.KubeletUsage.ContainerBytes < 100<<20 {
		t.Fatalf("container used %d bytes (kubelet: %d) before the decrease, want >= 100Mi", res.UsageBytes, res.KubeletUsage.ContainerBytes)
	}
	below := res.BelowSeen
	c := cond(t, below, corev1.PodResizeInProgress)
	check(t, "PodResizeInProgress reason", c.Reason, "Error")
	// The experiment waits until the kubelet's own statistics show the
	// memory held, so both of its checks (pod and container) refuse. The
	// container part prints the pod's usage (kuberuntime_manager.go).
	checkMatch(t, "PodResizeInProgress message", c.Message, `^cannot decrease memory limits: \[`+
		`attempting to set pod memory limit \(67108864\) below current usage \(\d+\), `+
		`attempting to set container "app" memory limit \(67108864\) below current usage \(\d+\)\]$`)
	if _, pending := below.Condition(corev1.PodResizePending); pending {
		t.Errorf("PodResizePending set; want only PodResizeInProgress")
	}
	check(t, "desired", below.Desired.Memory(), "64Mi/64Mi")
	check(t, "allocated", below.Allocated.Memory(), "64Mi/-")
	check(t, "actual", below.Actual.Memory(), "256Mi/256Mi")
	check(t, "restart count", below.RestartCount, int32(0))
	if res.BelowCgroups == nil || res.AboveCgroups == nil {
		t.Fatal("no cgroup readings")
	}
	bc := res.BelowCgroups.Container
	check(t, bc.MemoryLimitFile()+" after the refused decrease", bc.MemoryLimitBytes, int64(256<<20))
	check(t, "OOM kills", bc.OOMKills, uint64(0))

	above := res.AboveSettled
	check(t, "actual after the raise to 200Mi", above.Actual.Memory(), "200Mi/200Mi")
	check(t, "resize conditions after 200Mi", above.ConditionsString(), "-")
	check(t, "restart count after 200Mi", above.RestartCount, int32(0))
	check(t, "last termination", above.LastTermination, "")
	ac := res.AboveCgroups.Container
	check(t, ac.MemoryLimitFile()+" after 200Mi", ac.MemoryLimitBytes, int64(200<<20))
	check(t, "OOM kills after 200Mi", ac.OOMKills, uint64(0))
	checkEvents(t, res.Events, "ResizeError", "ResizeCompleted")

	t.Logf("usage %.1fMi; 64Mi: PodResizeInProgress/Error after %.2fs (%s); 200Mi: applied %.2fs after its patch",
		float64(res.UsageBytes)/(1<<20), below.At.Sub(res.Below.Sent).Seconds(), c.Message,
		above.At.Sub(res.Above.Sent).Seconds())
}

// Experiment 7: a JSON merge patch (kubectl --type=merge) replaces the
// whole containers list and fails; the same body as a strategic merge
// patch (kubectl's default) merges by container name and works.
func TestFieldReportMergePatch(t *testing.T) {
	res, err := experiment.MergePatch(context.Background(), newEnv(t))
	finish(t, res.Run, err)

	if res.Merge.Rejected == nil {
		t.Fatalf("merge patch accepted (pod now %s); want it rejected", res.MergeAfter)
	}
	check(t, "status code", res.Merge.Rejected.Code, int32(422))
	check(t, "status reason", string(res.Merge.Rejected.Reason), "Invalid")
	for _, want := range []string{
		`spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed`,
		`spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed`,
		`spec: Forbidden: only cpu and memory resources are mutable`,
	} {
		checkContains(t, "merge patch error", res.Merge.Rejected.Message, want)
	}
	check(t, "desired after the merge patch", res.MergeAfter.Desired.String(), "cpu 250m/250m mem 128Mi/128Mi")
	if res.Strategic.Rejected != nil {
		t.Fatalf("strategic merge patch rejected: %v", res.Strategic.Rejected)
	}
	if res.StrategicSettled == nil {
		t.Fatal("strategic merge patch never settled")
	}
	check(t, "actual after the strategic merge patch", res.StrategicSettled.Actual.String(), "cpu 500m/500m mem 128Mi/128Mi")
	t.Logf("merge patch rejected: %s", res.Merge.Rejected.Message)
}
