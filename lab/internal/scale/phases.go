package scale

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/lab/internal/lab/kwok"
)

// WebhookName is snug's pod admission webhook as the chart names it
// (charts/snug/templates/admission.yaml), the name label of the API
// server's webhook metrics.
const WebhookName = "pods.admission.snug.dev"

// createdLabel marks the pods the creation phase made.
const createdLabel = "snug-scale-created"

// Creation is one rate of the creation phase: pods created through the
// admission webhook at Rate per second for a while.
type Creation struct {
	// Rate is the pods per second asked for; Created how many were, and
	// Achieved the rate they came at (creates answered per second of the
	// phase).
	Rate     int
	Created  int
	Failed   int
	Achieved float64
	// CreateP50 and CreateP99 are the creates' own latencies, as this
	// client saw them: the API server's whole admission, snug's webhook in
	// it.
	CreateP50, CreateP99 time.Duration
	// WebhookP50 and WebhookP99 are snug's webhook call as the API server
	// timed it (apiserver_admission_webhook_admission_duration_seconds,
	// interpolated in its buckets: 5, 25, 100, 500 ms...); Under25ms and
	// Under100ms are the shares of calls at most 25 and 100 ms, exact (a
	// bucket bound). Calls counts them.
	WebhookP50, WebhookP99 time.Duration
	Under25ms, Under100ms  float64
	Calls                  float64
	// HandlerP50 and HandlerP99 are the webhook's own handling time, as
	// its replicas timed it (snug_admission_request_duration_seconds,
	// summed over them; buckets 0.1 ms to 1 s), from the request's headers to
	// the response handed to net/http (the socket write and TLS after it);
	// HandlerCalls counts them. The API server's
	// figure less this one is the call's transport, TLS and queueing on
	// both ends.
	HandlerP50, HandlerP99 time.Duration
	HandlerCalls           float64
}

// create runs the creation phase at each rate: pods of the bench's groups
// (so that the webhook sizes them from their policy's checkpoint) without a
// node, for the scheduler to place on the kwok nodes; after each rate they
// are deleted and gone before the next.
func create(ctx context.Context, cs kubernetes.Interface, ns string, groups int, rates []int, each time.Duration,
	scrape func(context.Context) (Scrape, error), logf func(string, ...any)) ([]Creation, error) {
	var out []Creation
	for _, rate := range rates {
		before, err := scrape(ctx)
		if err != nil {
			return out, err
		}
		c := Creation{Rate: rate}
		n := int(math.Round(float64(rate) * each.Seconds()))
		lat := make([]time.Duration, 0, n)
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		tick := time.NewTicker(time.Second / time.Duration(rate))
		for i := range n {
			if i > 0 {
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
			}
			if ctx.Err() != nil {
				break
			}
			wg.Go(func() {
				p := createdPod(rate, i, groups)
				t0 := time.Now()
				_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
				d := time.Since(t0)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					c.Failed++
					if c.Failed == 1 {
						logf("creating %s: %v", p.Name, err)
					}
					return
				}
				c.Created++
				lat = append(lat, d)
			})
		}
		tick.Stop()
		wg.Wait()
		secs := time.Since(start).Seconds()
		after, err := scrape(ctx)
		if err != nil {
			return out, err
		}
		slices.Sort(lat)
		c.Achieved = float64(c.Created) / secs
		c.CreateP50, c.CreateP99 = quantile(lat, 0.5), quantile(lat, 0.99)
		c.webhookFrom(before, after)
		logf("creation at %d pods/s: %d created (%d failed) at %.1f/s; create p50 %.1fms p99 %.1fms; webhook %v calls, p50 %.1fms p99 %.1fms, %.1f%% within 25ms; its handler %v calls, p50 %.2fms p99 %.2fms",
			rate, c.Created, c.Failed, c.Achieved, ms(c.CreateP50), ms(c.CreateP99), c.Calls, ms(c.WebhookP50), ms(c.WebhookP99), 100*c.Under25ms,
			c.HandlerCalls, ms(c.HandlerP50), ms(c.HandlerP99))
		out = append(out, c)
		if err := deleteCreated(ctx, cs, ns); err != nil {
			return out, err
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// webhookFrom reads snug's webhook calls between two scrapes of the API
// server's metrics.
func (c *Creation) webhookFrom(before, after Scrape) {
	const name = "apiserver_admission_webhook_admission_duration_seconds"
	ours := func(m *dto.Metric) bool { return label(m, "name") == WebhookName }
	fb, fa := families(before.APIServer), families(after.APIServer)
	b, a := buckets(fb, name, ours), buckets(fa, name, ours)
	total := samples(fa, name, ours) - samples(fb, name, ours)
	c.Calls = total
	if total <= 0 {
		return
	}
	c.Under25ms = (a[0.025] - b[0.025]) / total
	c.Under100ms = (a[0.1] - b[0.1]) / total
	quantiles(b, a, &c.WebhookP50, &c.WebhookP99)
	c.handlerFrom(before.Webhooks, after.Webhooks)
}

// handlerFrom reads the webhook's own handling time between two scrapes
// of its replicas' metrics: a replica's counts are its own since its
// start, so one absent from the first scrape, or whose count went down
// (its container restarted), counts from zero. A replica gone by the
// second scrape is left out, its calls with it.
func (c *Creation) handlerFrom(before, after map[string]string) {
	const name = "snug_admission_request_duration_seconds"
	b, a := map[float64]float64{}, map[float64]float64{}
	for pod, text := range after {
		fa := families(text)
		n := samples(fa, name, nil)
		for le, v := range buckets(fa, name, nil) {
			a[le] += v
		}
		c.HandlerCalls += n
		if t, ok := before[pod]; ok {
			fb := families(t)
			if nb := samples(fb, name, nil); nb <= n {
				for le, v := range buckets(fb, name, nil) {
					b[le] += v
				}
				c.HandlerCalls -= nb
			}
		}
	}
	if c.HandlerCalls > 0 {
		quantiles(b, a, &c.HandlerP50, &c.HandlerP99)
	}
}

// quantiles sets p50 and p99 from the difference of two cumulative bucket
// sets, where it is defined.
func quantiles(before, after map[float64]float64, p50, p99 *time.Duration) {
	for _, q := range []struct {
		q float64
		d *time.Duration
	}{{0.5, p50}, {0.99, p99}} {
		if v := histogramQuantile(q.q, before, after); !math.IsNaN(v) {
			*q.d = time.Duration(v * float64(time.Second))
		}
	}
}

// createdPod is the creation phase's pod i at rate: the bench pod's
// resources under group i%groups, placed by the scheduler.
func createdPod(rate, i, groups int) *corev1.Pod {
	rr := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("created-%d-%05d", rate, i),
			Labels: map[string]string{"snug-scale-group": fmt.Sprint(i % max(groups, 1)), createdLabel: "true"},
		},
		Spec: corev1.PodSpec{
			Tolerations:                   []corev1.Toleration{kwok.Toleration},
			NodeSelector:                  map[string]string{"type": "kwok"},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "app", Image: "kwok", Resources: rr}},
		},
	}
}

// deleteCreated deletes the creation phase's pods and waits until they are
// gone.
func deleteCreated(ctx context.Context, cs kubernetes.Interface, ns string) error {
	sel := metav1.ListOptions{LabelSelector: createdLabel + "=true"}
	// Up to a thousand pods: on 2 cores the collection's delete can
	// outlast the API server's request timeout while it goes on; the wait
	// below sees it through (as cleanup does).
	err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, sel)
	if err != nil && !apierrors.IsServerTimeout(err) && !apierrors.IsTimeout(err) {
		return fmt.Errorf("deleting the created pods: %w", err)
	}
	left := 0
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		o := sel
		o.ResourceVersion = "0"
		list, err := cs.CoreV1().Pods(ns).List(ctx, o)
		if err != nil {
			return false, nil
		}
		left = len(list.Items)
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the created pods to go (%d left): %w", left, err)
	}
	return nil
}

// Failover is the leader kill's figures.
type Failover struct {
	// Killed and Leader are the controller pods before and after.
	Killed, Leader string
	// Takeover is from the kill to another replica holding the Lease;
	// StatusLag from the kill (and a policy's spec changed at once) to
	// that policy's status observing the change.
	Takeover, StatusLag time.Duration
}

// failover kills the leading controller, changes the spec of policy at
// once, and times the takeover and the status.
func failover(ctx context.Context, pc *policyclient.Client, ns, policy string,
	kill func(context.Context) (string, error), waitLeader func(context.Context, string) (string, error)) (Failover, error) {
	var f Failover
	killed, err := kill(ctx)
	if err != nil {
		return f, err
	}
	start := time.Now()
	f.Killed = killed
	// A change of spec that sizes nothing differently: a 64-core cap. The
	// new leader may write the policy's status meanwhile: a conflict reads
	// it again.
	var p *v1alpha1.SnugPolicy
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pc.SnugPolicies(ns).Get(ctx, policy, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.ResourcePolicy = &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
			ContainerName: "*", MaxAllowed: &v1alpha1.ResourceAmounts{CPU: ptr.To(resource.MustParse("64"))},
		}}}
		p, err = pc.SnugPolicies(ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return f, fmt.Errorf("changing policy %s: %w", policy, err)
	}
	gen := p.Generation
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	leaderc := make(chan error, 1)
	go func() {
		leader, err := waitLeader(wctx, killed)
		f.Leader, f.Takeover = leader, time.Since(start)
		leaderc <- err
	}()
	err = wait.PollUntilContextCancel(wctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := pc.SnugPolicies(ns).Get(ctx, policy, metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration >= gen, nil
	})
	if err != nil {
		err = fmt.Errorf("waiting for policy %s's status to observe generation %d after the leader kill: %w", policy, gen, err)
	}
	f.StatusLag = time.Since(start)
	if lerr := <-leaderc; lerr != nil && err == nil {
		err = lerr
	}
	return f, err
}

// Rollout is the agent rollout's figures: every hollow agent stopped and
// started again at once (the worst case of a DaemonSet's update: all
// nodes at once).
type Rollout struct {
	// Ready is from the new agents' start to all of them synced.
	Ready time.Duration
	// Writes are the new agents' writes by kind over the window after
	// the start, per second; WritesPerNode their total per node.
	Writes        map[Request]float64
	WritesPerNode float64
	Window        time.Duration
}
