//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/lab/internal/experiment"
)

// The learnt history the admission tests write into a workload's
// checkpoint: an hour at about admissionCPUMillis and admissionMemBytes.
const (
	admissionCPUMillis = 100
	admissionMemBytes  = 24 << 20
)

// TestAdmission installs snug with its chart (the webhook on by default)
// and holds new-pod sizing to docs/controller.md, "New pods: one owner":
// a learnt Deployment scaled from 1 to 3 starts its new pods at the learnt
// size (the annotation says what changed, the policy has an event) and the
// agent resizes none of them in their first minute; the same Deployment
// opted out of admission starts them at the template's size and the agent
// grows each from the seed. A Guaranteed template stays Guaranteed, and a
// pod in snug's own namespace is never sent to the webhook.
func TestAdmission(t *testing.T) {
	pc := installPolicyCRD(t)
	ag := installSnug(t, snugInstall{})
	ns := testNamespace(t, "snug-adm-")

	// Two workloads with the same template and history; the second opted
	// out of admission by the pod label.
	for _, w := range []struct {
		name   string
		optOut bool
	}{{"web", false}, {"optout", true}} {
		createPolicy(t, pc, ns, w.name, v1alpha1.SnugPolicySpec{TargetRef: deploymentRef(w.name),
			UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace}})
		writeLearntCheckpoint(t, pc, ns, w.name)
		createAdmissionDeployment(t, ns, w.name, 1, false, w.optOut)
	}
	createPolicy(t, pc, ns, "guaranteed", v1alpha1.SnugPolicySpec{TargetRef: deploymentRef("guaranteed"),
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate}})
	writeLearntCheckpoint(t, pc, ns, "guaranteed")
	waitAdmissionServing(t, pc, ns)
	start := time.Now()
	first := map[string][]corev1.Pod{"web": readyPods(t, ns, "web", 1), "optout": readyPods(t, ns, "optout", 1)}
	for _, w := range []string{"web", "optout"} {
		waitPolicy(t, pc, ns, w, "resolved", func(p *v1alpha1.SnugPolicy) bool { return p.Status.Selector != "" })
		scaleDeployment(t, ns, w, 3)
	}
	createResolvedDeployment(t, pc, ns, "guaranteed", 1, true)

	resizes := map[string][]int{}
	for _, w := range []string{"web", "optout"} {
		for _, p := range readyPods(t, ns, w, 3) {
			if slices.ContainsFunc(first[w], func(f corev1.Pod) bool { return f.UID == p.UID }) {
				continue
			}
			n := resizesInFirstMinute(t, ag, &p)
			resizes[w] = append(resizes[w], n)
			req := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
			a, sized, err := history.ParseAdmission(&p)
			if err != nil {
				t.Errorf("pod %s: %v", p.Name, err)
			}
			t.Logf("%s: new pod %s created with cpu request %s (annotation: %v %s), %d resizes in its first minute", w, p.Name, req.String(), sized, a, n)
			switch w {
			case "web":
				if !sized || a.Policy != "web" {
					t.Errorf("pod %s carries no admission annotation of policy web: %v", p.Name, p.Annotations)
				}
				if req.MilliValue() < admissionCPUMillis {
					t.Errorf("pod %s starts at cpu %s, want the learnt %dm or more", p.Name, req.String(), admissionCPUMillis)
				}
				if n != 0 {
					t.Errorf("pod %s sized at admission was resized %d times in its first minute", p.Name, n)
				}
			case "optout":
				// Created at the template's 50m (readyPods shows it after
				// the agent's grow): not sized, and grown by the seed.
				if sized || n == 0 {
					t.Errorf("opted-out pod %s: annotation %v, %d resizes; want unsized, grown by the agent", p.Name, sized, n)
				}
			}
		}
	}
	t.Logf("resizes of new pods in their first minute: with admission %v, without (opted out, seeded by the agent) %v; scale-up to 3 took %.0fs",
		resizes["web"], resizes["optout"], time.Since(start).Seconds())
	if total(resizes["optout"]) == 0 {
		t.Errorf("the opted-out pods were never grown from the seed; the comparison shows nothing")
	}
	waitEvent(t, ns, "web", "SizedAtAdmission")

	// Guaranteed stays Guaranteed, at the learnt size.
	g := readyPods(t, ns, "guaranteed", 1)[0]
	c := g.Spec.Containers[0].Resources
	if g.Status.QOSClass != corev1.PodQOSGuaranteed || !c.Requests.Cpu().Equal(*c.Limits.Cpu()) || !c.Requests.Memory().Equal(*c.Limits.Memory()) {
		t.Errorf("guaranteed pod %s: QoS %s, resources %v", g.Name, g.Status.QOSClass, c)
	}
	if _, ok := g.Annotations[history.AdmissionAnnotation]; !ok || c.Requests.Cpu().MilliValue() == 500 {
		t.Errorf("guaranteed pod %s not sized at admission: cpu %s, annotations %v", g.Name, c.Requests.Cpu(), g.Annotations)
	}
	t.Logf("guaranteed pod %s: %s/%s cpu, %s/%s memory, QoS %s", g.Name, c.Requests.Cpu(), c.Limits.Cpu(), c.Requests.Memory(), c.Limits.Memory(), g.Status.QOSClass)

	// snug's own namespace is excluded: a pod there matching a policy
	// there, with history, is admitted as written.
	createPolicy(t, pc, "snug-system", "excluded", v1alpha1.SnugPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "excluded"}}})
	t.Cleanup(func() {
		_ = pc.SnugPolicies("snug-system").Delete(context.Background(), "excluded", metav1.DeleteOptions{})
	})
	writeLearntCheckpoint(t, pc, "snug-system", "excluded")
	if p := dryRunPod(t, "snug-system", "excluded"); p.Annotations[history.AdmissionAnnotation] != "" || p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 50 {
		t.Errorf("a pod in snug-system was sized: %v %v", p.Annotations, p.Spec.Containers[0].Resources)
	}

	// The webhook's cost: dry-run creates through it and opted out.
	cfg, err := clientcmd.BuildConfigFromFlags("", labOpts.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	bo := experiment.AdmissionBenchOptions{Pods: 400, Concurrency: 8, Config: cfg}
	b, err := experiment.BenchAdmission(t.Context(), client, pc, bo)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	b.Print(&sb, bo)
	t.Log("\n" + sb.String())
	if b.Through.Sized != b.Through.Pods-b.Through.Errors || b.Bypass.Sized != 0 {
		t.Errorf("sized %d of %d through the webhook, %d opted out; want all and none", b.Through.Sized, b.Through.Pods, b.Bypass.Sized)
	}
}

func total(n []int) int {
	s := 0
	for _, v := range n {
		s += v
	}
	return s
}

// writeLearntCheckpoint writes policy name's checkpoint with an hour of
// history at admissionCPUMillis and admissionMemBytes.
func writeLearntCheckpoint(t *testing.T, pc *policyclient.Client, ns, name string) {
	t.Helper()
	pol, err := pc.SnugPolicies(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := experiment.WriteLearntCheckpoint(t.Context(), client, pol, admissionCPUMillis, admissionMemBytes, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// admissionPod is the template of the admission tests' workloads: busybox
// sleeping, cpu 50m request / 1 limit, memory 16Mi/64Mi (or 500m and
// 64Mi each when guaranteed), resizable in place.
func admissionPod(name string, guaranteed, optOut bool) corev1.PodTemplateSpec {
	l := map[string]string{"app": name}
	if optOut {
		l["autoscaling.snug.dev/admission"] = "disabled"
	}
	r := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	if guaranteed {
		r.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
		r.Limits = r.Requests.DeepCopy()
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: l},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{
				Name: "app", Image: experiment.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "3600"}, Resources: r,
				ResizePolicy: []corev1.ContainerResizePolicy{
					{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
					{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired},
				},
			}},
		},
	}
}

// createResolvedDeployment creates the Deployment at 0 replicas, waits
// until the controller has resolved its policy's status.selector (which
// the webhook and the agent cover pods by; a pod created before that is
// not the policy's yet) and scales it to replicas.
func createResolvedDeployment(t *testing.T, pc *policyclient.Client, ns, name string, replicas int32, guaranteed bool) {
	t.Helper()
	createAdmissionDeployment(t, ns, name, 0, guaranteed, false)
	waitPolicy(t, pc, ns, name, "resolved", func(p *v1alpha1.SnugPolicy) bool { return p.Status.Selector != "" })
	if replicas > 0 {
		scaleDeployment(t, ns, name, replicas)
	}
}

func createAdmissionDeployment(t *testing.T, ns, name string, replicas int32, guaranteed, optOut bool) {
	t.Helper()
	tmpl := admissionPod(name, guaranteed, optOut)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: tmpl,
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating deployment %s: %v", name, err)
	}
}

func scaleDeployment(t *testing.T, ns, name string, n int32) {
	t.Helper()
	// A Deployment just created is still being written by its
	// controller: a conflict is retried on the latest version.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := client.AppsV1().Deployments(ns).GetScale(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = n
		_, err = client.AppsV1().Deployments(ns).UpdateScale(t.Context(), name, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("scaling %s to %d: %v", name, n, err)
	}
}

// dryRunPod creates a pod of workload name's template with dryRun=All: it
// goes through admission, and nothing is stored.
func dryRunPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	tmpl := admissionPod(name, false, false)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-", Labels: tmpl.Labels}, Spec: tmpl.Spec}
	out, err := client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run create in %s: %v", ns, err)
	}
	return out
}

// waitAdmissionServing waits until the API server reaches the webhook
// with a trusted certificate: a dry-run pod of a selector policy with
// history comes back sized (the leader has written the Secret and the
// caBundle, a replica is ready behind the Service).
func waitAdmissionServing(t *testing.T, pc *policyclient.Client, ns string) {
	t.Helper()
	const probe = "admission-probe"
	if _, err := pc.SnugPolicies(ns).Get(t.Context(), probe, metav1.GetOptions{}); err != nil {
		createPolicy(t, pc, ns, probe, v1alpha1.SnugPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": probe}}})
		writeLearntCheckpoint(t, pc, ns, probe)
	}
	start := time.Now()
	waitFor(t, "the webhook sizing a dry-run pod", 2*time.Minute, func() (bool, error) {
		return dryRunPod(t, ns, probe).Annotations[history.AdmissionAnnotation] != "", nil
	})
	t.Logf("webhook serving %.1fs after the test asked", time.Since(start).Seconds())
}

// resizesInFirstMinute waits until the pod's container has run for a
// minute and counts the resizes the agent decided for it in that minute.
func resizesInFirstMinute(t *testing.T, ag *agentProc, p *corev1.Pod) int {
	t.Helper()
	var started time.Time
	waitFor(t, fmt.Sprintf("pod %s running", p.Name), time.Minute, func() (bool, error) {
		pod := getPod(t, p.Namespace, p.Name)
		if len(pod.Status.ContainerStatuses) == 1 && pod.Status.ContainerStatuses[0].State.Running != nil {
			started = pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time
			return true, nil
		}
		return false, nil
	})
	c := ag.waitAutoscale(t, p.Namespace, p.Name, 2*time.Minute, func(c agent.ContainerJSON) bool {
		return c.Autoscale != nil && time.Since(started) >= time.Minute+2*time.Second
	})
	n := 0
	for _, r := range c.Autoscale.Resizes {
		if r.DecidedAt.Before(started.Add(time.Minute)) {
			n++
		}
	}
	return n
}

// TestAdmissionFallbacks: under Initial a pod is sized at creation and
// never resized in place; an expired certificate written into the Secret
// is replaced by the leader and the webhook sizes again; with the
// controller scaled to 0 (webhook down) a pod is still created, at its
// template's size, the agent says so (NotSizedAtAdmission) and sizes it
// from the history.
func TestAdmissionFallbacks(t *testing.T) {
	pc := installPolicyCRD(t)
	ag := installSnug(t, snugInstall{})
	ns := testNamespace(t, "snug-admfb-")
	for _, w := range []struct {
		name string
		mode v1alpha1.UpdateMode
	}{{"initial", v1alpha1.UpdateModeInitial}, {"down", v1alpha1.UpdateModeInPlace}} {
		createPolicy(t, pc, ns, w.name, v1alpha1.SnugPolicySpec{TargetRef: deploymentRef(w.name),
			UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: w.mode}})
		writeLearntCheckpoint(t, pc, ns, w.name)
	}
	waitAdmissionServing(t, pc, ns)

	// Initial: sized at creation, no resize in place, though its own
	// usage (sleep: ~0) is far below.
	createResolvedDeployment(t, pc, ns, "initial", 1, false)
	p := readyPods(t, ns, "initial", 1)[0]
	if _, ok := p.Annotations[history.AdmissionAnnotation]; !ok {
		t.Fatalf("Initial pod %s not sized at admission: %v", p.Name, p.Annotations)
	}
	n := resizesInFirstMinute(t, ag, &p)
	now := getPod(t, ns, p.Name)
	t.Logf("Initial pod %s: cpu %s at creation, %d resizes in its first minute, generation %d", p.Name, p.Spec.Containers[0].Resources.Requests.Cpu(), n, now.Generation)
	if n != 0 || !now.Spec.Containers[0].Resources.Requests.Cpu().Equal(*p.Spec.Containers[0].Resources.Requests.Cpu()) {
		t.Errorf("Initial pod %s was resized in place: %d resizes, cpu now %s", p.Name, n, now.Spec.Containers[0].Resources.Requests.Cpu())
	}

	// An expired certificate in the Secret: replaced, and sizing again.
	bad := expiredCert(t)
	sec, err := client.CoreV1().Secrets("snug-system").Get(t.Context(), "snug-admission-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data["tls.crt"], sec.Data["tls.key"] = bad[0], bad[1]
	if _, err := client.CoreV1().Secrets("snug-system").Update(t.Context(), sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, "the expired certificate replaced", time.Minute, func() (bool, error) {
		s, err := client.CoreV1().Secrets("snug-system").Get(t.Context(), "snug-admission-tls", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return string(s.Data["tls.crt"]) != string(bad[0]), nil
	})
	t.Logf("expired certificate replaced %.1fs after it was written", time.Since(start).Seconds())
	waitAdmissionServing(t, pc, ns)

	// Webhook down: no controller replica. The Deployment exists (at 0)
	// first, so that the controller resolved the policy's status.selector,
	// which the agent covers pods by.
	createResolvedDeployment(t, pc, ns, "down", 0, false)
	scaleController(t, 0)
	t.Cleanup(func() { scaleController(t, 2) })
	scaleDeployment(t, ns, "down", 1)
	d := readyPods(t, ns, "down", 1)[0]
	if _, ok := d.Annotations[history.AdmissionAnnotation]; ok || d.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 50 {
		t.Errorf("pod %s with the webhook down: annotations %v, cpu %s; want the template's 50m", d.Name, d.Annotations, d.Spec.Containers[0].Resources.Requests.Cpu())
	}
	e := waitEvent(t, ns, d.Name, "NotSizedAtAdmission")
	t.Logf("webhook down: pod %s created at 50m; event %s: %s", d.Name, e.Reason, e.Message)
	ag.waitAutoscale(t, ns, d.Name, time.Minute, func(c agent.ContainerJSON) bool {
		return len(appliedAfter(c.Autoscale, time.Time{})) > 0
	})
}

func scaleController(t *testing.T, n int32) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := client.AppsV1().Deployments("snug-system").GetScale(ctx, "snug-controller", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = n
		_, err = client.AppsV1().Deployments("snug-system").UpdateScale(ctx, "snug-controller", s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("scaling the controller to %d: %v", n, err)
	}
	waitFor(t, fmt.Sprintf("%d controller pods ready", n), 2*time.Minute, func() (bool, error) {
		pods, err := client.CoreV1().Pods("snug-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=controller"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready++
				}
			}
		}
		return ready == int(n) && len(pods.Items) == int(n), nil
	})
}

// expiredCert is a self-signed serving certificate and key (PEM) that
// expired an hour ago.
func expiredCert(t *testing.T) [2][]byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "expired"},
		DNSNames: []string{"snug-admission.snug-system.svc"}, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return [2][]byte{pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})}
}
