package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/snug-dev/snug/internal/kube"
	"github.com/snug-dev/snug/internal/resize"
)

// What a pod's namespace allows a resize (resize.Input.Namespace) comes
// from two places. LimitRanges change when an administrator edits one, so
// every agent watches them (WatchLimitRanges). A ResourceQuota's
// status.used changes with every pod created, resized or deleted in its
// namespace; watching them on every node would send each of those changes
// to every agent. So quotas are read on demand (ListQuotas): only when a
// planned resize grows something, one LIST of the pod's namespace, off the
// loop, used for quotaFresh, and read again after the API server refused a
// resize. The grow waits for the read (one round trip); it is then planned
// at once (Settle), not at the next pass.

// quotaFresh is how long a read of a namespace's ResourceQuotas is used to
// plan grows. Other pods of the namespace may use the room meanwhile: the
// API server then refuses the grow, the read is dropped, and the next plan
// reads again.
const quotaFresh = 10 * time.Second

// quotaReadTimeout bounds one LIST of a namespace's ResourceQuotas.
const quotaReadTimeout = 5 * time.Second

// WatchLimitRanges runs an informer over every namespace's LimitRanges
// (managedFields dropped) and returns a function that reads one
// namespace's from its cache. It returns once they are listed, or with an
// error after syncTimeout (no permission, an API server that is down); the
// informer keeps trying, and until it has listed them the function returns
// none.
func WatchLimitRanges(ctx context.Context, client *kube.Client, syncTimeout time.Duration) (func(ns string) []corev1.LimitRange, error) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.LimitRanges(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.LimitRanges(metav1.NamespaceAll).Watch(ctx, o)
		},
	}, &corev1.LimitRange{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := inf.SetTransform(kube.StripManagedFields); err != nil {
		return nil, err
	}
	go inf.RunWithContext(ctx)
	lister := corelisters.NewLimitRangeLister(inf.GetIndexer())
	read := func(ns string) []corev1.LimitRange {
		if !inf.HasSynced() {
			return nil
		}
		lrs, _ := lister.LimitRanges(ns).List(labels.Everything())
		out := make([]corev1.LimitRange, 0, len(lrs))
		for _, lr := range lrs {
			out = append(out, *lr)
		}
		return out
	}
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		return read, fmt.Errorf("listing LimitRanges: not done after %v (planning without them until they are): %w", syncTimeout, context.Cause(syncCtx))
	}
	return read, nil
}

// ListQuotas returns a function that lists one namespace's ResourceQuotas.
func ListQuotas(client *kube.Client) func(ctx context.Context, ns string) ([]corev1.ResourceQuota, error) {
	return func(ctx context.Context, ns string) ([]corev1.ResourceQuota, error) {
		l, err := client.ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing the ResourceQuotas of namespace %s: %w", ns, err)
		}
		return l.Items, nil
	}
}

// quotaRead is one read of a namespace's quotas; err is set when it failed
// (grows are then planned without them for quotaFresh, the API server
// still checking them).
type quotaRead struct {
	ns     string
	quotas []corev1.ResourceQuota
	at     time.Time
	err    error
}

// namespaceFor returns what the pod's namespace allows as far as the
// agent knows it, and whether it knows the quotas (a fresh read, or no
// quota reading configured).
func (d *Decider) namespaceFor(pod *corev1.Pod, now time.Time) (*resize.Namespace, bool) {
	var lrs []corev1.LimitRange
	if d.cfg.LimitRanges != nil {
		lrs = d.cfg.LimitRanges(pod.Namespace)
	}
	if d.cfg.ListQuotas == nil {
		return namespaceOf(pod, nil, lrs), true
	}
	r, ok := d.quotas[pod.Namespace]
	if !ok || now.Sub(r.at) >= quotaFresh {
		return namespaceOf(pod, nil, lrs), false
	}
	return namespaceOf(pod, r.quotas, lrs), true
}

// namespaceInputs names what the planner fits pod's namespace to: each
// LimitRange and, as of the agent's latest read of them, each
// ResourceQuota, by name and resourceVersion (a quota's usage moving
// changes it). Equal inputs and an equal patch are an equal plan, which a
// refusal keeps from going out again. A read's age does not count: a grow
// is planned on a fresh read, so its inputs are current; a shrink, planned
// without one, on the latest read.
func (d *Decider) namespaceInputs(ns string) string {
	var parts []string
	if d.cfg.LimitRanges != nil {
		for _, lr := range d.cfg.LimitRanges(ns) {
			parts = append(parts, "limitrange/"+lr.Name+"@"+lr.ResourceVersion)
		}
	}
	slices.Sort(parts)
	if q := d.quotaVersions[ns]; q != "" {
		parts = append(parts, q)
	}
	return strings.Join(parts, ",")
}

// quotaInputs names quotas by name and resourceVersion, sorted.
func quotaInputs(qs []corev1.ResourceQuota) string {
	parts := []string{"quotas read"}
	for _, q := range qs {
		parts = append(parts, "resourcequota/"+q.Name+"@"+q.ResourceVersion)
	}
	slices.Sort(parts[1:])
	return strings.Join(parts, ",")
}

// readQuotas starts a read of namespace ns's quotas unless one runs (the
// executor's key); tookQuotas takes its result in.
func (d *Decider) readQuotas(ctx context.Context, ns string) {
	d.fx.start(ctx, "quotas/"+ns, func(ctx context.Context) settleFunc {
		rctx, cancel := context.WithTimeout(ctx, quotaReadTimeout)
		qs, err := d.cfg.ListQuotas(rctx, ns)
		cancel()
		r := quotaRead{ns: ns, quotas: qs, at: d.clock.Now(), err: err}
		return func(ctx context.Context, log logr.Logger) { d.tookQuotas(ctx, log, r) }
	})
}

// tookQuotas keeps a finished read and plans the pods whose grow waited
// for it (AwaitingQuota). Loop only.
func (d *Decider) tookQuotas(ctx context.Context, log logr.Logger, r quotaRead) {
	d.quotas[r.ns] = r
	if r.err != nil {
		log.Error(r.err, "planning grows without the namespace's ResourceQuotas", "namespace", r.ns, "for", quotaFresh)
	} else {
		d.quotaVersions[r.ns] = quotaInputs(r.quotas)
	}
	now := d.clock.Now()
	for uid, st := range d.pods {
		if st.ns != r.ns || !st.fire(evQuotaRead) {
			continue
		}
		pod, err := d.podOf(uid, st.ns, st.name)
		if err != nil || !st.actuates() || d.sender == nil {
			st.fire(evHold)
			continue
		}
		st.fire(d.plan(ctx, log, st, pod, now))
	}
}

// expireQuotas forgets the reads older than quotaFresh. Loop only.
func (d *Decider) expireQuotas(now time.Time) {
	for ns, r := range d.quotas {
		if now.Sub(r.at) >= quotaFresh {
			delete(d.quotas, ns)
		}
	}
}

// namespaceOf is what quotas and ranges, the objects of pod's namespace,
// constrain its resize to; nil when there are none.
func namespaceOf(pod *corev1.Pod, quotas []corev1.ResourceQuota, ranges []corev1.LimitRange) *resize.Namespace {
	if len(quotas) == 0 && len(ranges) == 0 {
		return nil
	}
	ns := &resize.Namespace{LimitRanges: ranges}
	if len(quotas) > 0 {
		ns.QuotaRoom = resize.QuotaRoom(pod, quotas)
	}
	return ns
}

// planGrows reports whether the plan raises any request or limit of the
// pod's spec.
func planGrows(pod *corev1.Pod, p *resize.Plan) bool {
	for _, c := range p.Containers {
		spec := specOf(pod, c.Name)
		if spec == nil {
			continue
		}
		for _, pair := range []struct{ next, cur corev1.ResourceList }{
			{c.Requests, spec.Requests}, {c.Limits, spec.Limits},
		} {
			for name, q := range pair.next {
				cur, ok := pair.cur[name]
				if !ok || q.Cmp(cur) > 0 {
					return true
				}
			}
		}
	}
	return false
}
