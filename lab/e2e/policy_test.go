//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/config/crd"
	"github.com/snug-dev/snug/internal/install"
)

// crdTimeout bounds installing or removing the CRD.
const crdTimeout = 2 * time.Minute

// TestPolicyCRD installs the SnugPolicy CRD into the lab, holds the API
// server to docs/policy.md (defaults, rules and their messages, the status
// subresource, printer columns) and removes the CRD again, so that later
// tests find the cluster as it was.
func TestPolicyCRD(t *testing.T) {
	ctx := t.Context()
	cfg, err := clientcmd.BuildConfigFromFlags("", labOpts.Kubeconfig())
	if err != nil {
		t.Fatalf("loading lab kubeconfig: %v", err)
	}
	cfg.Timeout = 30 * time.Second
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := crd.All()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := install.CRDs(ctx, ext, crds, crdTimeout); err != nil {
		t.Fatalf("installing: %v", err)
	}
	t.Logf("CRD installed and established in %.2fs", time.Since(start).Seconds())
	t.Cleanup(func() {
		if err := install.Uninstall(context.Background(), ext, crds, crdTimeout); err != nil {
			t.Errorf("uninstalling: %v", err)
		}
	})
	// Applying again is an upgrade to the same content: it must succeed.
	if err := install.CRDs(ctx, ext, crds, crdTimeout); err != nil {
		t.Fatalf("installing a second time: %v", err)
	}

	pc, err := policyclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := testNamespace(t, "snug-policy-")

	t.Run("defaults", func(t *testing.T) { testPolicyDefaults(t, pc, ns) })
	t.Run("samples", func(t *testing.T) { testPolicySamples(t, pc, ns) })
	t.Run("accepted", func(t *testing.T) { testPolicyAccepted(t, pc, ns) })
	t.Run("rejected", func(t *testing.T) { testPolicyRejected(t, pc, ns) })
	t.Run("status", func(t *testing.T) { testPolicyStatus(t, pc, ns) })
}

// defaulted is the spec every default of docs/policy.md gives.
func defaulted() v1alpha1.SnugPolicySpec {
	return v1alpha1.SnugPolicySpec{
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{
			UpdateMode:  v1alpha1.UpdateModeInPlace,
			MinReplicas: ptr.To[int32](2),
		},
		ResourcePolicy: &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
			ContainerName:       "*",
			Mode:                v1alpha1.ContainerScalingModeAuto,
			ControlledResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
			ControlledValues:    v1alpha1.ContainerControlledValuesRequestsAndLimits,
		}}},
		Behavior: &v1alpha1.Behavior{
			ScaleUp: &v1alpha1.ScaleUpBehavior{
				CPUThrottledPercent:     25,
				MemoryWorkingSetPercent: 90,
				OnOOMKill:               v1alpha1.OOMKillActionGrow,
			},
			ScaleDown: &v1alpha1.ScaleDownBehavior{
				StabilizationWindowSeconds: ptr.To[int32](300),
				MaxStepPercent:             50,
			},
			MemoryHeadroomPercent: ptr.To[int32](20),
			MaxResizesPerHour:     20,
			Deferred: &v1alpha1.DeferredBehavior{
				Action:       v1alpha1.DeferredActionFitToNode,
				AfterSeconds: ptr.To[int32](30),
			},
		},
	}
}

func testPolicyDefaults(t *testing.T, pc *policyclient.Client, ns string) {
	ctx := t.Context()
	for name, spec := range map[string]v1alpha1.SnugPolicySpec{
		"by-target":   {TargetRef: &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}},
		"by-selector": {Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	} {
		sp := &v1alpha1.SnugPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
		if _, err := pc.SnugPolicies(ns).Create(ctx, sp, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		got, err := pc.SnugPolicies(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading %s back: %v", name, err)
		}
		want := defaulted()
		want.TargetRef, want.Selector = spec.TargetRef, spec.Selector
		if diff := cmp.Diff(want, got.Spec); diff != "" {
			t.Errorf("%s: spec read back (-documented defaults +got):\n%s", name, diff)
		}
	}

	for _, namespace := range []string{ns, metav1.NamespaceAll} {
		list, err := pc.SnugPolicies(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing policies in %q: %v", namespace, err)
		}
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		if !slices.Contains(names, "by-target") || !slices.Contains(names, "by-selector") {
			t.Errorf("listing policies in %q gave %v, want by-target and by-selector among them", namespace, names)
		}
	}

	// Explicit zeros where zero means something stay zero.
	spec := v1alpha1.SnugPolicySpec{
		TargetRef: &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
		Behavior: &v1alpha1.Behavior{
			ScaleDown: &v1alpha1.ScaleDownBehavior{StabilizationWindowSeconds: ptr.To[int32](0)},
			Deferred:  &v1alpha1.DeferredBehavior{AfterSeconds: ptr.To[int32](0)},
		},
	}
	got, err := pc.SnugPolicies(ns).Create(ctx, &v1alpha1.SnugPolicy{ObjectMeta: metav1.ObjectMeta{Name: "zeros"}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating zeros: %v", err)
	}
	check(t, "stabilizationWindowSeconds", *got.Spec.Behavior.ScaleDown.StabilizationWindowSeconds, 0)
	check(t, "afterSeconds", *got.Spec.Behavior.Deferred.AfterSeconds, 0)
	check(t, "maxStepPercent (defaulted beside an explicit field)", got.Spec.Behavior.ScaleDown.MaxStepPercent, 50)
}

// testPolicySamples: every example in config/samples is accepted.
func testPolicySamples(t *testing.T, pc *policyclient.Client, ns string) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var sp v1alpha1.SnugPolicy
		if err := yaml.UnmarshalStrict(b, &sp); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		sp.Name = "sample-" + sp.Name
		if _, err := pc.SnugPolicies(ns).Create(t.Context(), &sp, metav1.CreateOptions{}); err != nil {
			t.Errorf("%s rejected: %v", filepath.Base(p), err)
		}
	}
}

// createYAML sends a policy whose spec is given as YAML, exactly as
// written (integers stay integers), with dry run (nothing is stored) and
// strict field validation, as kubectl does.
func createYAML(ctx context.Context, pc *policyclient.Client, ns, specYAML string) error {
	var spec any
	if err := yaml.Unmarshal([]byte(specYAML), &spec); err != nil {
		return fmt.Errorf("test case: %w", err)
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(),
		"kind":       "SnugPolicy",
		"metadata":   map[string]any{"name": "case"},
		"spec":       spec,
	})
	if err != nil {
		return fmt.Errorf("test case: %w", err)
	}
	return pc.RESTClient().Post().Namespace(ns).Resource(v1alpha1.SnugPolicyResource.Resource).
		Param("dryRun", metav1.DryRunAll).Param("fieldValidation", metav1.FieldValidationStrict).SetHeader("Content-Type", "application/json").
		Body(body).Do(ctx).Error()
}

const target = "targetRef: {kind: Deployment, name: web}\n"

func testPolicyAccepted(t *testing.T, pc *policyclient.Client, ns string) {
	for name, spec := range map[string]string{
		"every kind with its apiVersion": "targetRef: {apiVersion: batch/v1, kind: CronJob, name: nightly}",
		"statefulset":                    "targetRef: {apiVersion: apps/v1, kind: StatefulSet, name: db}",
		"selector by expression":         "selector: {matchExpressions: [{key: app, operator: In, values: [a, b]}]}",
		"evict with InPlaceOrRecreate":   target + "updatePolicy: {updateMode: InPlaceOrRecreate}\nbehavior: {deferred: {action: Evict}}",
		"initial mode (schema accepts)":  target + "updatePolicy: {updateMode: Initial}",
		"off mode":                       target + "updatePolicy: {updateMode: \"Off\"}",
		"min equals max":                 target + "resourcePolicy: {containerPolicies: [{containerName: app, minAllowed: {cpu: 500m}, maxAllowed: {cpu: 500m}}]}",
		"integer quantities":             target + "resourcePolicy: {containerPolicies: [{containerName: app, minAllowed: {cpu: 1, memory: 1073741824}, maxAllowed: {cpu: 2, memory: 2Gi}}]}",
		"min in other units than max":    target + "resourcePolicy: {containerPolicies: [{containerName: app, minAllowed: {memory: 1000Mi}, maxAllowed: {memory: 1Gi}}]}",
		"star and named containers":      target + "resourcePolicy: {containerPolicies: [{containerName: \"*\", mode: \"Off\"}, {containerName: app}]}",
		"only memory":                    target + "resourcePolicy: {containerPolicies: [{containerName: app, controlledResources: [memory], controlledValues: RequestsOnly}]}",
		"headroom just enough":           target + "behavior: {memoryHeadroomPercent: 12, scaleUp: {memoryWorkingSetPercent: 90}}",
		"wait":                           target + "behavior: {deferred: {action: Wait, afterSeconds: 0}}",
		"boost by a factor":              target + "resourcePolicy: {containerPolicies: [{containerName: \"*\", startupBoost: {cpu: {type: Factor, factor: 3, durationSeconds: 10}}}]}",
		"boost by a quantity":            target + "resourcePolicy: {containerPolicies: [{containerName: app, mode: \"Off\", startupBoost: {cpu: {type: Quantity, quantity: 500m}}}]}",
		"no boost for one container":     target + "resourcePolicy: {containerPolicies: [{containerName: \"*\", startupBoost: {cpu: {type: Factor, factor: 2}}}, {containerName: side, startupBoost: {cpu: {type: Factor, factor: 1}}}]}",
	} {
		if err := createYAML(t.Context(), pc, ns, spec); err != nil {
			t.Errorf("%s: rejected: %v", name, err)
		}
	}
}

func testPolicyRejected(t *testing.T, pc *policyclient.Client, ns string) {
	cases := []struct {
		name, spec, want string
	}{
		{"neither target nor selector", "updatePolicy: {updateMode: InPlace}",
			"set exactly one of targetRef (a workload) and selector (a label selector)"},
		{"both target and selector", target + "selector: {matchLabels: {app: web}}",
			"set exactly one of targetRef (a workload) and selector (a label selector)"},
		{"empty selector", "selector: {}",
			"spec.selector: Invalid value: selector must not be empty: an empty selector would select every pod in the namespace"},
		{"kind Pod", "targetRef: {kind: Pod, name: web}",
			"spec.targetRef.kind: Invalid value: kind must be one of Deployment, StatefulSet, DaemonSet, ReplicaSet, Job and CronJob; select other pods with spec.selector"},
		{"Job with apps/v1", "targetRef: {apiVersion: apps/v1, kind: Job, name: once}",
			"apiVersion must be apps/v1 for a Deployment, StatefulSet, DaemonSet or ReplicaSet and batch/v1 for a Job or CronJob"},
		{"Deployment with extensions/v1beta1", "targetRef: {apiVersion: extensions/v1beta1, kind: Deployment, name: web}",
			"apiVersion must be apps/v1 for a Deployment"},
		{"no target name", "targetRef: {kind: Deployment}", "spec.targetRef.name: Required value"},
		{"VPA's Auto mode", target + "updatePolicy: {updateMode: Auto}",
			"spec.updatePolicy.updateMode: Unsupported value: \"Auto\": supported values: \"Off\", \"InPlace\", \"InPlaceOrRecreate\", \"Initial\""},
		{"minReplicas 0", target + "updatePolicy: {minReplicas: 0}",
			"spec.updatePolicy.minReplicas: Invalid value: 0: spec.updatePolicy.minReplicas in body should be greater than or equal to 1"},
		{"min above max", target + "resourcePolicy: {containerPolicies: [{containerName: app, minAllowed: {cpu: \"2\"}, maxAllowed: {cpu: 1500m}}]}",
			"spec.resourcePolicy.containerPolicies[0].minAllowed.cpu: Invalid value: minAllowed.cpu must not be above maxAllowed.cpu"},
		{"min above max in other units", target + "resourcePolicy: {containerPolicies: [{containerName: app, minAllowed: {memory: 1Gi}, maxAllowed: {memory: 1000Mi}}]}",
			"minAllowed.memory must not be above maxAllowed.memory"},
		{"min above max as integers", target + "resourcePolicy: {containerPolicies: [{containerName: app, minAllowed: {cpu: 3}, maxAllowed: {cpu: 2}}]}",
			"minAllowed.cpu must not be above maxAllowed.cpu"},
		{"gpu in minAllowed", target + "resourcePolicy: {containerPolicies: [{containerName: app, minAllowed: {nvidia.com/gpu: 1}}]}",
			`unknown field "spec.resourcePolicy.containerPolicies[0].minAllowed.nvidia.com/gpu"`},
		{"storage in maxAllowed", target + "resourcePolicy: {containerPolicies: [{containerName: app, maxAllowed: {ephemeral-storage: 1Gi}}]}",
			`unknown field "spec.resourcePolicy.containerPolicies[0].maxAllowed.ephemeral-storage"`},
		{"negative minAllowed", target + "resourcePolicy: {containerPolicies: [{containerName: app, minAllowed: {cpu: -100m}}]}",
			"spec.resourcePolicy.containerPolicies[0].minAllowed.cpu: Invalid value: minAllowed.cpu must not be negative"},
		{"zero maxAllowed", target + "resourcePolicy: {containerPolicies: [{containerName: app, maxAllowed: {memory: \"0\"}}]}",
			"maxAllowed.memory must be above zero"},
		{"not a quantity", target + "resourcePolicy: {containerPolicies: [{containerName: app, maxAllowed: {memory: lots}}]}",
			"spec.resourcePolicy.containerPolicies[0].maxAllowed.memory: Invalid value: \"lots\""},
		{"quantity too long", target + "resourcePolicy: {containerPolicies: [{containerName: app, maxAllowed: {memory: 100000000000000000000000000000000000Mi}}]}",
			"may not be more than 32 bytes"},
		{"duplicate containerName", target + "resourcePolicy: {containerPolicies: [{containerName: app}, {containerName: app, mode: \"Off\"}]}",
			"containerName must be unique: give each container, and \"*\", at most one policy"},
		{"bad containerName", target + "resourcePolicy: {containerPolicies: [{containerName: App_1}]}",
			"containerName must be a container's name (lowercase letters, digits and '-'), \"*\" or \"_pod\" (the pod-level resources)"},
		{"controlled storage", target + "resourcePolicy: {containerPolicies: [{containerName: app, controlledResources: [ephemeral-storage]}]}",
			"Unsupported value: \"ephemeral-storage\": supported values: \"cpu\", \"memory\""},
		{"no controlled resources", target + "resourcePolicy: {containerPolicies: [{containerName: app, controlledResources: []}]}",
			"should have at least 1 items"},
		{"controlledValues LimitsOnly", target + "resourcePolicy: {containerPolicies: [{containerName: app, controlledValues: LimitsOnly}]}",
			"supported values: \"RequestsAndLimits\", \"RequestsOnly\""},
		{"Evict with InPlace", target + "behavior: {deferred: {action: Evict}}",
			"spec.behavior.deferred.action: Invalid value: deferred action Evict needs updatePolicy.updateMode InPlaceOrRecreate: the other modes never evict a pod"},
		{"Evict with Off", target + "updatePolicy: {updateMode: \"Off\"}\nbehavior: {deferred: {action: Evict}}",
			"deferred action Evict needs updatePolicy.updateMode InPlaceOrRecreate"},
		{"headroom too small for the trigger", target + "behavior: {memoryHeadroomPercent: 5}",
			"spec.behavior.scaleUp.memoryWorkingSetPercent: Invalid value: scaleUp.memoryWorkingSetPercent must be above 100*100/(100+memoryHeadroomPercent)"},
		{"trigger too low for the headroom", target + "behavior: {scaleUp: {memoryWorkingSetPercent: 80}}",
			"snug would grow memory again at once"},
		{"throttled percent above 100", target + "behavior: {scaleUp: {cpuThrottledPercent: 101}}",
			"spec.behavior.scaleUp.cpuThrottledPercent in body should be less than or equal to 100"},
		{"onOOMKill Restart", target + "behavior: {scaleUp: {onOOMKill: Restart}}",
			"supported values: \"Grow\", \"Ignore\""},
		{"negative window", target + "behavior: {scaleDown: {stabilizationWindowSeconds: -1}}",
			"should be greater than or equal to 0"},
		{"step above 100", target + "behavior: {scaleDown: {maxStepPercent: 101}}",
			"should be less than or equal to 100"},
		{"no resizes per hour", target + "behavior: {maxResizesPerHour: -1}",
			"should be greater than or equal to 1"},
		{"deferred for over an hour", target + "behavior: {deferred: {afterSeconds: 3601}}",
			"should be less than or equal to 3600"},
		{"boost factor with a quantity", target + "resourcePolicy: {containerPolicies: [{containerName: app, startupBoost: {cpu: {type: Factor, factor: 2, quantity: 1}}}]}",
			// 1.35 prints no value before the message, later versions may.
			"type Factor needs factor and no quantity"},
		{"boost factor missing", target + "resourcePolicy: {containerPolicies: [{containerName: app, startupBoost: {cpu: {type: Factor}}}]}",
			"type Factor needs factor and no quantity"},
		{"boost quantity missing", target + "resourcePolicy: {containerPolicies: [{containerName: app, startupBoost: {cpu: {type: Quantity, factor: 2}}}]}",
			"type Quantity needs quantity and no factor"},
		{"boost quantity zero", target + "resourcePolicy: {containerPolicies: [{containerName: app, startupBoost: {cpu: {type: Quantity, quantity: \"0\"}}}]}",
			"quantity must be above zero"},
		{"boost factor 0", target + "resourcePolicy: {containerPolicies: [{containerName: app, startupBoost: {cpu: {type: Factor, factor: 0}}}]}",
			"should be greater than or equal to 1"},
		{"boost type Percent", target + "resourcePolicy: {containerPolicies: [{containerName: app, startupBoost: {cpu: {type: Percent}}}]}",
			"supported values: \"Factor\", \"Quantity\""},
		{"boost without cpu", target + "resourcePolicy: {containerPolicies: [{containerName: app, startupBoost: {}}]}",
			"spec.resourcePolicy.containerPolicies[0].startupBoost.cpu: Required value"},
		{"boost for over an hour", target + "resourcePolicy: {containerPolicies: [{containerName: app, startupBoost: {cpu: {type: Factor, factor: 2, durationSeconds: 3601}}}]}",
			"should be less than or equal to 3600"},
		{"deferred action Later", target + "behavior: {deferred: {action: Later}}",
			"supported values: \"Wait\", \"FitToNode\", \"Evict\""},
		{"fraction, not percent", target + "behavior: {scaleUp: {cpuThrottledPercent: 0.25}}",
			// 1.35 says "of type integer", 1.37 "of type int32".
			"spec.behavior.scaleUp.cpuThrottledPercent in body must be of type int"},
	}
	for _, c := range cases {
		err := createYAML(t.Context(), pc, ns, c.spec)
		switch {
		case err == nil:
			t.Errorf("%s: accepted, want rejected with %q", c.name, c.want)
		case !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err):
			t.Errorf("%s: %v, want an Invalid error", c.name, err)
		default:
			t.Logf("%s: %v", c.name, err)
			checkContains(t, c.name, err.Error(), c.want)
		}
	}
}

func testPolicyStatus(t *testing.T, pc *policyclient.Client, ns string) {
	ctx := t.Context()
	policies := pc.SnugPolicies(ns)
	sp, err := policies.Create(ctx, &v1alpha1.SnugPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "status"},
		Spec:       v1alpha1.SnugPolicySpec{TargetRef: &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	status := v1alpha1.SnugPolicyStatus{
		ObservedGeneration: sp.Generation,
		Selector:           "app=web",
		Recommendation: &v1alpha1.RecommendedPodResources{ContainerRecommendations: []v1alpha1.RecommendedContainerResources{{
			ContainerName: "app", Target: rl, LowerBound: rl, UpperBound: rl, UncappedTarget: rl,
		}}},
		Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "TargetResolved",
			Message: "Deployment web resolved", LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second)),
			ObservedGeneration: sp.Generation,
		}},
	}
	sp.Status = status
	sp.Spec.UpdatePolicy.UpdateMode = v1alpha1.UpdateModeOff // ignored by the status subresource
	updated, err := policies.UpdateStatus(ctx, sp, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating status: %v", err)
	}
	check(t, "generation after a status update", updated.Generation, sp.Generation)
	check(t, "updateMode after a status update", updated.Spec.UpdatePolicy.UpdateMode, v1alpha1.UpdateModeInPlace)

	got, err := policies.Get(ctx, sp.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(status, got.Status); diff != "" {
		t.Errorf("status read back (-sent +got):\n%s", diff)
	}

	// A spec update ignores status and bumps the generation.
	got.Status = v1alpha1.SnugPolicyStatus{}
	got.Spec.UpdatePolicy.UpdateMode = v1alpha1.UpdateModeOff
	got, err = policies.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating spec: %v", err)
	}
	check(t, "generation after a spec update", got.Generation, sp.Generation+1)
	check(t, "status selector after a spec update", got.Status.Selector, "app=web")

	// The controller may patch status; a merge patch through the status
	// subresource works.
	patch := fmt.Sprintf(`{"status":{"observedGeneration":%d}}`, got.Generation)
	got, err = policies.Patch(ctx, sp.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("patching status: %v", err)
	}
	check(t, "observedGeneration after a status patch", got.Status.ObservedGeneration, got.Generation)

	out, err := kubectl(ctx, "get", "snugpolicies", sp.Name, "-n", ns)
	if err != nil {
		t.Fatalf("kubectl get: %v: %s", err, out)
	}
	t.Logf("kubectl get:\n%s", out)
	checkMatch(t, "kubectl get", out, `NAME\s+KIND\s+TARGET\s+MODE\s+READY\s+AGE`)
	checkMatch(t, "kubectl get", out, `status\s+Deployment\s+web\s+Off\s+True\s+`)
	out, err = kubectl(ctx, "get", "sp", sp.Name, "-n", ns, "-o", "wide")
	if err != nil {
		t.Fatalf("kubectl get -o wide: %v: %s", err, out)
	}
	checkMatch(t, "kubectl get -o wide", out, `TargetResolved\s+app=web`)
}

func kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(labOpts.BinDir(), "kubectl"),
		append([]string{"--kubeconfig", labOpts.Kubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
