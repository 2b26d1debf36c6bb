package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/admission"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/kube"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/lab/internal/lab/kwok"
	"github.com/snug-dev/snug/lab/internal/quality/trace"
)

// BenchOptions configure one run of the scale bench at one node count
// (docs/scale.md): kwok nodes with pods under InPlace policies, a hollow
// agent per node in this process, the real controller in the cluster.
type BenchOptions struct {
	// Nodes is the node count; PodsPerNode and PodsPerPolicy the pods on
	// each node and under each policy.
	Nodes, PodsPerNode, PodsPerPolicy int
	// Warmup runs before the steady window (every pod's first snapshot and
	// the controller's first folds); Steady is the window measured.
	Warmup, Steady time.Duration
	// StepFraction of the pods get a 4x CPU step after the steady window;
	// StepTimeout bounds the wait for their resizes.
	StepFraction float64
	StepTimeout  time.Duration
	// PodAge, when positive, gives every pod a snapshot annotation of that
	// much history at its steady load, as if it had run that long: its
	// agent counts it as published, so the steady window measures a fleet
	// of pods that age, not the first hours of new ones (whose snapshots
	// go out at each doubling of their seconds).
	PodAge time.Duration
	// Traces, when given, are the pods' loads instead of a flat one: each
	// policy's pods play one container of them (tracePlan), seeded by
	// TraceSeed, with that container's starting resources and, with
	// PodAge, its own history before the offset played.
	Traces    []*trace.Trace
	TraceSeed uint64
	// CreateRates are the pod creation rates (per second) of the creation
	// phase, each held for CreateFor: pods through snug's admission
	// webhook, placed by the scheduler. None skips the phase.
	CreateRates []int
	CreateFor   time.Duration
	// RolloutWindow, when positive, runs the agent rollout: every hollow
	// agent stopped and started again at once, its writes counted over
	// this window after the start.
	RolloutWindow time.Duration
	// KillLeader, when set, ends the run with a leader kill: it kills the
	// leading controller (a crash) and returns its name; WaitLeader waits
	// until another leads and returns its name.
	KillLeader func(ctx context.Context) (string, error)
	WaitLeader func(ctx context.Context, old string) (string, error)
	// Config is the API server's client config (an admin's).
	Config *rest.Config
	// Scrape reads the components' metrics at a moment: the API server's,
	// etcd's and the controller's (the leader's).
	Scrape func(ctx context.Context) (Scrape, error)
	// Log receives progress.
	Log io.Writer
}

// Scrape is one reading of the components' metrics: each the text
// exposition format, "" when it could not be read.
type Scrape struct {
	At                          time.Time
	APIServer, Etcd, Controller string
	// Webhooks are the metrics of every controller replica that serves
	// snug's webhook, by pod name (the leader's are Controller's too):
	// the webhook's own handling time is summed over them.
	Webhooks map[string]string
}

// Figures are one run's results.
type Figures struct {
	Nodes, Pods, Policies int
	// Setup is how long the nodes and pods took to be Running.
	Setup time.Duration
	// Steady window: snug's writes per second (the agents', counted by
	// the fleet; the controller's, from snug_controller_api_requests_total),
	// by kind, and the busiest node's agent's writes per minute.
	AgentWrites, ControllerWrites map[Request]float64
	BusiestNodeWritesPerMin       float64
	// The API server's requests per second (apiserver_request_total, every
	// client) and its p99 latency of mutating requests
	// (apiserver_request_duration_seconds), over the window.
	APIRequests float64
	APIWriteP99 time.Duration
	// The controller's reconciles per second and their p99
	// (snug_controller_reconcile_duration_seconds), and its policy queue:
	// the p99 wait there before a worker took a policy
	// (workqueue_queue_duration_seconds) and its depth at the end.
	Reconciles                 float64
	ReconcileP99, QueueWaitP99 time.Duration
	QueueDepth                 float64
	ControllerCPU              float64 // cores, process_cpu_seconds_total over the window
	ControllerRSS              float64 // bytes, process_resident_memory_bytes at the end
	// Etcd: its database size in use at the end
	// (etcd_mvcc_db_total_size_in_use_in_bytes, which the API server's
	// compaction lowers every 5 minutes, so no growth figure), what the
	// API server sent it over the window, per hour (all clients), and
	// snug's share estimated from its writes (EtcdBytesPerHour) at
	// ObjectBytes, each resource's mean object size.
	EtcdBytes, EtcdWrittenPerHour, SnugEtcdPerHour float64
	ObjectBytes                                    map[string]float64
	// Step: how many pods were stepped, and from the step to each one's
	// applied CPU grow (its status resources showing the step's grow:
	// grown):
	// p50, p99, and until 99 % were applied; Applied counts those seen.
	Stepped, Applied       int
	StepP50, StepP99, To99 time.Duration
	// PatchedP50 and PatchedP99: from the agent's patch (the first pod
	// version whose spec shows the grow) to the applied one: the
	// decision -> applied latency less the agent's own client wait.
	PatchedP50, PatchedP99 time.Duration
	// The phases after the step, when run: pod creation through the
	// webhook at each rate, the agent rollout and the leader kill.
	Creations []Creation
	Rollout   *Rollout
	Failover  *Failover
}

// WritesPerSec sums writes by kind.
func WritesPerSec(m map[Request]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

// Bench runs one node count: it creates the nodes (kwok plays them: run
// kwok.Up first), the policies and the pods, runs the fleet through a
// warm-up, a steady window and a CPU step, measures, and deletes what it
// made.
func Bench(ctx context.Context, o BenchOptions) (f Figures, err error) {
	logf := func(format string, args ...any) { fmt.Fprintf(o.Log, format+"\n", args...) }
	cfg := rest.CopyConfig(o.Config)
	cfg.QPS, cfg.Burst, cfg.UserAgent = 500, 1000, "snug-lab-bench-scale"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return f, err
	}
	pc, err := policyclient.NewForConfig(cfg)
	if err != nil {
		return f, err
	}
	f.Nodes, f.Pods = o.Nodes, o.Nodes*o.PodsPerNode
	f.Policies = (f.Pods + o.PodsPerPolicy - 1) / o.PodsPerPolicy
	ns := fmt.Sprintf("snug-scale-%d", o.Nodes)
	nodes := make([]string, o.Nodes)
	for i := range nodes {
		// Named for the count: kwok kept the Leases of a count's nodes
		// it had played, and never played the next count's nodes of the
		// same names (900 of 3,000 pods stayed Pending at 100 nodes after
		// 50).
		nodes[i] = fmt.Sprintf("snug-kwok-%d-%04d", o.Nodes, i)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		err = errors.Join(err, cleanup(cctx, cs, ns, nodes, logf))
	}()

	start := time.Now()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return f, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	// Room for every pod as written: a real trace's containers can ask
	// for cores each. The node's room is not what this bench measures.
	cpuCap, memCap := "32", "128Gi"
	var plan *tracePlan
	if len(o.Traces) > 0 {
		cpuCap, memCap = "1024", "4Ti"
		if plan, err = newTracePlan(o.Traces, f.Policies, o.PodAge, o.TraceSeed); err != nil {
			return f, err
		}
	}
	if err := parallel(ctx, len(nodes), func(i int) error {
		_, err := cs.CoreV1().Nodes().Create(ctx, kwok.Node(nodes[i], cpuCap, memCap, 110), metav1.CreateOptions{})
		return err
	}); err != nil {
		return f, fmt.Errorf("creating kwok nodes: %w", err)
	}
	policies := make([]*v1alpha1.SnugPolicy, f.Policies)
	for g := range f.Policies {
		p := &v1alpha1.SnugPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("group-%d", g), Namespace: ns},
			Spec: v1alpha1.SnugPolicySpec{
				Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"snug-scale-group": fmt.Sprint(g)}},
				UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
			},
		}
		if policies[g], err = pc.SnugPolicies(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return f, fmt.Errorf("creating policy %s: %w", p.Name, err)
		}
	}
	base := Steady{CPUMillis: 50, MemBytes: 48 << 20}
	// Each workload's history (the pods' snapshot annotation), "" for none.
	aged := make([]string, f.Policies)
	if o.PodAge > 0 {
		now := time.Now()
		for g := range aged {
			if plan != nil {
				aged[g], err = plan.history(g, o.PodAge, now)
			} else if g == 0 {
				aged[g], err = AgedSnapshot(base, o.PodAge, now)
			} else {
				aged[g] = aged[0]
			}
			if err != nil {
				return f, err
			}
		}
	}
	if err := parallel(ctx, f.Pods, func(i int) error {
		p := benchPod(i, nodes[i/o.PodsPerNode], o.PodsPerPolicy)
		g := i / o.PodsPerPolicy
		if plan != nil {
			p.Spec.Containers[0].Resources = plan.resources(g)
		}
		if aged[g] != "" {
			p.Annotations = map[string]string{history.SnapshotAnnotation: aged[g]}
			var err error
			if p, err = Settled(p, policies[g], aged[g]); err != nil {
				return err
			}
		}
		_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		return err
	}); err != nil {
		return f, fmt.Errorf("creating pods: %w", err)
	}
	if err := waitRunning(ctx, cs, ns, f.Pods); err != nil {
		return f, err
	}
	f.Setup = time.Since(start)
	logf("%d kwok nodes, %d pods Running, %d policies in %.0fs", o.Nodes, f.Pods, f.Policies, f.Setup.Seconds())

	// The stepped pods: every 1/StepFraction-th.
	every := max(1, int(math.Round(1/o.StepFraction)))
	var stepAt atomic.Int64 // unix nanos; 0 before the step
	demand := func(ref agent.ContainerRef) Demand {
		var i int
		if _, err := fmt.Sscanf(ref.Pod, "pod-%d", &i); err != nil {
			return base // the creation phase's pods
		}
		var d Demand = base
		if plan != nil {
			d = plan.demand(i / o.PodsPerPolicy)
		}
		if i%every != 0 {
			return d
		}
		return stepped{base: d, factor: 4, at: &stepAt}
	}
	ao := agent.NewOptions()
	ao.Autoscale = true
	fleet := startFleet(ctx, &Fleet{Base: o.Config, Nodes: nodes, Options: *ao, Seed: 1, Demand: demand})
	defer func() { err = errors.Join(err, fleet.stop()) }()
	if err := fleet.waitReady(ctx); err != nil {
		return f, err
	}
	logf("%d hollow agents ready; warming up for %s", len(nodes), o.Warmup)
	if err := sleep(ctx, o.Warmup); err != nil {
		return f, err
	}

	// The steady window.
	before, err := o.Scrape(ctx)
	if err != nil {
		return f, err
	}
	reqBefore := fleet.Requests()
	if err := sleep(ctx, o.Steady); err != nil {
		return f, err
	}
	after, err := o.Scrape(ctx)
	if err != nil {
		return f, err
	}
	reqAfter := fleet.Requests()
	secs := after.At.Sub(before.At).Seconds()
	f.AgentWrites = map[Request]float64{}
	for node, kinds := range reqAfter {
		nodeWrites := 0.0
		for r, n := range kinds {
			if !r.Write() {
				continue
			}
			d := n - reqBefore[node][r]
			f.AgentWrites[r] += d / secs
			nodeWrites += d
		}
		f.BusiestNodeWritesPerMin = max(f.BusiestNodeWritesPerMin, nodeWrites/secs*60)
	}
	f.fromScrapes(before, after)
	var unsized []string
	f.SnugEtcdPerHour, unsized = EtcdBytesPerHour(f.ObjectBytes, f.AgentWrites, f.ControllerWrites)
	if len(unsized) > 0 {
		logf("etcd estimate: no object size for %v, whose writes it leaves out", unsized)
	}
	logf("steady %.0fs: snug agents %.2f writes/s, controller %.2f writes/s; API server %.1f requests/s",
		secs, WritesPerSec(f.AgentWrites), WritesPerSec(f.ControllerWrites), f.APIRequests)

	// The step.
	f.Stepped = (f.Pods + every - 1) / every
	applied, patched, err := watchStep(ctx, cs, ns, every, &stepAt, o.StepTimeout)
	if err != nil {
		return f, err
	}
	f.Applied = len(applied)
	f.StepP50, f.StepP99 = quantile(applied, 0.5), quantile(applied, 0.99)
	f.PatchedP50, f.PatchedP99 = quantile(patched, 0.5), quantile(patched, 0.99)
	if need := int(math.Ceil(0.99 * float64(f.Stepped))); len(applied) >= need {
		f.To99 = applied[need-1]
	}
	logf("step: %d of %d stepped pods grown; p50 %.2fs, p99 %.2fs; patched -> applied p50 %.2fs, p99 %.2fs",
		f.Applied, f.Stepped, f.StepP50.Seconds(), f.StepP99.Seconds(), f.PatchedP50.Seconds(), f.PatchedP99.Seconds())

	if len(o.CreateRates) > 0 {
		if f.Creations, err = create(ctx, cs, ns, f.Policies, o.CreateRates, o.CreateFor, o.Scrape, logf); err != nil {
			return f, err
		}
	}
	if o.RolloutWindow > 0 {
		if err := fleet.stop(); err != nil {
			return f, fmt.Errorf("stopping the fleet for the rollout: %w", err)
		}
		start := time.Now()
		fleet = startFleet(ctx, &Fleet{Base: o.Config, Nodes: nodes, Options: *ao, Seed: 2, Demand: demand})
		if err := fleet.waitReady(ctx); err != nil {
			return f, err
		}
		r := &Rollout{Ready: time.Since(start), Writes: map[Request]float64{}}
		if err := sleep(ctx, time.Until(start.Add(o.RolloutWindow))); err != nil {
			return f, err
		}
		// The window is the rollout's start to now: longer than asked
		// when the agents took longer than it to be ready.
		r.Window = time.Since(start)
		total := 0.0
		for k, n := range Writes(fleet.Requests()) {
			r.Writes[k] = n / r.Window.Seconds()
			total += n
		}
		r.WritesPerNode = total / float64(len(nodes))
		f.Rollout = r
		logf("rollout: %d agents restarted at once, all ready in %.1fs (the fleet's shared pod list included); %.2f writes per node in the %.0fs from the restart",
			len(nodes), r.Ready.Seconds(), r.WritesPerNode, r.Window.Seconds())
	}
	if o.KillLeader != nil && o.WaitLeader != nil {
		fo, err := failover(ctx, pc, ns, "group-0", o.KillLeader, o.WaitLeader)
		if err != nil {
			return f, err
		}
		f.Failover = &fo
		logf("leader kill: %s killed, %s leads after %.1fs; a policy's changed spec in its status after %.1fs", fo.Killed, fo.Leader, fo.Takeover.Seconds(), fo.StatusLag.Seconds())
	}
	return f, nil
}

// runningFleet is a fleet running in its own goroutine.
type runningFleet struct {
	*Fleet
	cancel context.CancelFunc
	done   chan error
	err    error
	once   sync.Once
}

func startFleet(ctx context.Context, f *Fleet) *runningFleet {
	fctx, cancel := context.WithCancel(ctx)
	r := &runningFleet{Fleet: f, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- f.Run(fctx) }()
	return r
}

// waitReady waits until every agent of the fleet has synced.
func (r *runningFleet) waitReady(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case err := <-r.done:
			r.done <- err
			return false, fmt.Errorf("the fleet stopped: %w", err)
		default:
		}
		return r.Ready() == len(r.Nodes), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d hollow agents: %w", len(r.Nodes), err)
	}
	return nil
}

// stop stops the fleet and returns its error; again, the same.
func (r *runningFleet) stop() error {
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.done
	})
	return r.err
}

// AgedSnapshot is the snapshot annotation of a pod whose container "app"
// ran base's load for age (BenchOptions.PodAge), under the default
// recommender's half-lives (the bench's policies set none).
func AgedSnapshot(base Steady, age time.Duration, now time.Time) (string, error) {
	a := recommend.NewAggregate(recommend.DefaultConfig())
	secs := age.Seconds()
	a.CPU.Add(base.CPUMillis, secs, now)
	a.Memory.Add(base.MemBytes, secs, now)
	a.CPUSeconds, a.MemorySeconds = secs, secs
	a.MemoryPeakBytes, a.MemoryPeakTime = int64(base.MemBytes), now
	snap, err := history.NewSnapshot(now, map[string]*recommend.Aggregate{"app": a})
	if err != nil {
		return "", fmt.Errorf("an aged snapshot: %w", err)
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return "", fmt.Errorf("an aged snapshot: %w", err)
	}
	return string(b), nil
}

// Settled is pod as snug's webhook sizes it when its workload's
// checkpoint holds the history snapshot carries (admission.Size, the
// checkpoint standing for one pod's snapshot): a fleet that has run under
// snug that long has the size snug keeps, so the bench's steady window is
// steady. Created at its template's size instead, every pod of the flat
// load shrank 5 minutes in (the shrink's stabilization), 1,500 resizes at
// 50 nodes that landed in whichever phase ran then.
func Settled(pod *corev1.Pod, pol *v1alpha1.SnugPolicy, snapshot string) (*corev1.Pod, error) {
	var snap history.Snapshot
	if err := json.Unmarshal([]byte(snapshot), &snap); err != nil {
		return nil, fmt.Errorf("sizing pod %s: its snapshot: %w", pod.Name, err)
	}
	data := map[string]string{}
	for c, text := range snap.Containers {
		data[history.AggregateKey(c)] = text
	}
	// The pod has no namespace yet; the policy's is where it goes.
	in := pod.DeepCopy()
	in.Namespace = pol.Namespace
	d := admission.Size(in, []*v1alpha1.SnugPolicy{pol}, func(string, string) map[string]string { return data }, snap.Time)
	switch d.Outcome {
	case admission.Sized:
	case admission.Unchanged:
		return pod, nil
	default:
		return nil, fmt.Errorf("sizing pod %s from its history: %s (%s)", pod.Name, d.Outcome, d.Summary)
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.DecodePatch(d.Patch)
	if err != nil {
		return nil, fmt.Errorf("sizing pod %s: the webhook's patch: %w", pod.Name, err)
	}
	if raw, err = patch.Apply(raw); err != nil {
		return nil, fmt.Errorf("sizing pod %s: applying the webhook's patch: %w", pod.Name, err)
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, err
	}
	return out, nil
}

// stepped is a load that becomes factor times base once *at is set.
type stepped struct {
	base   Demand
	factor float64
	at     *atomic.Int64
}

// At implements Demand.
func (s stepped) At(t int) (float64, float64) {
	c, m := s.base.At(t)
	if s.at.Load() != 0 && time.Now().UnixNano() >= s.at.Load() {
		c *= s.factor
	}
	return c, m
}

// benchPod is pod i: 100m/200m cpu, 64Mi/128Mi memory, bound to node,
// under the policy of its group.
func benchPod(i int, node string, perPolicy int) *corev1.Pod {
	rr := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("pod-%05d", i),
			Labels: map[string]string{"snug-scale-group": fmt.Sprint(i / perPolicy)},
		},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			Tolerations:                   []corev1.Toleration{kwok.Toleration},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "app", Image: "kwok", Resources: rr}},
		},
	}
}

// waitRunning waits until n pods of ns are Running.
func waitRunning(ctx context.Context, cs kubernetes.Interface, ns string, n int) error {
	last := 0
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("status.phase", string(corev1.PodRunning)).String(), ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		last = len(list.Items)
		return last >= n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d pods Running (%d are): %w", n, last, err)
	}
	return nil
}

// watchStep starts the step (sets *at) and returns, sorted, each stepped
// pod's time from the step to the first version of it whose status shows
// the step's grow (applied, see grown), and from the first version whose
// spec shows it (the agent's patch, as the API server took it) to that
// applied one (patched).
func watchStep(ctx context.Context, cs kubernetes.Interface, ns string, every int, at *atomic.Int64, timeout time.Duration) (applied, patched []time.Duration, err error) {
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns), informers.WithTransform(kube.StripManagedFields))
	inf := factory.Core().V1().Pods().Informer()
	var (
		mu        sync.Mutex
		start     time.Time
		appliedAt = map[string]time.Time{}
		patchedAt = map[string]time.Time{}
	)
	stepped := func(p *corev1.Pod) bool {
		var i int
		_, err := fmt.Sscanf(p.Name, "pod-%d", &i)
		return err == nil && i%every == 0
	}
	// The CPU at the step, spec's and status's, by pod.
	specAt, statusAt := map[string]cpuAt{}, map[string]cpuAt{}
	total := 0
	see := func(obj any) {
		now := time.Now()
		p, ok := obj.(*corev1.Pod)
		if !ok || !stepped(p) || len(p.Spec.Containers) == 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if start.IsZero() {
			return
		}
		if _, seen := patchedAt[p.Name]; !seen && grown(specCPU(p), specAt[p.Name]) {
			patchedAt[p.Name] = now
		}
		if _, seen := appliedAt[p.Name]; !seen && grown(statusCPU(p), statusAt[p.Name]) {
			appliedAt[p.Name] = now
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, n any) { see(n) }}); err != nil {
		return nil, nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory.Start(wctx.Done())
	if !cache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
		return nil, nil, errors.New("watching the stepped pods: cache did not sync")
	}
	mu.Lock()
	for _, obj := range inf.GetStore().List() {
		if p := obj.(*corev1.Pod); stepped(p) && len(p.Spec.Containers) > 0 {
			total++
			specAt[p.Name], statusAt[p.Name] = specCPU(p), statusCPU(p)
		}
	}
	mu.Unlock()
	mu.Lock()
	start = time.Now()
	mu.Unlock()
	at.Store(start.UnixNano())
	_ = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(appliedAt) >= total, nil
	})
	mu.Lock()
	defer mu.Unlock()
	for name, t := range appliedAt {
		applied = append(applied, t.Sub(start))
		if pt, ok := patchedAt[name]; ok {
			patched = append(patched, t.Sub(pt))
		}
	}
	slices.Sort(applied)
	slices.Sort(patched)
	return applied, patched, nil
}

// cpuAt is a container's CPU request and limit in millicores (0: none).
type cpuAt struct{ req, lim int64 }

// specCPU and statusCPU are a pod's first container's CPU, as its spec asks
// and as its status shows applied (zero while it shows none).
func specCPU(p *corev1.Pod) cpuAt {
	r := p.Spec.Containers[0].Resources
	return cpuAt{r.Requests.Cpu().MilliValue(), r.Limits.Cpu().MilliValue()}
}

func statusCPU(p *corev1.Pod) cpuAt {
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].Resources == nil {
		return cpuAt{}
	}
	r := p.Status.ContainerStatuses[0].Resources
	return cpuAt{r.Requests.Cpu().MilliValue(), r.Limits.Cpu().MilliValue()}
}

// grown says whether CPU now is the step's grow of was. A container with a
// CPU limit at the step is starved by it, and its grow raises the limit
// (the agent may raise the request less: the flat bench load's 4x step
// took 100m/200m to 122m/244m); a flat load's limit never moves on its
// own. One without a limit (a trace's Borg request, no limit) grows its
// request, by half again to tell the step's grow from the trace's own
// moves, which the agent follows too. A was of zero (unknown) never grows.
func grown(now, was cpuAt) bool {
	if was.lim > 0 {
		return now.lim > was.lim
	}
	return was.req > 0 && 2*now.req > 3*was.req
}

// quantile of sorted durations (nearest rank); 0 for none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// parallel runs f(0..n-1), 16 at a time, and returns the first error.
func parallel(ctx context.Context, n int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, 16)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(first, ctx.Err())
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// cleanup deletes the bench's pods (at once: kwok confirms nothing),
// namespace and nodes.
func cleanup(ctx context.Context, cs kubernetes.Interface, ns string, nodes []string, logf func(string, ...any)) error {
	var errs []error
	// A collection of thousands can outlast the API server's request
	// timeout, which the client sees as a timeout ("may still be
	// processing the request") or, over HTTP/2, as a reset stream
	// ("INTERNAL_ERROR; received from peer", 3,000 pods on 2 cores): the
	// namespace's deletion below removes whatever is left, so no error
	// of this delete is a failure.
	if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		logf("deleting the bench's pods: %v (the namespace's deletion removes what is left)", err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		errs = append(errs, fmt.Errorf("deleting namespace %s: %w", ns, err))
	}
	errs = append(errs, parallel(ctx, len(nodes), func(i int) error {
		err := cs.CoreV1().Nodes().Delete(ctx, nodes[i], metav1.DeleteOptions{})
		if err != nil && !isNotFound(err) {
			return err
		}
		return nil
	}))
	logf("deleted the bench's pods, namespace and %d nodes", len(nodes))
	if err := errors.Join(errs...); err != nil {
		return &CleanupError{err}
	}
	return nil
}

// CleanupError is a failure to delete what a run created, after its
// figures were taken: the run stands, and the next count (its own
// namespace and node names) can still run.
type CleanupError struct{ Err error }

func (e *CleanupError) Error() string { return "cleaning up: " + e.Err.Error() }
func (e *CleanupError) Unwrap() error { return e.Err }

// sortedKinds returns the kinds of m, by rate, largest first.
func sortedKinds(m map[Request]float64) []Request {
	out := make([]Request, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if m[out[i]] != m[out[j]] {
			return m[out[i]] > m[out[j]]
		}
		return out[i].Verb+out[i].Resource < out[j].Verb+out[j].Resource
	})
	return out
}
