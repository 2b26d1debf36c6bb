package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/kube"
	"github.com/snug-dev/snug/internal/policy"
)

// Config tunes a Controller. The zero value of a field means its default.
type Config struct {
	// Workers is how many policies each concern (status, checkpoints,
	// disruption) reconciles at once. Default 2.
	Workers int
	// ResyncInterval is how often a policy is reconciled without any event,
	// to fold new snapshots and age deferrals. Default 1m.
	ResyncInterval time.Duration
	// CheckpointInterval is the least time between two writes of a
	// policy's checkpoint when only snapshots changed; a pod that came or
	// went is written at once. Default 1m.
	CheckpointInterval time.Duration
	// Clock is the controller's clock. Default the real one.
	Clock clock.WithTicker
	// Dynamic reads VerticalPodAutoscalers, for condition VPAConflict
	// (vpa.go); nil turns that off.
	Dynamic dynamic.Interface
	// VPADiscoveryInterval is how often the controller looks for the
	// VerticalPodAutoscaler API until the cluster serves it. Default 1m.
	VPADiscoveryInterval time.Duration
}

func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.ResyncInterval <= 0 {
		c.ResyncInterval = time.Minute
	}
	if c.CheckpointInterval <= 0 {
		c.CheckpointInterval = time.Minute
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.VPADiscoveryInterval <= 0 {
		c.VPADiscoveryInterval = vpaDiscoveryInterval
	}
	return c
}

// Controller reconciles SnugPolicy objects. Create it with New and call Run
// once; Run returns when its context ends.
//
// It is three reconcilers over the same informers, one per concern, each
// with its own queue of policy keys, rate limiter and workers, so that one
// concern's retries and cadence never hold another's back: checkpoints
// (fold the pods' snapshots into the policy's checkpoint, write it when
// due, and work out the recommendation), status (conditions, selector,
// the recommendation the checkpoints worked out, restart records), and
// disruption (evictions for Deferred resizes, restart windows). An event
// enqueues the policy for each, but a pod's snapshot annotation only for
// the checkpoints (onPod) and a policy's status write only that policy
// (onPolicy).
type Controller struct {
	cfg      Config
	cs       kubernetes.Interface
	pc       *policyclient.Client
	recorder record.EventRecorder
	metrics  *Metrics
	// checkpointQ, statusQ and disruptionQ are the concerns, in that
	// order in concerns.
	checkpointQ, statusQ, disruptionQ *concern
	concerns                          []*concern
	// statuses writes policies' status: pc's, or a test's.
	statuses func(namespace string) statusWriter

	factory     informers.SharedInformerFactory
	cmFactory   informers.SharedInformerFactory
	checkpoints corelisters.ConfigMapLister
	policyInf   cache.SharedIndexInformer
	// podIndex is the pod cache, indexed by label too (podLabelIndex).
	podIndex    cache.Indexer
	hpas        autoscalinglisters.HorizontalPodAutoscalerLister
	deployments appslisters.DeploymentLister
	statefuls   appslisters.StatefulSetLister
	daemons     appslisters.DaemonSetLister
	replicas    appslisters.ReplicaSetLister
	jobs        batchlisters.JobLister
	cronjobs    batchlisters.CronJobLister
	synced      []cache.InformerSynced

	// startOnce starts the informers once (Start); allSynced are then
	// their caches' HasSynced, the VPA informer's among them when the
	// cluster served VPAs at the start.
	startOnce sync.Once
	allSynced []cache.InformerSynced

	// sel keeps the policies' parsed selectors.
	sel        policy.Selectors
	mu         sync.Mutex
	lastWrites map[string]time.Time // checkpoint writes by policy key
	// recs are the recommendations the checkpoints concern worked out, by
	// policy key, for the status concern to show.
	recs map[string]recState
	// evicting holds the pods this controller evicted until its cache shows
	// them terminating or gone, so that a reconcile that runs on a cache
	// older than the eviction never evicts a second pod (nor the same one
	// twice).
	evicting map[types.UID]evictionMark
	// granted holds, by policy key, the restart window this controller
	// granted last until its cache shows it (restartWindows): a reconcile
	// on a stale cache would otherwise grant the policy's next pod too.
	granted map[string]grantMark
	// vpaStore holds the VerticalPodAutoscalers once watchVPAs watches
	// them; nil before.
	vpaStore cache.Indexer
}

// statusWriter writes a policy's status subresource.
type statusWriter interface {
	UpdateStatus(ctx context.Context, p *v1alpha1.SnugPolicy, o metav1.UpdateOptions) (*v1alpha1.SnugPolicy, error)
}

// concern is one of the controller's reconcilers: the policy keys it has
// to look at, in its own rate-limited queue, and what it does with one.
type concern struct {
	name  string
	queue workqueue.TypedRateLimitingInterface[string]
	// reconcile brings one policy up to date for this concern and returns
	// when to look again without an event (0: the resync interval).
	reconcile func(ctx context.Context, key string) (time.Duration, error)
}

// recState is what the checkpoints concern worked out for a policy, for
// the status concern.
type recState struct {
	// uid is the policy's: a policy deleted and made again under its
	// name starts afresh.
	uid types.UID
	// attempted is the last generation the checkpoints concern handled,
	// whether its checkpoint could be written or not. Until it is the
	// policy's generation, the status concern does not write a status that
	// observes that generation: the recommendation of a new spec goes out
	// with it, at once, in one write.
	attempted int64
	// rec is the last recommendation worked out, for generation.
	rec        *v1alpha1.RecommendedPodResources
	generation int64
	// failing is whether the checkpoint's last write failed (conflicts
	// aside): a streak sends one CheckpointFailed event.
	failing bool
}

// evictionMark is one eviction not yet seen in the cache.
type evictionMark struct {
	policy string
	at     time.Time
}

// evictionExpectationTTL bounds how long an eviction not yet seen in the
// cache holds further evictions of its policy back.
const evictionExpectationTTL = 2 * time.Minute

// New returns a Controller that talks to the cluster through cs and pc,
// records events with recorder and counts in m.
func New(cs kubernetes.Interface, pc *policyclient.Client, recorder record.EventRecorder, m *Metrics, cfg Config) *Controller {
	cfg = cfg.withDefaults()
	c := &Controller{
		cfg: cfg, cs: cs, pc: pc, recorder: recorder, metrics: m,
		factory: informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(cacheOnlyRead)),
		policyInf: cache.NewSharedIndexInformer(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return pc.SnugPolicies("").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return pc.SnugPolicies("").Watch(ctx, o)
			},
		}, &v1alpha1.SnugPolicy{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
		// Only snug's own ConfigMaps: the checkpoints.
		cmFactory: informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(kube.StripManagedFields),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = managedByLabel + "=snug" })),
		lastWrites: map[string]time.Time{},
		recs:       map[string]recState{},
		evicting:   map[types.UID]evictionMark{},
		granted:    map[string]grantMark{},
	}
	newConcern := func(name string, reconcile func(context.Context, string) (time.Duration, error)) *concern {
		// client-go's controller rate limiter (per key 5 ms doubling,
		// overall 10 a second in bursts of 100), but a failing key is
		// tried again at least once a resync interval, as a quiet policy
		// is looked at, not after up to 1000 s.
		limiter := workqueue.NewTypedMaxOfRateLimiter(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, cfg.ResyncInterval),
			&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
		)
		// The queue's name is its workqueue_* series' name label.
		q := workqueue.NewTypedRateLimitingQueueWithConfig(limiter,
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "snugpolicy_" + name, Clock: cfg.Clock})
		cn := &concern{name: name, queue: q, reconcile: reconcile}
		c.concerns = append(c.concerns, cn)
		return cn
	}
	c.checkpointQ = newConcern("checkpoints", c.reconcileCheckpoints)
	c.statusQ = newConcern("status", c.reconcileStatus)
	c.disruptionQ = newConcern("disruption", c.reconcileDisruption)
	c.statuses = func(ns string) statusWriter { return pc.SnugPolicies(ns) }
	cms := c.cmFactory.Core().V1().ConfigMaps()
	c.checkpoints = cms.Lister()
	c.synced = append(c.synced, cms.Informer().HasSynced)
	pods := c.factory.Core().V1().Pods()
	hpas := c.factory.Autoscaling().V2().HorizontalPodAutoscalers()
	apps := c.factory.Apps().V1()
	batch := c.factory.Batch().V1()
	c.hpas = hpas.Lister()
	utilruntime.Must(pods.Informer().AddIndexers(cache.Indexers{podLabelIndex: podLabelKeys}))
	c.podIndex = pods.Informer().GetIndexer()
	c.deployments, c.statefuls, c.daemons, c.replicas = apps.Deployments().Lister(), apps.StatefulSets().Lister(), apps.DaemonSets().Lister(), apps.ReplicaSets().Lister()
	c.jobs, c.cronjobs = batch.Jobs().Lister(), batch.CronJobs().Lister()

	utilruntime.Must(c.policyInf.SetTransform(kube.StripManagedFields))
	c.add(c.policyInf, c.onPolicy)
	c.add(pods.Informer(), c.onPod)
	c.add(hpas.Informer(), c.onHPA)
	for _, inf := range []cache.SharedIndexInformer{apps.Deployments().Informer(), apps.StatefulSets().Informer(),
		apps.DaemonSets().Informer(), apps.ReplicaSets().Informer(), batch.Jobs().Informer(), batch.CronJobs().Informer()} {
		c.add(inf, c.onWorkload)
	}
	return c
}

// add registers an enqueue-only handler, called with the object before and
// after (either may be nil) a change.
func (c *Controller) add(inf cache.SharedIndexInformer, h func(old, cur metav1.Object)) {
	obj := func(o any) metav1.Object {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		m, _ := o.(metav1.Object)
		return m
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { h(nil, obj(o)) },
		UpdateFunc: func(o, n any) { h(obj(o), obj(n)) },
		DeleteFunc: func(o any) { h(obj(o), nil) },
	})
	utilruntime.Must(err)
	c.synced = append(c.synced, inf.HasSynced)
}

// Start starts the informers on ctx and returns at once; it reports
// whether this call started them (a second call does nothing). A replica
// starts them before it leads (run.go), with ctx the process's, so that a
// standby's caches are warm when it takes over: its first pass over the
// policies needs no list of the cluster's pods and workloads. Until a
// replica leads, its informers' events only fill the queues.
func (c *Controller) Start(ctx context.Context) (started bool) {
	c.startOnce.Do(func() {
		started = true
		c.factory.Start(ctx.Done())
		c.cmFactory.Start(ctx.Done())
		go c.policyInf.RunWithContext(ctx)
		c.allSynced = c.synced
		if vpaSynced := c.startVPAs(ctx); vpaSynced != nil {
			c.allSynced = append(slices.Clone(c.synced), vpaSynced)
		} else {
			go c.watchVPAs(ctx)
		}
	})
	return started
}

// Shutdown waits for the informers Start started to stop (they stop with
// its ctx).
func (c *Controller) Shutdown() {
	c.factory.Shutdown()
	c.cmFactory.Shutdown()
}

// Synced reports whether every informer's cache has synced.
func (c *Controller) Synced() bool {
	for _, s := range c.allSynced {
		if !s() {
			return false
		}
	}
	return c.allSynced != nil
}

// Run starts the informers unless Start did, waits for their caches and
// reconciles until ctx ends: each concern with Workers workers. It returns
// once every worker has.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.shutDownQueues()
	log := klog.FromContext(ctx)
	if c.Start(ctx) {
		defer c.Shutdown()
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.allSynced...) {
		return errors.New("waiting for informer caches to sync: context ended")
	}
	log.Info("controller started", "workers", c.cfg.Workers, "concerns", len(c.concerns))
	var wg sync.WaitGroup
	for _, cn := range c.concerns {
		for range c.cfg.Workers {
			wg.Go(func() { wait.UntilWithContext(ctx, func(ctx context.Context) { c.work(ctx, cn) }, time.Second) })
		}
	}
	<-ctx.Done()
	c.shutDownQueues()
	wg.Wait()
	return nil
}

func (c *Controller) shutDownQueues() {
	for _, cn := range c.concerns {
		cn.queue.ShutDown()
	}
}

func (c *Controller) work(ctx context.Context, cn *concern) {
	for {
		key, quit := cn.queue.Get()
		if quit {
			return
		}
		c.process(ctx, cn, key)
		cn.queue.Done(key)
	}
}

func (c *Controller) process(ctx context.Context, cn *concern, key string) {
	start := c.cfg.Clock.Now()
	requeue, err := cn.reconcile(ctx, key)
	c.metrics.reconcileDuration.WithLabelValues(cn.name).Observe(c.cfg.Clock.Since(start).Seconds())
	log := klog.FromContext(ctx).WithValues("policy", key, "concern", cn.name)
	switch {
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
		// A write raced another, or the cache was behind our own last
		// write: read again.
		c.metrics.reconciles.WithLabelValues(cn.name, "conflict").Inc()
		log.V(1).Info("retrying after a conflict", "err", err.Error())
		cn.queue.AddRateLimited(key)
		return
	case err != nil:
		c.metrics.reconciles.WithLabelValues(cn.name, "error").Inc()
		log.Error(err, "reconciling policy")
		cn.queue.AddRateLimited(key)
		return
	case requeue > 0:
		c.metrics.reconciles.WithLabelValues(cn.name, "requeue").Inc()
	default:
		c.metrics.reconciles.WithLabelValues(cn.name, "ok").Inc()
	}
	cn.queue.Forget(key)
	if requeue > 0 {
		cn.queue.AddAfter(key, requeue)
	}
}

// enqueue adds a policy key to every concern's queue.
func (c *Controller) enqueue(key string) {
	for _, cn := range c.concerns {
		cn.queue.Add(key)
	}
}

// The handlers only enqueue.

func (c *Controller) onPolicy(old, cur metav1.Object) {
	o := cur
	if o == nil {
		o = old
	}
	c.enqueue(key(o.GetNamespace(), o.GetName()))
	// The namespace's other policies read this one only through overlap
	// (peers: its selector and creation time): they are enqueued when it
	// comes, goes or its selector may have changed, not on each status
	// write of its own.
	if selectorMoved(old, cur) {
		c.enqueueNamespace(o.GetNamespace(), func(*v1alpha1.SnugPolicy) bool { return true })
	}
}

// selectorMoved reports whether a policy's change (either side nil: an
// add or a delete) may move its selector as peers reads it.
func selectorMoved(old, cur metav1.Object) bool {
	o, ok1 := old.(*v1alpha1.SnugPolicy)
	n, ok2 := cur.(*v1alpha1.SnugPolicy)
	if !ok1 || !ok2 {
		return true
	}
	return o.Generation != n.Generation || o.Status.Selector != n.Status.Selector
}

func (c *Controller) onPod(old, cur metav1.Object) {
	// Most pod events at scale are an agent's snapshot annotation, which
	// only the checkpoints concern reads (history): the other two are not
	// woken for it. A moved recommendation reaches the status through the
	// checkpoints concern's hand-off.
	queues := c.enqueue
	if onlySnapshotMoved(old, cur) {
		queues = func(k string) { c.checkpointQ.queue.Add(k) }
	}
	var sets []labels.Set
	ns := ""
	for _, o := range []metav1.Object{old, cur} {
		if o != nil {
			sets = append(sets, labels.Set(o.GetLabels()))
			ns = o.GetNamespace()
		}
	}
	c.enqueueNamespaceTo(ns, func(p *v1alpha1.SnugPolicy) bool {
		sel, ok := c.sel.Selector(p)
		if !ok {
			return true // not resolved yet: resolving may select it
		}
		return slices.ContainsFunc(sets, func(s labels.Set) bool { return sel.Matches(s) })
	}, queues)
}

// onlySnapshotMoved reports whether a pod's update changed its snapshot
// annotation and nothing else (its resourceVersion aside).
func onlySnapshotMoved(old, cur metav1.Object) bool {
	o, ok1 := old.(*corev1.Pod)
	n, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || o.Annotations[history.SnapshotAnnotation] == n.Annotations[history.SnapshotAnnotation] {
		return false
	}
	a, b := *o, *n // shallow: only the copies' own fields are replaced
	a.ResourceVersion, b.ResourceVersion = "", ""
	a.Annotations = withoutSnapshot(o.Annotations)
	b.Annotations = withoutSnapshot(n.Annotations)
	return equality.Semantic.DeepEqual(&a, &b)
}

func withoutSnapshot(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != history.SnapshotAnnotation {
			out[k] = v
		}
	}
	return out
}

func (c *Controller) onWorkload(old, cur metav1.Object) {
	o := cur
	if o == nil {
		o = old
	}
	kind := ""
	switch o.(type) {
	case *appsv1.Deployment:
		kind = "Deployment"
	case *appsv1.StatefulSet:
		kind = "StatefulSet"
	case *appsv1.DaemonSet:
		kind = "DaemonSet"
	case *appsv1.ReplicaSet:
		kind = "ReplicaSet"
	case *batchv1.Job:
		kind = "Job"
	case *batchv1.CronJob:
		kind = "CronJob"
	}
	c.enqueueNamespace(o.GetNamespace(), func(p *v1alpha1.SnugPolicy) bool {
		t := p.Spec.TargetRef
		return t != nil && t.Kind == kind && t.Name == o.GetName()
	})
}

func (c *Controller) onHPA(old, cur metav1.Object) {
	var refs []autoscalingv2.CrossVersionObjectReference
	ns := ""
	for _, o := range []metav1.Object{old, cur} {
		if h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler); ok {
			refs = append(refs, h.Spec.ScaleTargetRef)
			ns = h.Namespace
		}
	}
	c.enqueueNamespace(ns, func(p *v1alpha1.SnugPolicy) bool {
		t := p.Spec.TargetRef
		return t != nil && slices.ContainsFunc(refs, func(r autoscalingv2.CrossVersionObjectReference) bool {
			return r.Kind == t.Kind && r.Name == t.Name
		})
	})
}

func (c *Controller) enqueueNamespace(ns string, match func(*v1alpha1.SnugPolicy) bool) {
	c.enqueueNamespaceTo(ns, match, c.enqueue)
}

// enqueueNamespaceTo hands the keys of the namespace's policies that match
// to add.
func (c *Controller) enqueueNamespaceTo(ns string, match func(*v1alpha1.SnugPolicy) bool, add func(string)) {
	objs, err := c.policyInf.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	if err != nil {
		return
	}
	for _, o := range objs {
		if p, ok := o.(*v1alpha1.SnugPolicy); ok && match(p) {
			add(key(p.Namespace, p.Name))
		}
	}
}

func key(namespace, name string) string { return namespace + "/" + name }

// policiesIn returns the cached policies of a namespace.
func (c *Controller) policiesIn(ns string) []*v1alpha1.SnugPolicy {
	objs, _ := c.policyInf.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	out := make([]*v1alpha1.SnugPolicy, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*v1alpha1.SnugPolicy); ok {
			out = append(out, p)
		}
	}
	return out
}

// observed is what every concern reads of one policy from the caches.
type observed struct {
	p      *v1alpha1.SnugPolicy
	target resolution
	// sel is the policy's pod selector, nil while it resolves to none;
	// pods are the running pods it governs (those of a younger
	// overlapping policy left out, ov), vpas the VerticalPodAutoscalers
	// that act on them too.
	sel  labels.Selector
	pods []*corev1.Pod
	ov   overlap
	vpas []vpaView
	// hpa are the resources a HorizontalPodAutoscaler scales the target
	// on.
	hpa map[corev1.ResourceName][]string
}

// observe reads policy k and what it governs from the caches; nil when
// the policy is gone, after forgetting what the controller kept of it.
func (c *Controller) observe(k string) (*observed, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(k)
	if err != nil {
		return nil, nil
	}
	obj, exists, err := c.policyInf.GetIndexer().GetByKey(k)
	if err != nil {
		return nil, fmt.Errorf("reading policy from cache: %w", err)
	}
	if !exists {
		c.metrics.forget(ns, name)
		c.sel.Forget(ns, name)
		c.mu.Lock()
		delete(c.lastWrites, k)
		delete(c.granted, k)
		delete(c.recs, k)
		for uid, m := range c.evicting {
			if m.policy == k {
				delete(c.evicting, uid)
			}
		}
		c.mu.Unlock()
		return nil, nil // the checkpoint goes with its owner reference
	}
	o := &observed{p: obj.(*v1alpha1.SnugPolicy)}
	o.target, o.sel = c.resolve(o.p)
	if o.sel != nil {
		all, err := podsSelected(c.podIndex, ns, o.sel)
		if err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
		all = slices.DeleteFunc(all, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		o.pods, o.ov = findOverlap(peer{name: o.p.Name, created: o.p.CreationTimestamp.Time, sel: o.sel}, c.peers(ns), all)
	}
	hpaList, err := c.hpas.HorizontalPodAutoscalers(ns).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing horizontal pod autoscalers: %w", err)
	}
	o.hpa = hpaResources(o.p.Spec.TargetRef, hpaList)
	o.vpas = vpaConflicts(o.p.Spec.TargetRef, o.pods, c.vpasIn(ns))
	return o, nil
}

// withLog returns ctx with a logger naming the policy.
func withLog(ctx context.Context, p *v1alpha1.SnugPolicy) context.Context {
	return klog.NewContext(ctx, klog.FromContext(ctx).WithValues("policy", klog.KObj(p)))
}

// reconcileCheckpoints folds the policy's pods' snapshots into its
// checkpoint, writes it when due, and hands the recommendation to the
// status concern when the status waits for it (a new generation) or it
// moved. A failed write is an error (the queue's rate limiter retries it,
// at least once a resync interval) and, at the first failure of a streak,
// a CheckpointFailed event.
func (c *Controller) reconcileCheckpoints(ctx context.Context, k string) (time.Duration, error) {
	o, err := c.observe(k)
	if o == nil || err != nil {
		return 0, err
	}
	if o.sel == nil {
		return c.cfg.ResyncInterval, nil
	}
	p := o.p
	ctx = withLog(ctx, p)
	log := klog.FromContext(ctx)
	rec, after, err := c.history(ctx, p, o.pods, uncontrolled(o.hpa), c.cfg.Clock.Now())
	c.mu.Lock()
	st := c.recs[k]
	if st.uid != p.UID {
		st = recState{uid: p.UID}
	}
	st.attempted = p.Generation
	// A recommendation worked out is the status's even when the
	// checkpoint's write failed: it rests on the pods' snapshots, which
	// the retry folds again.
	if rec != nil {
		st.rec, st.generation = rec, p.Generation
	}
	// The first failure of a streak is an event; conflicts are none.
	failed := err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) &&
		!apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
	firstFailure := failed && !st.failing
	if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
		st.failing = failed
	}
	c.recs[k] = st
	c.mu.Unlock()
	if p.Status.ObservedGeneration != p.Generation ||
		rec != nil && recommendationMoved(p.Status.Recommendation, rec, policy.HistoryConfig(p)) {
		c.statusQ.queue.Add(k)
	}
	switch {
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
		return 0, err
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace is being deleted, its pods' last snapshots
		// with it: the checkpoint goes too, nothing is lost that
		// anyone could use.
		log.V(1).Info("namespace being deleted; no checkpoint written", "err", err.Error())
		return c.cfg.ResyncInterval, nil
	case err != nil:
		if firstFailure {
			c.recorder.Eventf(p, corev1.EventTypeWarning, EventCheckpointFailed, "keeping learnt history: %v", err)
		}
		return 0, fmt.Errorf("keeping learnt history: %w", err)
	}
	if after > 0 && after < c.cfg.ResyncInterval {
		return after, nil
	}
	return c.cfg.ResyncInterval, nil
}

// reconcileDisruption evicts a pod whose resize stayed Deferred and grants
// or takes back restart windows, as the policy allows.
func (c *Controller) reconcileDisruption(ctx context.Context, k string) (time.Duration, error) {
	o, err := c.observe(k)
	if o == nil || err != nil {
		return 0, err
	}
	requeue := c.cfg.ResyncInterval
	if o.sel == nil {
		return requeue, nil
	}
	ctx = withLog(ctx, o.p)
	now := c.cfg.Clock.Now()
	sooner := func(after time.Duration) {
		if after > 0 && after < requeue {
			requeue = after
		}
	}
	// A policy that yields to a VPA changes no pod (vpa.go): it evicts
	// none and grants no restart window (and takes back any).
	if len(o.vpas) == 0 {
		sooner(c.evictDeferred(ctx, o.p, o.pods, now))
	}
	sooner(c.restartWindows(ctx, o.p, o.pods, len(o.vpas) > 0, now))
	return requeue, nil
}

// reconcileStatus writes the policy's status when it changed: its
// conditions, selector and uncontrolled resources, the recommendation the
// checkpoints concern worked out for its generation (when new, or moved
// out of its band), and the restarts that ended.
func (c *Controller) reconcileStatus(ctx context.Context, k string) (time.Duration, error) {
	o, err := c.observe(k)
	if o == nil || err != nil {
		return 0, err
	}
	p := o.p
	ctx = withLog(ctx, p)
	log := klog.FromContext(ctx)
	now := c.cfg.Clock.Now()

	c.mu.Lock()
	rs, ok := c.recs[k]
	c.mu.Unlock()
	ok = ok && rs.uid == p.UID
	if o.sel != nil && p.Status.ObservedGeneration != p.Generation && (!ok || rs.attempted != p.Generation) {
		// A new generation whose recommendation the checkpoints concern
		// has not worked out yet: it enqueues the status once it has,
		// and the two go out together.
		log.V(2).Info("status waits for the checkpoints of a new generation", "generation", p.Generation)
		return c.cfg.ResyncInterval, nil
	}
	status := *p.Status.DeepCopy()
	status.ObservedGeneration = p.Generation
	status.Selector = o.target.selector
	status.UncontrolledResources = uncontrolled(o.hpa)
	if o.sel != nil {
		if ok && rs.generation == p.Generation && (p.Status.ObservedGeneration != p.Generation ||
			recommendationMoved(p.Status.Recommendation, rs.rec, policy.HistoryConfig(p))) {
			status.Recommendation = rs.rec.DeepCopy()
		}
		status.Restarts = withRestarts(status.Restarts, closedRestarts(o.pods))
	}

	want := conditionsFor(observation{
		mode: policy.UpdateMode(p), target: o.target, pods: len(o.pods), overlap: o.ov, hpa: o.hpa, vpas: o.vpas,
		recommendation: status.Recommendation != nil,
	})
	status.Conditions = mergeConditions(status.Conditions, want, p.Generation, now)
	for _, e := range conditionEvents(p.Status.Conditions, status.Conditions) {
		c.recorder.Event(p, corev1.EventTypeWarning, e.reason, e.message)
	}
	c.metrics.pods.WithLabelValues(p.Namespace, p.Name).Set(float64(len(o.pods)))
	for _, cond := range status.Conditions {
		v := 0.0
		if cond.Status == metav1.ConditionTrue {
			v = 1
		}
		c.metrics.conditions.WithLabelValues(p.Namespace, p.Name, cond.Type).Set(v)
	}

	if !equality.Semantic.DeepEqual(p.Status, status) {
		updated := p.DeepCopy()
		updated.Status = status
		if _, err := c.statuses(p.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("updating status: %w", err)
		}
		log.V(1).Info("status updated", "selector", status.Selector, "pods", len(o.pods))
	}
	return c.cfg.ResyncInterval, nil
}

// resolve finds the policy's pod selector.
func (c *Controller) resolve(p *v1alpha1.SnugPolicy) (resolution, labels.Selector) {
	var ls *metav1.LabelSelector
	if t := p.Spec.TargetRef; t != nil {
		obj, err := c.workload(p.Namespace, t.Kind, t.Name)
		switch {
		case apierrors.IsNotFound(err):
			return resolution{reason: v1alpha1.ReasonTargetNotFound, message: fmt.Sprintf("%s %s not found", t.Kind, t.Name)}, nil
		case err != nil:
			return resolution{reason: v1alpha1.ReasonTargetUnsupported, message: err.Error()}, nil
		}
		if ls, err = workloadSelector(obj); err != nil {
			return resolution{reason: v1alpha1.ReasonTargetUnsupported, message: err.Error()}, nil
		}
	} else {
		ls = p.Spec.Selector
	}
	sel, err := parseSelector(ls)
	if err != nil {
		return resolution{reason: v1alpha1.ReasonTargetUnsupported, message: err.Error()}, nil
	}
	msg := "spec.selector"
	if t := p.Spec.TargetRef; t != nil {
		msg = fmt.Sprintf("%s %s", t.Kind, t.Name)
	}
	return resolution{reason: v1alpha1.ReasonResolved, message: "pods selected through " + msg, selector: sel.String()}, sel
}

// workload returns the cached workload of a kind.
func (c *Controller) workload(ns, kind, name string) (runtime.Object, error) {
	switch kind {
	case "Deployment":
		return c.deployments.Deployments(ns).Get(name)
	case "StatefulSet":
		return c.statefuls.StatefulSets(ns).Get(name)
	case "DaemonSet":
		return c.daemons.DaemonSets(ns).Get(name)
	case "ReplicaSet":
		return c.replicas.ReplicaSets(ns).Get(name)
	case "Job":
		return c.jobs.Jobs(ns).Get(name)
	case "CronJob":
		return c.cronjobs.CronJobs(ns).Get(name)
	default:
		return nil, fmt.Errorf("kind %s is not supported", kind)
	}
}

// peers returns the namespace's policies with their selectors as
// policy.Selector gives them, the ones the agents match pods with.
func (c *Controller) peers(ns string) []peer {
	var out []peer
	for _, p := range c.policiesIn(ns) {
		q := peer{name: p.Name, created: p.CreationTimestamp.Time}
		if sel, ok := c.sel.Selector(p); ok {
			q.sel = sel
		}
		out = append(out, q)
	}
	return out
}

// history folds the pods' latest snapshots into the policy's checkpoint,
// writes the checkpoint when due, and returns the recommendation and when
// a skipped write is due.
func (c *Controller) history(ctx context.Context, p *v1alpha1.SnugPolicy, pods []*corev1.Pod, uncontrolledRes []corev1.ResourceName, now time.Time) (*v1alpha1.RecommendedPodResources, time.Duration, error) {
	log := klog.FromContext(ctx)
	cfg := policy.HistoryConfig(p)
	cms := c.cs.CoreV1().ConfigMaps(p.Namespace)
	// From the cache: a cache behind our last write makes the write below
	// fail on its resourceVersion (or on AlreadyExists), never merge twice.
	cm, err := c.checkpoints.ConfigMaps(p.Namespace).Get(history.CheckpointName(p.Name))
	if apierrors.IsNotFound(err) {
		cm, err = nil, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading checkpoint: %w", err)
	}
	var data map[string]string
	if cm != nil {
		data = cm.Data
	}
	prev, err := decodeCheckpoint(cfg, data)
	if err != nil {
		// A damaged checkpoint must not stop the policy: start afresh.
		log.Error(err, "discarding damaged checkpoint")
		prev = checkpoint{}
	}
	live := map[types.UID]history.Snapshot{}
	for _, pod := range pods {
		s, _, err := history.ParseSnapshot(pod)
		if err != nil {
			log.V(1).Info("skipping snapshot", "err", err.Error())
		}
		live[pod.UID] = s
	}
	next, total, err := fold(cfg, prev, live)
	if err != nil {
		log.V(1).Info("some snapshots did not fold", "err", err.Error())
	}
	next.evicted = liveEvicted(prev.evicted, pods, now)
	rec, err := recommendationFor(cfg, p, uncontrolledRes, total, now)
	if err != nil {
		return nil, 0, err
	}

	newData, err := next.encode(total)
	if err != nil {
		return nil, 0, err
	}
	if cm != nil && maps.Equal(cm.Data, newData) {
		return rec, 0, nil
	}
	k := key(p.Namespace, p.Name)
	c.mu.Lock()
	last := c.lastWrites[k]
	c.mu.Unlock()
	membership := !slices.Equal(slices.Sorted(maps.Keys(prev.pods)), slices.Sorted(maps.Keys(next.pods)))
	// A record taken up or expired goes at once: it would size the
	// owner's next pods.
	evictedDone := len(next.evicted) != len(prev.evicted)
	// A terminating pod's newer snapshot is its agent's last (docs/agent.md,
	// "final"): held back, the pod could be gone before the next write, and
	// the older one kept would be what is retired.
	final := slices.ContainsFunc(pods, func(pod *corev1.Pod) bool {
		s, ok := next.pods[pod.UID]
		return ok && pod.DeletionTimestamp != nil && s.Time.After(prev.pods[pod.UID].Time)
	})
	if cm != nil && !membership && !evictedDone && !final && now.Sub(last) < c.cfg.CheckpointInterval {
		return rec, c.cfg.CheckpointInterval - now.Sub(last), nil
	}
	created := cm == nil
	if created {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: history.CheckpointName(p.Name), Namespace: p.Namespace,
			Labels: map[string]string{managedByLabel: "snug", v1alpha1.GroupName + "/policy": p.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SnugPolicy", Name: p.Name, UID: p.UID,
				Controller: ptr.To(true),
			}},
		}, Data: newData}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	} else {
		cm = cm.DeepCopy()
		cm.Data = newData
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		c.metrics.checkpointWrites.WithLabelValues("error").Inc()
		return rec, 0, fmt.Errorf("writing checkpoint %s: %w", history.CheckpointName(p.Name), err)
	}
	c.metrics.checkpointWrites.WithLabelValues("ok").Inc()
	c.mu.Lock()
	c.lastWrites[k] = now
	c.mu.Unlock()
	if created {
		// An eviction waits for the checkpoint to record the pod's size
		// in (recordEvicted): once the cache has it.
		c.disruptionQ.queue.AddAfter(k, time.Second)
	}
	return rec, 0, nil
}

// managedByLabel marks the objects snug creates.
const managedByLabel = "app.kubernetes.io/managed-by"

// errNoCheckpoint is recordEvicted's answer for a policy whose checkpoint
// the checkpoints concern has not created yet.
var errNoCheckpoint = errors.New("the policy has no checkpoint yet")

// blockedRetry is how soon an eviction that a budget refused is tried
// again; a budget's change does not enqueue the policy.
const blockedRetry = 10 * time.Second

// evictionPending reports whether a pod the policy key evicted is still
// shown running, without a deletion timestamp, by the cached pods; marks of
// pods seen terminating or gone, and marks older than
// evictionExpectationTTL, are dropped.
func (c *Controller) evictionPending(key string, pods []*corev1.Pod, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	pending := false
	for uid, m := range c.evicting {
		if m.policy != key {
			continue
		}
		var cached *corev1.Pod
		for _, pod := range pods {
			if pod.UID == uid {
				cached = pod
			}
		}
		if cached == nil || cached.DeletionTimestamp != nil || now.Sub(m.at) > evictionExpectationTTL {
			delete(c.evicting, uid)
			continue
		}
		pending = true
	}
	return pending
}

// recordEvicted makes sure the policy's checkpoint holds the size pod's
// Deferred resize asked for (history.Evicted) before pod is evicted, so
// that the admission webhook starts its replacement at that size and the
// scheduler places it where it fits. recorded is true once the cached
// checkpoint shows a fresh record (or pod has no controller, so no
// replacement could be recognised); otherwise it writes the record (an
// update of the cached checkpoint: its resourceVersion is the
// precondition), and the caller looks again when the cache has caught up.
func (c *Controller) recordEvicted(ctx context.Context, p *v1alpha1.SnugPolicy, pod *corev1.Pod, now time.Time) (recorded bool, err error) {
	e, ok := history.NewEvicted(pod, now)
	if !ok {
		return true, nil
	}
	cm, err := c.checkpoints.ConfigMaps(p.Namespace).Get(history.CheckpointName(p.Name))
	if apierrors.IsNotFound(err) {
		return false, errNoCheckpoint
	}
	if err != nil {
		return false, fmt.Errorf("reading checkpoint: %w", err)
	}
	list, _ := history.CheckpointEvicted(cm.Data)
	list = liveEvicted(list, nil, now)
	for _, x := range list {
		// Fresh enough that the replacement is admitted well inside the TTL.
		if x.UID == pod.UID && now.Sub(x.Time) < history.EvictedTTL/2 {
			return true, nil
		}
	}
	list = slices.DeleteFunc(list, func(x history.Evicted) bool { return x.UID == pod.UID })
	v, err := history.EncodeEvicted(append(list, e))
	if err != nil {
		return false, err
	}
	cm = cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[history.EvictedKey] = v
	if _, err := c.cs.CoreV1().ConfigMaps(p.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return false, fmt.Errorf("writing checkpoint %s: %w", cm.Name, err)
	}
	klog.FromContext(ctx).V(1).Info("recorded the asked-for size before evicting", "pod", klog.KObj(pod), "requests", e.Requests)
	return false, nil
}

// evictDeferred evicts at most one pod whose resize stayed Deferred, as the
// policy allows, and returns when a deferral will be old enough (0: none).
func (c *Controller) evictDeferred(ctx context.Context, p *v1alpha1.SnugPolicy, pods []*corev1.Pod, now time.Time) time.Duration {
	if !policy.Evicts(p) {
		return 0
	}
	rules := rulesOf(p)
	log := klog.FromContext(ctx)
	key := p.Namespace + "/" + p.Name
	if c.evictionPending(key, pods, now) {
		return time.Second
	}
	var soonest time.Duration
	for _, pod := range pods {
		v := mayEvict(rules, pod, pods, now)
		if v.recheckAfter > 0 && (soonest == 0 || v.recheckAfter < soonest) {
			soonest = v.recheckAfter
		}
		if !v.evict {
			if _, deferred := policy.DeferredSince(pod); deferred {
				log.V(1).Info("not evicting", "pod", klog.KObj(pod), "why", v.why)
			}
			continue
		}
		recorded, err := c.recordEvicted(ctx, p, pod, now)
		if errors.Is(err, errNoCheckpoint) {
			// The checkpoints concern creates it and then enqueues this
			// one; until then, no faster than a blocked eviction.
			log.V(1).Info("not evicting yet: the policy has no checkpoint to record the pod's size in", "pod", klog.KObj(pod))
			return blockedRetry
		}
		if err != nil {
			c.metrics.evictions.WithLabelValues(p.Namespace, p.Name, "error").Inc()
			log.Error(err, "recording the size of a pod to evict", "pod", klog.KObj(pod))
			return 10 * time.Second
		}
		if !recorded {
			return 500 * time.Millisecond // until the cache shows the record
		}
		blocked, err := evictPod(ctx, c.cs, pod)
		switch {
		case blocked:
			c.metrics.evictions.WithLabelValues(p.Namespace, p.Name, "blocked").Inc()
			c.recorder.Eventf(p, corev1.EventTypeWarning, EventEvictionBlocked,
				"pod %s: resize deferred, eviction refused: %v; check its PodDisruptionBudgets", pod.Name, err)
			return blockedRetry
		case err != nil:
			c.metrics.evictions.WithLabelValues(p.Namespace, p.Name, "error").Inc()
			log.Error(err, "evicting", "pod", klog.KObj(pod))
			return 30 * time.Second
		}
		c.mu.Lock()
		c.evicting[pod.UID] = evictionMark{policy: key, at: now}
		c.mu.Unlock()
		c.metrics.evictions.WithLabelValues(p.Namespace, p.Name, "evicted").Inc()
		log.Info("evicted for a deferred resize", "pod", klog.KObj(pod), "why", v.why)
		c.recorder.Eventf(p, corev1.EventTypeNormal, EventEvicted, "pod %s evicted: %s", pod.Name, v.why)
		c.recorder.Eventf(pod, corev1.EventTypeNormal, EventEvicted, "evicted by snug policy %s: %s", p.Name, v.why)
		return 0 // one at a time; its deletion enqueues the policy again
	}
	return soonest
}
