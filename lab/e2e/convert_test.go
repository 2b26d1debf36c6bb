//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/controller"
	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab/vpa"
)

// fieldReportVPA is the field report's VerticalPodAutoscaler
// (/work/shared/seed, "VPA 連携用 Deployment + VPA"), in the test's
// namespace instead of resize-test.
const fieldReportVPA = `
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: resize-demo
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: resize-demo
  updatePolicy:
    updateMode: InPlaceOrRecreate
    minReplicas: 1
  resourcePolicy:
    containerPolicies:
      - containerName: '*'
        controlledResources: ["cpu", "memory"]
        controlledValues: RequestsAndLimits
        minAllowed:
          cpu: 25m
          memory: 128Mi
        maxAllowed:
          cpu: "1"
          memory: 512Mi
`

// everythingVPA sets every VPA 1.8.1 field that does not map to a
// SnugPolicy as it is.
const everythingVPA = `
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: everything
  labels: {source: goldilocks}
spec:
  targetRef: {apiVersion: apps/v1, kind: StatefulSet, name: db}
  recommenders: [{name: custom}]
  startupBoost: {cpu: {type: Factor, factor: 2, durationSeconds: 30}}
  updatePolicy:
    updateMode: Recreate
    evictAfterOOMSeconds: 60
    evictionRequirements: [{resources: [cpu], changeRequirement: TargetHigherThanRequests}]
  resourcePolicy:
    containerPolicies:
      - containerName: db
        controlledResources: [cpu, memory]
        controlledValues: RequestsOnly
        oomBumpUpRatio: "1.5"
        memoryAggregationIntervalSeconds: 3600
        maxAllowed: {memory: 2Gi, ephemeral-storage: 1Gi}
      - containerName: exporter
        mode: "Off"
`

// offVPA is a recommendation-only VPA, as Goldilocks creates.
const offVPA = `
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: goldilocks-web
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  updatePolicy: {updateMode: "Off"}
`

// rolloutVPA targets a kind snug does not size.
const rolloutVPA = `
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: rollout
spec:
  targetRef: {apiVersion: argoproj.io/v1alpha1, kind: Rollout, name: web}
`

// TestConvertVPA runs snug convert vpa on real VPA objects (the upstream
// VPA 1.8.1 CRD, nothing acting on them) and checks that the API server
// accepts its policies, then installs snug and checks the VPAConflict
// rule: a SnugPolicy overlapping a VPA that is not Off yields (condition,
// event, no resize while the agent samples a throttled pod), and acts
// again once the VPA is Off; deleting the VPA clears the condition too.
func TestConvertVPA(t *testing.T) {
	pc := installPolicyCRD(t)
	start := time.Now()
	if err := vpa.InstallCRDs(t.Context(), vpa.NewOptions(labOpts), testLog{t}); err != nil {
		t.Fatalf("installing VPA's CRDs: %v", err)
	}
	t.Logf("VPA CRDs installed in %.1fs", time.Since(start).Seconds())
	dyn := dynamicClient(t)
	ns := createNamespace(t, "snug-convert-")
	odd := createNamespace(t, "snug-convert-odd-")
	for _, m := range []string{fieldReportVPA, everythingVPA, offVPA} {
		createVPAFromYAML(t, dyn, ns, m)
	}
	createVPAFromYAML(t, dyn, odd, rolloutVPA)

	t.Run("print", func(t *testing.T) { testConvertPrint(t, dyn, ns, odd) })
	t.Run("apply", func(t *testing.T) { testConvertApply(t, pc, ns, odd) })
	t.Run("conflict", func(t *testing.T) { testConvertConflict(t, pc, dyn, ns) })
}

func createVPAFromYAML(t *testing.T, dyn dynamic.Interface, ns, manifest string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(vpa.VPAResource).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating VPA %s: %v", u.GetName(), err)
	}
}

// testConvertPrint: -A -o yaml prints the three convertible VPAs'
// policies, which a server dry run accepts, lists every unmapped field,
// and fails for the Rollout one.
func testConvertPrint(t *testing.T, dyn dynamic.Interface, ns, odd string) {
	out, errOut, code := runSnug(t, "convert", "vpa", "-A", "-o", "yaml")
	check(t, "exit code", code, 1)
	checkContains(t, "stderr", errOut, odd+"/rollout: not converted: spec.targetRef: cannot be converted: kind Rollout")
	for _, f := range []string{
		"spec.recommenders[0]", "spec.startupBoost", "spec.updatePolicy.updateMode: Recreate",
		"spec.updatePolicy.evictAfterOOMSeconds", "spec.updatePolicy.evictionRequirements",
		"spec.resourcePolicy.containerPolicies[0].controlledValues: RequestsOnly",
		"spec.resourcePolicy.containerPolicies[0].oomBumpUpRatio/oomMinBumpUp",
		"spec.resourcePolicy.containerPolicies[0].memoryAggregationInterval*",
		"spec.resourcePolicy.containerPolicies[0].maxAllowed.ephemeral-storage",
	} {
		checkContains(t, "stderr", errOut, ns+"/everything: "+f)
	}
	checkContains(t, "stderr", errOut, ns+"/resize-demo: spec.updatePolicy.updateMode: InPlaceOrRecreate")
	if strings.Contains(errOut, ns+"/goldilocks-web:") {
		t.Errorf("notes on the Off VPA, which maps as it is:\n%s", errOut)
	}

	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var names []string
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decoding the output: %v", err)
		}
		if u.GetNamespace() != ns {
			continue // other tests' VPAs
		}
		names = append(names, u.GetName())
		// Accepted by the API server: the CRD's schema and CEL rules.
		b, _ := u.MarshalJSON()
		if _, err := dyn.Resource(v1alpha1.SnugPolicyResource).Namespace(ns).Patch(t.Context(), u.GetName(), types.ApplyPatchType, b,
			metav1.PatchOptions{FieldManager: "e2e", DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("server dry run of policy %s: %v", u.GetName(), err)
		}
	}
	if diff := cmp.Diff([]string{"everything", "goldilocks-web", "resize-demo"}, names); diff != "" {
		t.Errorf("printed policies (-want +got):\n%s", diff)
	}
}

// testConvertApply: --apply changes nothing when a VPA cannot be
// converted, and applies (twice, idempotent) the namespace's policies.
func testConvertApply(t *testing.T, pc *policyclient.Client, ns, odd string) {
	_, errOut, code := runSnug(t, "convert", "vpa", "-n", odd, "--apply")
	check(t, "exit code", code, 1)
	checkContains(t, "stderr", errOut, "nothing applied")
	if l, err := pc.SnugPolicies(odd).List(t.Context(), metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("policies in %s after a refused --apply: %v, %v", odd, l, err)
	}
	for range 2 {
		out, _, code := runSnug(t, "convert", "vpa", "-n", ns, "--apply")
		check(t, "exit code", code, 0)
		checkContains(t, "stdout", out, "snugpolicy "+ns+"/resize-demo applied")
	}
	p, err := pc.SnugPolicies(ns).Get(t.Context(), "resize-demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	want := v1alpha1.ContainerResourcePolicy{
		ContainerName: "*", Mode: v1alpha1.ContainerScalingModeAuto,
		ControlledResources: []corev1.ResourceName{"cpu", "memory"}, ControlledValues: v1alpha1.ContainerControlledValuesRequestsAndLimits,
		MinAllowed: &v1alpha1.ResourceAmounts{CPU: q("25m"), Memory: q("128Mi")}, MaxAllowed: &v1alpha1.ResourceAmounts{CPU: q("1"), Memory: q("512Mi")},
	}
	check(t, "targetRef", *p.Spec.TargetRef, v1alpha1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "resize-demo"})
	check(t, "updateMode", p.Spec.UpdatePolicy.UpdateMode, v1alpha1.UpdateModeInPlaceOrRecreate)
	check(t, "minReplicas", ptr.Deref(p.Spec.UpdatePolicy.MinReplicas, 0), int32(1))
	check(t, "deferred action", p.Spec.Behavior.Deferred.Action, v1alpha1.DeferredActionEvict)
	if len(p.Spec.ResourcePolicy.ContainerPolicies) != 1 {
		t.Fatalf("containerPolicies %+v, want one", p.Spec.ResourcePolicy.ContainerPolicies)
	}
	if diff := cmp.Diff(want, p.Spec.ResourcePolicy.ContainerPolicies[0]); diff != "" {
		t.Errorf("containerPolicies[0] (-want +got):\n%s", diff)
	}
	e, err := pc.SnugPolicies(ns).Get(t.Context(), "everything", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, "everything's label", e.Labels["source"], "goldilocks")
	check(t, "everything's exporter mode", e.Spec.ResourcePolicy.ContainerPolicies[1].Mode, v1alpha1.ContainerScalingModeOff)
}

// testConvertConflict: the field report's Deployment (Guaranteed 50m,
// here burning 100m so that snug would grow it at once) under the
// converted policy and the report's InPlaceOrRecreate VPA.
func testConvertConflict(t *testing.T, pc *policyclient.Client, dyn dynamic.Interface, ns string) {
	pods, err := experiment.LoadDeployment{
		Name: "resize-demo", Replicas: 1, LoadDir: labOpts.LoadDir(), Args: []string{"--cpu=100m"},
		CPURequest: "50m", CPULimit: "50m", MemoryRequest: "128Mi", MemoryLimit: "128Mi",
	}.Create(t.Context(), client, ns, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pod := pods[0].Name
	t.Cleanup(func() { os.Remove(filepath.Join(labOpts.LoadDir(), pod)) })
	ag := installSnug(t, snugInstall{})

	p := waitPolicy(t, pc, ns, "resize-demo", "VPAConflict", hasCondition(v1alpha1.ConditionVPAConflict, metav1.ConditionTrue, v1alpha1.ReasonYieldsToVPA))
	checkContains(t, "VPAConflict message", condOf(p, v1alpha1.ConditionVPAConflict).Message, "resize-demo (updateMode InPlaceOrRecreate)")
	waitEvent(t, ns, "resize-demo", controller.EventVPAConflict)
	// The Off VPA's policy is not in conflict.
	waitPolicy(t, pc, ns, "goldilocks-web", "no VPAConflict", hasCondition(v1alpha1.ConditionVPAConflict, metav1.ConditionFalse, "NoActiveVPA"))

	// The agent samples the throttled pod and decides, but sends nothing:
	// ten throttled samples after the conflict was seen, no resize.
	since := time.Now()
	c := ag.waitAutoscale(t, ns, pod, 2*time.Minute, func(c agent.ContainerJSON) bool {
		return c.Autoscale != nil && len(ratePointsAfter(c.History, since)) >= 10
	})
	if len(c.Autoscale.Resizes) != 0 {
		t.Errorf("the agent resized a pod whose policy yields to a VPA: %+v", c.Autoscale.Resizes)
	}
	if got := getPod(t, ns, pod).Spec.Containers[0].Resources.Requests.Cpu().String(); got != "50m" {
		t.Errorf("cpu request %s while yielding, want 50m", got)
	}
	last := ratePointsAfter(c.History, since)
	t.Logf("yielding: %d samples, last throttled %.2f, decision %+v", len(last), ptr.Deref(last[len(last)-1].CPUThrottledFraction, 0), c.Autoscale.LastDecision)

	// VPA Off: snug acts again and grows the pod in place.
	setVPAMode(t, dyn, ns, "resize-demo", "Off")
	waitPolicy(t, pc, ns, "resize-demo", "VPAConflict False after Off", hasCondition(v1alpha1.ConditionVPAConflict, metav1.ConditionFalse, "NoActiveVPA"))
	grown := waitPod(t, ns, pod, "grown by snug", func(p *corev1.Pod) bool {
		return p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() > 50
	})
	t.Logf("VPA Off: snug grew cpu to %s/%s", grown.Spec.Containers[0].Resources.Requests.Cpu(), grown.Spec.Containers[0].Resources.Limits.Cpu())
	check(t, "QoS class", grown.Status.QOSClass, corev1.PodQOSGuaranteed)

	// Back to InPlaceOrRecreate: yields again; deleted: free again.
	setVPAMode(t, dyn, ns, "resize-demo", "InPlaceOrRecreate")
	waitPolicy(t, pc, ns, "resize-demo", "VPAConflict again", hasCondition(v1alpha1.ConditionVPAConflict, metav1.ConditionTrue, v1alpha1.ReasonYieldsToVPA))
	if err := dyn.Resource(vpa.VPAResource).Namespace(ns).Delete(t.Context(), "resize-demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPolicy(t, pc, ns, "resize-demo", "VPAConflict False after delete", hasCondition(v1alpha1.ConditionVPAConflict, metav1.ConditionFalse, "NoActiveVPA"))
}

func setVPAMode(t *testing.T, dyn dynamic.Interface, ns, name, mode string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"updatePolicy": map[string]any{"updateMode": mode}}})
	if _, err := dyn.Resource(vpa.VPAResource).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("setting VPA %s to %s: %v", name, mode, err)
	}
}
