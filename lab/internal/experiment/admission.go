package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/policy"
	"github.com/snug-dev/snug/internal/recommend"
)

// AdmissionBenchOptions configure BenchAdmission.
type AdmissionBenchOptions struct {
	// Pods is how many pod creates each run sends; Concurrency how many at
	// once.
	Pods, Concurrency int
	// Config, when set, makes the creates' own client without client-side
	// rate limiting (QPS and burst 1000); otherwise the given client's
	// limiter (client-go's default: 5 per second) bounds pods/s.
	Config *rest.Config
}

// AdmissionRun is one run's figures: client-side latency of a dry-run pod
// create (API server and, unless opted out, the webhook).
type AdmissionRun struct {
	Name          string
	Pods, Sized   int
	Errors        int
	Seconds       float64
	PodsPerSecond float64
	P50, P99, Max time.Duration
}

// AdmissionBench is BenchAdmission's result.
type AdmissionBench struct {
	// Through is the run through the webhook (pods of a workload with
	// learnt history, each sized); Bypass the same pods opted out
	// (autoscaling.snug.dev/admission=disabled), which the API server
	// does not send to it.
	Through, Bypass AdmissionRun
}

// BenchAdmission measures pod creation through snug's admission webhook
// (installed, serving) against the same creation opted out of it: dry-run
// creates (dryRun=All: admission runs, nothing is stored or scheduled) of
// a pod covered by a policy whose checkpoint holds an hour of history, in
// a namespace of its own, deleted afterwards.
func BenchAdmission(ctx context.Context, client kubernetes.Interface, pc *policyclient.Client, o AdmissionBenchOptions) (AdmissionBench, error) {
	if o.Pods < 1 || o.Concurrency < 1 {
		return AdmissionBench{}, errors.New("bench admission: pods and concurrency must be positive")
	}
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "snug-bench-admission-"}}, metav1.CreateOptions{})
	if err != nil {
		return AdmissionBench{}, fmt.Errorf("creating the bench namespace: %w", err)
	}
	defer func() { _ = DeleteNamespace(context.WithoutCancel(ctx), client, ns.Name, 2*time.Minute) }()
	pol, err := pc.SnugPolicies(ns.Name).Create(ctx, &v1alpha1.SnugPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: v1alpha1.SnugPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "bench"}}}}, metav1.CreateOptions{})
	if err != nil {
		return AdmissionBench{}, fmt.Errorf("creating the bench policy: %w", err)
	}
	if err := WriteLearntCheckpoint(ctx, client, pol, 100, 24<<20, time.Now()); err != nil {
		return AdmissionBench{}, err
	}
	// Wait until the webhook sizes (its caches have the policy and the
	// checkpoint, the API server trusts its certificate).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := createDryRun(ctx, client, ns.Name, false)
		if err == nil && p.Annotations[history.AdmissionAnnotation] != "" {
			break
		}
		if time.Now().After(deadline) {
			return AdmissionBench{}, fmt.Errorf("the webhook sized no pod in 2 min (last error: %v)", err)
		}
		select {
		case <-ctx.Done():
			return AdmissionBench{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	if o.Config != nil {
		cfg := rest.CopyConfig(o.Config)
		cfg.QPS, cfg.Burst = 1000, 1000
		if client, err = kubernetes.NewForConfig(cfg); err != nil {
			return AdmissionBench{}, err
		}
	}
	var b AdmissionBench
	if b.Through, err = runAdmission(ctx, client, ns.Name, "through the webhook", false, o); err != nil {
		return b, err
	}
	if b.Bypass, err = runAdmission(ctx, client, ns.Name, "opted out (no webhook call)", true, o); err != nil {
		return b, err
	}
	return b, nil
}

func runAdmission(ctx context.Context, client kubernetes.Interface, ns, name string, optOut bool, o AdmissionBenchOptions) (AdmissionRun, error) {
	r := AdmissionRun{Name: name, Pods: o.Pods}
	lat := make([]time.Duration, 0, o.Pods)
	var mu sync.Mutex
	next := make(chan struct{}, o.Pods)
	for range o.Pods {
		next <- struct{}{}
	}
	close(next)
	start := time.Now()
	var wg sync.WaitGroup
	for range o.Concurrency {
		wg.Go(func() {
			for range next {
				t0 := time.Now()
				p, err := createDryRun(ctx, client, ns, optOut)
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					r.Errors++
				} else {
					lat = append(lat, d)
					if p.Annotations[history.AdmissionAnnotation] != "" {
						r.Sized++
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	if len(lat) == 0 {
		return r, fmt.Errorf("bench admission %s: every create failed", name)
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	r.P50, r.P99, r.Max = pct(0.50), pct(0.99), lat[len(lat)-1]
	r.PodsPerSecond = float64(len(lat)) / r.Seconds
	return r, nil
}

func createDryRun(ctx context.Context, client kubernetes.Interface, ns string, optOut bool) (*corev1.Pod, error) {
	l := map[string]string{"app": "bench"}
	if optOut {
		l["autoscaling.snug.dev/admission"] = "disabled"
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-", Labels: l},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{
				Name: "app", Image: BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
		},
	}
	return client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}

// WriteLearntCheckpoint writes pol's checkpoint ConfigMap as the
// controller keeps it, holding an hour of history at cpuMillis and
// memBytes for container "app" as the merged history of pods that are gone
// (retired), which the controller keeps folding into the aggregate.
func WriteLearntCheckpoint(ctx context.Context, client kubernetes.Interface, pol *v1alpha1.SnugPolicy, cpuMillis, memBytes float64, now time.Time) error {
	a := recommend.NewAggregate(policy.HistoryConfig(pol))
	for s := 0; s < 3600; s += 10 {
		at := now.Add(-time.Duration(3600-s) * time.Second)
		a.CPU.Add(cpuMillis, 10, at)
		a.Memory.Add(memBytes, 10, at)
	}
	a.CPUSeconds, a.MemorySeconds = 3600, 3600
	a.MemoryPeakBytes, a.MemoryPeakTime = int64(memBytes), now.Add(-time.Minute)
	text, err := a.MarshalText()
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: history.CheckpointName(pol.Name), Namespace: pol.Namespace,
			Labels:          map[string]string{"app.kubernetes.io/managed-by": "snug", "autoscaling.snug.dev/policy": pol.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SnugPolicy", Name: pol.Name, UID: pol.UID}}},
		Data: map[string]string{history.AggregateKey("app"): string(text), "retired.app": string(text), "pods.json": "{}"},
	}
	// The controller may have written it first (empty): replace its data.
	for range 5 {
		_, err = client.CoreV1().ConfigMaps(pol.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			break
		}
		cur, gerr := client.CoreV1().ConfigMaps(pol.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
		if gerr != nil {
			err = gerr
			continue
		}
		cur.Data = cm.Data
		if _, err = client.CoreV1().ConfigMaps(pol.Namespace).Update(ctx, cur, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("writing checkpoint %s: %w", cm.Name, err)
	}
	return nil
}

// Print writes the bench's table.
func (b AdmissionBench) Print(w io.Writer, o AdmissionBenchOptions) {
	fmt.Fprintf(w, "pod CREATE (dry run), %d pods, %d at once:\n", o.Pods, o.Concurrency)
	fmt.Fprintf(w, "  %-30s %8s %8s %9s %9s %9s %7s\n", "", "pods/s", "sized", "p50", "p99", "max", "errors")
	for _, r := range []AdmissionRun{b.Through, b.Bypass} {
		fmt.Fprintf(w, "  %-30s %8.1f %8d %9s %9s %9s %7d\n", r.Name, r.PodsPerSecond, r.Sized, ms(r.P50), ms(r.P99), ms(r.Max), r.Errors)
	}
	fmt.Fprintf(w, "  webhook's share: p50 +%s, p99 +%s\n", ms(b.Through.P50-b.Bypass.P50), ms(b.Through.P99-b.Bypass.P99))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
