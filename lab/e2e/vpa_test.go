//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab/vpa"
)

// Upstream VPA on the lab: metrics-server serves metrics.k8s.io, a VPA in
// Off mode gets a recommendation, and one in InPlaceOrRecreate mode resizes
// a pod under load in place, as the field report's wall 3 saw on EKS.
// Timings are logged, not asserted.

const (
	// vpaRequestCPU is the request the workload starts with (the report's).
	vpaRequestCPU = "50m"
	// vpaLoadCPU is what each pod burns from its start: well above the request.
	vpaLoadCPU = "250m"
	// vpaResizeBound bounds the wait for the in-place resize; the report
	// saw 202-235 s from the load's start.
	vpaResizeBound = 8 * time.Minute
)

func TestUpstreamVPA(t *testing.T) {
	ctx := context.Background()
	opts := vpa.NewOptions(labOpts)
	start := time.Now()
	if err := vpa.Up(ctx, opts, testLog{t}); err != nil {
		t.Fatalf("vpa up: %v", err)
	}
	t.Logf("vpa up in %.1fs", time.Since(start).Seconds())
	t.Cleanup(func() {
		if err := vpa.Down(context.Background(), opts, testLog{t}); err != nil {
			t.Errorf("vpa down: %v", err)
		}
	})
	dyn := dynamicClient(t)
	ns := createNamespace(t, "snug-vpa-")

	// Both workloads run side by side; the clock starts when their load does.
	off := createLoadDeployment(t, ns, "vpa-off", 1)
	inplace := createLoadDeployment(t, ns, "vpa-inplace", 2)
	before := waitDeploymentPods(t, ns, inplace, 2)
	waitDeploymentPods(t, ns, off, 1)
	t0 := time.Now()
	createVPA(t, dyn, ns, off, "Off")
	createVPA(t, dyn, ns, inplace, "InPlaceOrRecreate")

	t.Run("metrics", func(t *testing.T) {
		pod := before[0]
		var m podMetrics
		err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			raw, err := client.Discovery().RESTClient().Get().
				AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", ns, "pods", pod.Name).DoRaw(ctx)
			if err != nil {
				return false, nil // not scraped yet
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				return false, fmt.Errorf("decoding pod metrics: %w", err)
			}
			return len(m.Containers) == 1, nil
		})
		if err != nil {
			t.Fatalf("metrics.k8s.io for pod %s: %v", pod.Name, err)
		}
		usage := m.Containers[0].Usage
		t.Logf("pod %s: cpu %s memory %s (window %s), %.0fs after the load started",
			pod.Name, usage.Cpu(), usage.Memory(), m.Window.Duration, time.Since(t0).Seconds())
		if usage.Cpu().MilliValue() <= 0 || usage.Memory().Value() <= 0 {
			t.Errorf("usage %v, want cpu and memory above zero", usage)
		}
	})

	t.Run("off mode recommends", func(t *testing.T) {
		target, at := waitRecommendation(t, dyn, ns, off)
		t.Logf("Off: first recommendation cpu %s at t+%.0fs", target, at.Sub(t0).Seconds())
		pods := listPods(t, ns, off)
		for _, p := range pods {
			if got := p.Spec.Containers[0].Resources.Requests.Cpu().String(); got != vpaRequestCPU {
				t.Errorf("Off mode: pod %s cpu request %s, want it left at %s", p.Name, got, vpaRequestCPU)
			}
		}
	})

	t.Run("in-place resize", func(t *testing.T) {
		target, t2 := waitRecommendation(t, dyn, ns, inplace)
		t.Logf("InPlaceOrRecreate: first recommendation (T2) cpu %s at t+%.0fs", target, t2.Sub(t0).Seconds())
		uids := map[types.UID]corev1.Pod{}
		for _, p := range before {
			uids[p.UID] = p
		}
		var resized corev1.Pod
		err := wait.PollUntilContextTimeout(ctx, time.Second, vpaResizeBound, true, func(ctx context.Context) (bool, error) {
			for _, p := range listPods(t, ns, inplace) {
				if _, ok := uids[p.UID]; ok && resizedInPlace(p) {
					resized = p
					return true, nil
				}
			}
			return false, nil
		})
		t3 := time.Now()
		if err != nil {
			for _, p := range listPods(t, ns, inplace) {
				t.Logf("pod %s uid %s: spec cpu %s, status %v", p.Name, p.UID, p.Spec.Containers[0].Resources.Requests.Cpu(), statusResources(p))
			}
			t.Fatalf("no pod of %s resized in place within %s of the load's start: %v", inplace, vpaResizeBound, err)
		}
		orig := uids[resized.UID]
		cs := resized.Status.ContainerStatuses[0]
		t.Logf("InPlaceOrRecreate: pod %s resized in place (T3) at t+%.0fs, T3-T2 %.0fs: requests cpu %s -> %s, memory %s -> %s",
			resized.Name, t3.Sub(t0).Seconds(), t3.Sub(t2).Seconds(),
			orig.Spec.Containers[0].Resources.Requests.Cpu(), cs.Resources.Requests.Cpu(),
			orig.Spec.Containers[0].Resources.Requests.Memory(), cs.Resources.Requests.Memory())
		check(t, "restart count", cs.RestartCount, int32(0))
		check(t, "container ID", cs.ContainerID, orig.Status.ContainerStatuses[0].ContainerID)
		evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + resized.Name})
		if err != nil {
			t.Fatalf("listing events: %v", err)
		}
		found := false
		for _, e := range evs.Items {
			at := e.LastTimestamp.Time
			if at.IsZero() {
				at = e.EventTime.Time
			}
			t.Logf("event t+%.0fs %s %s: %s", at.Sub(t0).Seconds(), e.Source.Component, e.Reason, e.Message)
			found = found || e.Reason == "InPlaceResizedByVPA"
		}
		if !found {
			t.Error("no InPlaceResizedByVPA event on the resized pod")
		}
	})
}

// podMetrics is the part of metrics.k8s.io/v1beta1 PodMetrics read here.
type podMetrics struct {
	Window     metav1.Duration `json:"window"`
	Containers []struct {
		Name  string              `json:"name"`
		Usage corev1.ResourceList `json:"usage"`
	} `json:"containers"`
}

// testLog sends progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p))
	return len(p), nil
}

func dynamicClient(t *testing.T) *dynamic.DynamicClient {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", labOpts.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

func createNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		if os.Getenv("SNUG_E2E_KEEP") == "1" {
			return
		}
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	// Pods are refused until the namespace's service account exists.
	err = wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for the default service account in %s: %v", ns.Name, err)
	}
	return ns.Name
}

// createLoadDeployment runs snug-load burning vpaLoadCPU in pods that
// request vpaRequestCPU (and no limits), both resources resizable in place.
func createLoadDeployment(t *testing.T, ns, name string, replicas int32) string {
	t.Helper()
	labels := map[string]string{"app.kubernetes.io/name": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To(int64(5)),
					Containers: []corev1.Container{{
						Name:            "app",
						Image:           experiment.LoadImage,
						ImagePullPolicy: corev1.PullNever,
						Args:            []string{"--cpu=" + vpaLoadCPU, "--listen="},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse(vpaRequestCPU),
							corev1.ResourceMemory: resource.MustParse("64Mi"),
						}},
						ResizePolicy: []corev1.ContainerResizePolicy{
							{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
							{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
						},
					}},
				},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating deployment %s: %v", name, err)
	}
	return name
}

func listPods(t *testing.T, ns, deployment string) []corev1.Pod {
	t.Helper()
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + deployment})
	if err != nil {
		t.Fatalf("listing pods of %s: %v", deployment, err)
	}
	return pods.Items
}

// waitDeploymentPods waits until n pods of the deployment run and returns them.
func waitDeploymentPods(t *testing.T, ns, deployment string, n int) []corev1.Pod {
	t.Helper()
	var running []corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		running = running[:0]
		for _, p := range listPods(t, ns, deployment) {
			if p.DeletionTimestamp == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil {
				running = append(running, p)
			}
		}
		return len(running) == n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d running pods of %s: %v", n, deployment, err)
	}
	return running
}

func createVPA(t *testing.T, dyn dynamic.Interface, ns, deployment, mode string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.k8s.io/v1",
		"kind":       "VerticalPodAutoscaler",
		"metadata":   map[string]any{"name": deployment},
		"spec": map[string]any{
			"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment},
			"updatePolicy": map[string]any{"updateMode": mode},
		},
	}}
	if _, err := dyn.Resource(vpa.VPAResource).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating VPA %s (%s): %v", deployment, mode, err)
	}
}

// waitRecommendation waits for the VPA's first cpu target and returns it
// and when it came: its RecommendationProvided condition's transition time
// (whole seconds), or when it was seen if that is missing.
func waitRecommendation(t *testing.T, dyn dynamic.Interface, ns, name string) (string, time.Time) {
	t.Helper()
	var target string
	at := time.Time{}
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(vpa.VPAResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("getting VPA %s: %w", name, err)
		}
		recs, _, _ := unstructured.NestedSlice(u.Object, "status", "recommendation", "containerRecommendations")
		if len(recs) == 0 {
			return false, nil
		}
		rec, _ := recs[0].(map[string]any)
		target, _, _ = unstructured.NestedString(rec, "target", "cpu")
		if target == "" {
			return false, nil
		}
		at = time.Now()
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "RecommendationProvided" && m["status"] == "True" {
				if ts, err := time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"])); err == nil {
					at = ts
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for VPA %s's recommendation: %v", name, err)
	}
	return target, at
}

// resizedInPlace: the container's actual cpu request has left the
// original and equals the desired one, with no resize pending.
func resizedInPlace(p corev1.Pod) bool {
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].Resources == nil {
		return false
	}
	actual := p.Status.ContainerStatuses[0].Resources.Requests.Cpu()
	desired := p.Spec.Containers[0].Resources.Requests.Cpu()
	return actual.Cmp(resource.MustParse(vpaRequestCPU)) != 0 && actual.Cmp(*desired) == 0
}

func statusResources(p corev1.Pod) string {
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].Resources == nil {
		return "-"
	}
	r := p.Status.ContainerStatuses[0].Resources
	return fmt.Sprintf("requests %v limits %v", r.Requests, r.Limits)
}
