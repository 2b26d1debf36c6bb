//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/snug-dev/snug/lab/internal/lab/helm"
)

// helmRelease is the release TestHelm installs, in helm.Namespace, under
// the names config/ has (helm.Release).
const helmRelease = helm.Release

// TestHelm installs charts/snug on the lab the way a user does, with the
// images pushed to the lab's registry: helm install (the agent DaemonSet
// and the controller Deployment roll out and become Ready, a controller
// takes the Lease), helm upgrade to another image tag (both roll to it),
// helm uninstall (no object of the release is left but the kept CRD, nor
// the Lease and Secret the controllers made).
func TestHelm(t *testing.T) {
	helmBin, err := helm.Built(labOpts.CacheDir, helm.DefaultVersion)
	if err != nil {
		t.Fatal(err)
	}
	chart, err := filepath.Abs("../../charts/snug")
	if err != nil {
		t.Fatal(err)
	}
	registry, tags := pushSnugImages(t, 2)
	ns := helm.Namespace
	ext := apiextensionsclient.NewForConfigOrDie(adminConfig(t))
	const crdName = "snugpolicies.autoscaling.snug.dev"

	// The chart owns the CRD; one that another test installed, or the
	// namespace still terminating, would make the install fail for
	// reasons of its own. (The other tests' installs leave the namespace,
	// as helm uninstall does; it may stay.)
	if !waitNotFound(t, t.Context(), "CRD "+crdName+" of another test", func(ctx context.Context) error {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
		return err
	}) {
		t.FailNow()
	}
	waitFor(t, "namespace "+ns+" not terminating", 2*time.Minute, func() (bool, error) {
		n, err := client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && n.Status.Phase != corev1.NamespaceTerminating, err
	})

	run := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		args = append(args, "--kubeconfig", labOpts.Kubeconfig())
		start := time.Now()
		out, err := exec.CommandContext(ctx, helmBin, args...).CombinedOutput()
		t.Logf("$ helm %s (%.1fs)\n%s", strings.Join(args, " "), time.Since(start).Seconds(), out)
		if err != nil {
			t.Fatalf("helm %s: %v", args[0], err)
		}
	}
	t.Cleanup(func() {
		// Whatever the test reached: no release, no namespace, no CRD.
		ctx := context.Background()
		_ = exec.CommandContext(ctx, helmBin, "uninstall", helmRelease, "-n", ns, "--wait", "--ignore-not-found", "--kubeconfig", labOpts.Kubeconfig()).Run()
		if err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crdName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the CRD: %v", err)
		}
		if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
		waitNotFound(t, ctx, "namespace "+ns, func(ctx context.Context) error {
			_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return err
		})
	})

	start := time.Now()
	run("install", helmRelease, chart, "-n", ns, "--create-namespace",
		"--set", "image.registry="+registry, "--set", "image.tag="+tags[0])
	agents, controllers := waitRolledOut(t, ns, tags[0])
	leader := waitLeader(t, ns, controllers)
	t.Logf("installed in %.1fs: agents %v, controllers %v, leader %s", time.Since(start).Seconds(), agents, controllers, leader)
	checkAgentLogs(t, ns, agents)

	start = time.Now()
	run("upgrade", helmRelease, chart, "-n", ns, "--reuse-values", "--set", "image.tag="+tags[1],
		"--set", "logging.format=json", "--set", "logging.verbosity=1")
	agents2, controllers2 := waitRolledOut(t, ns, tags[1])
	for _, p := range append(slices.Clone(agents2), controllers2...) {
		if slices.Contains(agents, p) || slices.Contains(controllers, p) {
			t.Errorf("pod %s survived the upgrade to %s", p, tags[1])
		}
	}
	leader2 := waitLeader(t, ns, controllers2)
	t.Logf("upgraded to %s in %.1fs: agents %v, controllers %v, leader %s", tags[1], time.Since(start).Seconds(), agents2, controllers2, leader2)
	checkJSONLogs(t, ns, append([]string{leader2}, agents2...), leader2)

	start = time.Now()
	run("uninstall", helmRelease, "-n", ns, "--wait")
	left := leftovers(t, ns)
	if len(left) > 0 {
		t.Errorf("after helm uninstall: %s", strings.Join(left, ", "))
	}
	c, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("crds.keep: the CRD is gone after helm uninstall: %v", err)
	}
	if c.DeletionTimestamp != nil || c.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("CRD after uninstall: deleting %v, annotations %v", c.DeletionTimestamp, c.Annotations)
	}
	// The objects the controllers made at run time, the Lease and the
	// admission webhook's Secret, are owned by their Deployment
	// (--owner-deployment): the garbage collector deletes them with it.
	waitControllerObjectsGone(t, ns)
	t.Logf("uninstalled in %.1fs; the CRD stays (crds.keep)", time.Since(start).Seconds())
}

// waitNotFound waits until get reports NotFound, and reports whether it
// did (failing t if not).
// In a cleanup, parent is context.Background(): t.Context() has ended.
func waitNotFound(t *testing.T, parent context.Context, what string, get func(context.Context) error) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(parent, 2*time.Minute)
	defer cancel()
	err := pollUntil(ctx, 500*time.Millisecond, func() (bool, error) {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("waiting until %s is gone: %v", what, err)
		return false
	}
	return true
}

// waitRolledOut waits until the agent DaemonSet and the controller
// Deployment have rolled out tag: every pod of theirs runs it and is Ready,
// no pod of an older template is left. It returns the pods' names.
func waitRolledOut(t *testing.T, ns, tag string) (agents, controllers []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	var state string
	err := pollUntil(ctx, time.Second, func() (bool, error) {
		ds, err := client.AppsV1().DaemonSets(ns).Get(ctx, "snug-agent", metav1.GetOptions{})
		if err != nil {
			state = err.Error()
			return false, nil
		}
		d, err := client.AppsV1().Deployments(ns).Get(ctx, "snug-controller", metav1.GetOptions{})
		if err != nil {
			state = err.Error()
			return false, nil
		}
		s := ds.Status
		dsDone := ds.Status.ObservedGeneration >= ds.Generation && s.DesiredNumberScheduled > 0 &&
			s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberReady == s.DesiredNumberScheduled && s.NumberAvailable == s.DesiredNumberScheduled
		ds2 := d.Status
		want := *d.Spec.Replicas
		dDone := d.Status.ObservedGeneration >= d.Generation && ds2.UpdatedReplicas == want && ds2.ReadyReplicas == want && ds2.AvailableReplicas == want && ds2.Replicas == want
		agents, state = chartPodsReady(ctx, ns, "agent", tag)
		var cstate string
		controllers, cstate = chartPodsReady(ctx, ns, "controller", tag)
		state = fmt.Sprintf("DaemonSet %d/%d updated, %d ready; Deployment %d/%d updated, %d ready; agent pods: %s; controller pods: %s",
			s.UpdatedNumberScheduled, s.DesiredNumberScheduled, s.NumberReady, ds2.UpdatedReplicas, want, ds2.ReadyReplicas, state, cstate)
		return dsDone && dDone && len(agents) == int(s.DesiredNumberScheduled) && len(controllers) == int(want), nil
	})
	if err != nil {
		t.Fatalf("waiting for snug %s to roll out: %v; last: %s", tag, err, state)
	}
	t.Logf("rolled out %s: %s", tag, state)
	return agents, controllers
}

// chartPodsReady returns the component's pods if every one runs tag and is
// Ready, and says what it saw.
func chartPodsReady(ctx context.Context, ns, component, tag string) ([]string, string) {
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + helmRelease + ",app.kubernetes.io/component=" + component})
	if err != nil {
		return nil, err.Error()
	}
	var names, seen []string
	all := true
	for _, p := range pods.Items {
		ready := p.DeletionTimestamp == nil && podReady(&p) && strings.HasSuffix(p.Spec.Containers[0].Image, ":"+tag)
		all = all && ready
		if ready {
			names = append(names, p.Name)
		}
		seen = append(seen, fmt.Sprintf("%s %s %s ready=%v%s", p.Name, p.Spec.Containers[0].Image, p.Status.Phase, podReady(&p), waiting(&p)))
	}
	if !all {
		return nil, strings.Join(seen, "; ")
	}
	return names, strings.Join(seen, "; ")
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waiting names why a container is not running, e.g. " (ImagePullBackOff)".
func waiting(p *corev1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			return " (" + w.Reason + ": " + w.Message + ")"
		}
	}
	return ""
}

// waitLeader waits until one of controllers holds the Lease and returns
// its name. The identity is the pod's host name, then "_" and a nonce.
func waitLeader(t *testing.T, ns string, controllers []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var holder string
	err := pollUntil(ctx, 500*time.Millisecond, func() (bool, error) {
		l, err := client.CoordinationV1().Leases(ns).Get(ctx, "snug-controller", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false, nil
		}
		holder = *l.Spec.HolderIdentity
		host, _, _ := strings.Cut(holder, "_")
		return slices.Contains(controllers, host), nil
	})
	if err != nil {
		t.Fatalf("waiting for one of %v to lead (Lease %s/snug-controller held by %q): %v", controllers, ns, holder, err)
	}
	host, _, _ := strings.Cut(holder, "_")
	return host
}

// checkAgentLogs fails if an agent, non-root without capabilities, could
// not read the node's cgroup files.
func checkAgentLogs(t *testing.T, ns string, agents []string) {
	t.Helper()
	for _, a := range agents {
		raw, err := client.CoreV1().Pods(ns).GetLogs(a, &corev1.PodLogOptions{}).DoRaw(t.Context())
		if err != nil {
			t.Errorf("agent %s logs: %v", a, err)
			continue
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.Contains(line, "permission denied") || strings.Contains(line, "forbidden") {
				t.Errorf("agent %s: %s", a, line)
			}
		}
	}
}

// checkJSONLogs: after the upgrade to logging.format=json, the pods log
// JSON objects and no klog text line; the leader's log has its "leading"
// line as JSON.
func checkJSONLogs(t *testing.T, ns string, pods []string, leader string) {
	t.Helper()
	klogText := regexp.MustCompile(`^[IWEF]\d{4} \d\d:\d\d:\d\d`)
	waitFor(t, "the leader "+leader+" to log leading as JSON", time.Minute, func() (bool, error) {
		raw, err := client.CoreV1().Pods(ns).GetLogs(leader, &corev1.PodLogOptions{}).DoRaw(t.Context())
		return strings.Contains(string(raw), `"msg":"leading"`), err
	})
	for _, p := range pods {
		var raw []byte
		objects := 0
		waitFor(t, p+" to log a JSON object", time.Minute, func() (bool, error) {
			var err error
			raw, err = client.CoreV1().Pods(ns).GetLogs(p, &corev1.PodLogOptions{}).DoRaw(t.Context())
			objects = 0
			for _, line := range strings.Split(string(raw), "\n") {
				var obj map[string]any
				if json.Unmarshal([]byte(line), &obj) == nil && obj["msg"] != nil {
					objects++
				}
			}
			return objects > 0, err
		})
		for _, line := range strings.Split(string(raw), "\n") {
			if klogText.MatchString(line) {
				t.Errorf("%s logs klog text with logging.format=json: %s", p, line)
			}
		}
	}
}

// leftovers lists the release's objects still in the cluster: everything
// the chart made carries app.kubernetes.io/instance=<release>.
func leftovers(t *testing.T, ns string) []string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(adminConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + helmRelease}
	var left []string
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// Pods end after their owners are deleted: wait for them, then look.
	err = pollUntil(ctx, 500*time.Millisecond, func() (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, sel)
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		left = append(left, "pods still running")
	}
	for _, r := range []struct {
		gvr        schema.GroupVersionResource
		namespaced bool
	}{
		{appsv1.SchemeGroupVersion.WithResource("daemonsets"), true},
		{appsv1.SchemeGroupVersion.WithResource("deployments"), true},
		{appsv1.SchemeGroupVersion.WithResource("replicasets"), true},
		{corev1.SchemeGroupVersion.WithResource("pods"), true},
		{corev1.SchemeGroupVersion.WithResource("services"), true},
		{corev1.SchemeGroupVersion.WithResource("serviceaccounts"), true},
		{corev1.SchemeGroupVersion.WithResource("configmaps"), true},
		{schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}, true},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, true},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, true},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, false},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, false},
	} {
		var ri dynamic.ResourceInterface = dyn.Resource(r.gvr)
		if r.namespaced {
			ri = dyn.Resource(r.gvr).Namespace(ns)
		}
		l, err := ri.List(ctx, sel)
		if err != nil {
			t.Errorf("listing %s: %v", r.gvr.Resource, err)
			continue
		}
		for _, o := range l.Items {
			left = append(left, r.gvr.Resource+"/"+o.GetName())
		}
	}
	return left
}
