package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/snug-dev/snug/internal/cgroup"
	"github.com/snug-dev/snug/internal/resize"
)

// Bounds and defaults of Config.
const (
	MinInterval        = 250 * time.Millisecond
	MaxInterval        = 10 * time.Second
	DefaultInterval    = time.Second
	DefaultHistorySize = 120
	MaxHistorySize     = 100000
)

// Config is what an Agent needs. NewConfig gives the defaults.
type Config struct {
	// Node is the node whose pods are sampled. It only labels output; the
	// pod source (WatchPods) does the filtering.
	Node string
	// Interval is the time between sampling passes, MinInterval to
	// MaxInterval.
	Interval time.Duration
	// HistorySize is how many points each container's ring keeps, 1 to
	// MaxHistorySize. At 1 s, 120 points are two minutes. A Point is 264
	// bytes, allocated in full when a container is first tracked: 31 KiB
	// per container at 120.
	HistorySize int
	// CgroupRoot is where the cgroup hierarchies are mounted. Unused when
	// Sampler is set.
	CgroupRoot string
	// Sampler, if set, finds and reads the containers instead of the
	// cgroups under CgroupRoot: the scale bench's hollow agents (issue 29)
	// run many agents in one process on synthetic samples.
	Sampler Sampler
	// Observer, if set, sees every new point from the loop goroutine.
	Observer Observer
	// AfterPass, if set, is a hook called on the loop goroutine after each
	// pass with how long it took (by the Agent's clock) and how many
	// containers it read; it must return quickly. Measurements use it
	// (internal/agent/agentbench).
	AfterPass func(took time.Duration, containers int)
}

// NewConfig returns the defaults: 1 s, 120 points, /sys/fs/cgroup.
func NewConfig() Config {
	return Config{Interval: DefaultInterval, HistorySize: DefaultHistorySize, CgroupRoot: "/sys/fs/cgroup"}
}

// Validate reports every field out of bounds.
func (c Config) Validate() error {
	var errs []error
	if c.Interval < MinInterval || c.Interval > MaxInterval {
		errs = append(errs, fmt.Errorf("interval %v is out of range [%v, %v]", c.Interval, MinInterval, MaxInterval))
	}
	if c.HistorySize < 1 || c.HistorySize > MaxHistorySize {
		errs = append(errs, fmt.Errorf("history size %d is out of range [1, %d]", c.HistorySize, MaxHistorySize))
	}
	if c.CgroupRoot == "" && c.Sampler == nil {
		errs = append(errs, errors.New("cgroup root is empty"))
	}
	return errors.Join(errs...)
}

// ContainerRef names one running container instance.
type ContainerRef struct {
	Namespace, Pod string
	PodUID         types.UID
	Container      string
	// ContainerID is the runtime's ID with its scheme, e.g.
	// "containerd://0123...". A restarted container has a new one.
	ContainerID string
	// QOSClass is the pod's QoS class.
	QOSClass corev1.PodQOSClass
}

func (r ContainerRef) String() string { return r.Namespace + "/" + r.Pod + "/" + r.Container }

// Point is one entry of a container's history: the signals derived from a
// sample and the sample before it, plus a few levels and cumulative counters
// of the sample itself.
type Point struct {
	cgroup.Signals
	// MemoryUsageBytes is the sample's memory usage (including page cache).
	MemoryUsageBytes uint64
	// MemoryLimitBytes is the memory limit; 0 when unlimited.
	MemoryLimitBytes uint64
	// MemoryPeakBytes is the peak usage the kernel recorded (v2
	// memory.peak from kernel 5.19, v1 memory.max_usage_in_bytes); 0 if
	// unknown.
	MemoryPeakBytes uint64
	// OOMKills is the cgroup's cumulative OOM-kill count.
	OOMKills uint64
}

// Observer is the hook for a decision step. Observe is called on the loop
// goroutine after each container's point is recorded, so it must return
// quickly and hand slow work (API calls) to another goroutine. p is a copy.
type Observer interface {
	Observe(ctx context.Context, c ContainerRef, p Point)
}

// PassObserver is an Observer that also wants to know when a pass has
// delivered every container's point, to act once per pod with all of its
// containers' points seen. PassDone runs on the loop goroutine, like Observe.
type PassObserver interface {
	Observer
	PassDone(ctx context.Context)
}

// Settler is an Observer whose off-loop work (resizes) reports back: Run
// calls Settle on the loop goroutine, between passes, whenever Settled
// fires, so that results are taken in without waiting for the next pass.
// A nil channel never fires.
type Settler interface {
	Observer
	Settled() <-chan struct{}
	Settle(ctx context.Context)
}

// ContainerView is what the agent knows of one container: who it is, where
// its cgroup is and its recent points, oldest first.
type ContainerView struct {
	ContainerRef
	Cgroup  cgroup.Path
	Latest  Point
	History []Point
}

// key identifies a container slot in a pod: a restart keeps the key and
// changes the ContainerID.
type key struct {
	uid  types.UID
	name string
}

// Sampler finds and opens the containers an Agent reads.
type Sampler interface {
	// Open finds ref's cgroup and opens it for reading, returning where it
	// is. An error wrapping fs.ErrNotExist: it is not there yet.
	Open(ref ContainerRef) (Source, cgroup.Path, error)
}

// Source is one container's open cgroup, read by the loop goroutine only.
type Source interface {
	// Read samples it at now; an error wrapping cgroup.ErrGone: the
	// container is gone (Close it).
	Read(now time.Time) (cgroup.Sample, error)
	Close() error
}

// cgroupSampler is the default Sampler: the node's cgroups, each kept open
// as a cgroup.Handle.
type cgroupSampler struct{ r cgroup.Reader }

func (c cgroupSampler) Open(ref ContainerRef) (Source, cgroup.Path, error) {
	find := func() (cgroup.Path, error) {
		if ref.Container == resize.PodLevel {
			return c.r.FindPod(string(ref.PodUID), string(ref.QOSClass))
		}
		return c.r.Find(string(ref.PodUID), string(ref.QOSClass), ref.ContainerID)
	}
	p, err := find()
	if err != nil {
		return nil, p, err
	}
	h, err := c.r.Open(p)
	if err != nil {
		return nil, p, err
	}
	return h, p, nil
}

// tracked is a container the loop samples. handle and prev belong to the
// loop goroutine; ref, path and ring are guarded by Agent.mu.
type tracked struct {
	ref    ContainerRef
	path   cgroup.Path
	handle Source
	prev   cgroup.Sample
	ring   *ring
	series *series
}

// Agent samples the containers of one node. Create it with New, feed it pods
// with UpsertPod and DeletePod (WatchPods does that from the API server) and
// run its loop with Run. All exported methods are safe for concurrent use.
type Agent struct {
	cfg     Config
	clock   clock.WithTicker
	sampler Sampler
	metrics *Metrics

	// podsMu guards the wanted set, which pod handlers change and the loop
	// reads when podsGen moved.
	podsMu  sync.Mutex
	pods    map[types.UID][]ContainerRef
	podsGen uint64

	// Loop-only state.
	seenGen uint64
	wanted  map[key]ContainerRef
	// gone remembers container IDs whose cgroup vanished, so that the loop
	// does not look for them again while the pod status still says running.
	gone map[string]struct{}
	// notFound counts passes a wanted container's cgroup was missing.
	notFound map[string]int
	// results is reused by every pass.
	results []result

	mu      sync.RWMutex
	tracked map[key]*tracked
	passes  uint64

	synced atomic.Bool

	// decider is the decision step, if Decide installed one.
	decider *Decider
	// podHook is the decider, for the pod informer's goroutine: Decide may
	// run after the informer started.
	podHook atomic.Pointer[Decider]
	// feed tells resizes waiting on a pod (actuation.go) that the pod
	// source delivered a new version of it.
	feed podFeed
	// binds are the pods' policies, marked stale by pod events here and
	// policy events (Decide).
	binds *bindings
}

// New returns an Agent for cfg, which must be valid. clk stamps samples and
// drives the loop; pass clock.RealClock{} outside tests.
func New(cfg Config, clk clock.WithTicker) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("configuring agent: %w", err)
	}
	sampler := cfg.Sampler
	if sampler == nil {
		sampler = cgroupSampler{cgroup.Reader{Root: cfg.CgroupRoot}}
	}
	return &Agent{
		cfg:      cfg,
		clock:    clk,
		sampler:  sampler,
		metrics:  newMetrics(),
		pods:     map[types.UID][]ContainerRef{},
		wanted:   map[key]ContainerRef{},
		gone:     map[string]struct{}{},
		notFound: map[string]int{},
		tracked:  map[key]*tracked{},
		binds:    newBindings(),
	}, nil
}

// Config returns the agent's configuration.
func (a *Agent) Config() Config { return a.cfg }

// Metrics returns the agent's metrics (its own registry).
func (a *Agent) Metrics() *Metrics { return a.metrics }

// UpsertPod sets the containers of pod to sample: those running with a
// container ID. It only records them; the next pass acts. It also wakes
// the resizes waiting on the pod (they read it from the pod source's
// cache, which must hold this version already, as an informer's does when
// it calls its handlers).
func (a *Agent) UpsertPod(pod *corev1.Pod) {
	a.feed.changed(pod.UID)
	a.binds.podChanged(pod)
	if d := a.podHook.Load(); d != nil {
		d.podUpdated(pod)
	}
	refs := runningContainers(pod)
	a.podsMu.Lock()
	defer a.podsMu.Unlock()
	if len(refs) == 0 {
		if _, ok := a.pods[pod.UID]; !ok {
			return
		}
		delete(a.pods, pod.UID)
	} else {
		if slices.Equal(a.pods[pod.UID], refs) {
			return
		}
		a.pods[pod.UID] = refs
	}
	a.podsGen++
}

// DeletePod forgets the pod with uid; the next pass drops its containers.
// Resizes waiting on the pod are woken and find it gone.
func (a *Agent) DeletePod(uid types.UID) {
	a.feed.changed(uid)
	a.binds.podDeleted(uid)
	a.podsMu.Lock()
	defer a.podsMu.Unlock()
	if _, ok := a.pods[uid]; ok {
		delete(a.pods, uid)
		a.podsGen++
	}
}

// SetSynced marks the pod source as having delivered its initial list.
// Ready reports true after that and one pass.
func (a *Agent) SetSynced() { a.synced.Store(true) }

// Ready reports whether the agent knows its pods and has sampled once since.
func (a *Agent) Ready() bool {
	if !a.synced.Load() {
		return false
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.passes > 0
}

func runningContainers(pod *corev1.Pod) []ContainerRef {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.Status.QOSClass == "" {
		return nil
	}
	var refs []ContainerRef
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range statuses {
			if st.State.Running == nil || st.ContainerID == "" {
				continue
			}
			refs = append(refs, ContainerRef{
				Namespace: pod.Namespace, Pod: pod.Name, PodUID: pod.UID,
				Container: st.Name, ContainerID: st.ContainerID, QOSClass: pod.Status.QOSClass,
			})
		}
	}
	if len(refs) > 0 && podLevelSet(pod) != nil {
		// The pod cgroup, whose limits the pod-level resources are: read
		// as one more container, named resize.PodLevel.
		refs = append(refs, ContainerRef{
			Namespace: pod.Namespace, Pod: pod.Name, PodUID: pod.UID,
			Container: resize.PodLevel, ContainerID: podLevelID(pod.UID), QOSClass: pod.Status.QOSClass,
		})
	}
	slices.SortFunc(refs, func(x, y ContainerRef) int { return strings.Compare(x.Container, y.Container) })
	return refs
}

// Run samples every Interval until ctx is done, then closes every handle.
// It returns nil when ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	t := a.clock.NewTicker(a.cfg.Interval)
	defer t.Stop()
	defer a.closeAll()
	var settled <-chan struct{}
	s, _ := a.cfg.Observer.(Settler)
	if s != nil {
		settled = s.Settled()
	}
	a.Pass(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			a.Pass(ctx)
		case <-settled:
			s.Settle(ctx)
		}
	}
}

// Pass runs one sampling pass: it brings the tracked set up to date with the
// pods, then reads every tracked container once. Run calls it every
// Interval; tests and benchmarks call it directly. Do not call Pass from two
// goroutines at once.
func (a *Agent) Pass(ctx context.Context) {
	log := logr.FromContextOrDiscard(ctx)
	start := a.clock.Now()
	a.reconcile(log)

	results := a.results[:0]
	var goneKeys []key
	// The loop goroutine is the only writer of a.tracked, so it may read
	// the map without the lock.
	for k, t := range a.tracked {
		s, err := t.handle.Read(a.clock.Now())
		if err != nil {
			// The container is dropped either way. A gone cgroup is not
			// looked for again; after another read error the container is
			// found afresh on the next pass.
			if errors.Is(err, cgroup.ErrGone) {
				a.metrics.gone.Inc()
				a.gone[t.ref.ContainerID] = struct{}{}
				log.V(1).Info("cgroup gone", "container", t.ref.String(), "containerID", t.ref.ContainerID)
			} else {
				a.metrics.readErrors.Inc()
				log.Error(err, "reading cgroup", "container", t.ref.String(), "path", t.path.String())
			}
			goneKeys = append(goneKeys, k)
			continue
		}
		p := Point{
			Signals:          cgroup.Rate(t.prev, s),
			MemoryUsageBytes: s.MemoryUsageBytes,
			MemoryPeakBytes:  s.MemoryPeakBytes,
			OOMKills:         s.OOMKills,
		}
		if !s.MemoryLimit.Unlimited {
			p.MemoryLimitBytes = s.MemoryLimit.Bytes
		}
		t.prev = s
		results = append(results, result{t, p})
	}

	a.mu.Lock()
	for _, k := range goneKeys {
		a.dropLocked(k)
	}
	for _, r := range results {
		r.t.ring.push(r.p)
	}
	a.passes++
	n := len(a.tracked)
	a.mu.Unlock()

	for _, r := range results {
		a.metrics.observe(r.t.ref, r.t.series, r.p)
		if a.cfg.Observer != nil {
			a.cfg.Observer.Observe(ctx, r.t.ref, r.p)
		}
	}
	if po, ok := a.cfg.Observer.(PassObserver); ok {
		po.PassDone(ctx)
	}
	clear(results) // let dropped containers' state go
	a.results = results[:0]
	took := a.clock.Since(start)
	a.metrics.tracked.Set(float64(n))
	a.metrics.passDuration.Observe(took.Seconds())
	if a.cfg.AfterPass != nil {
		a.cfg.AfterPass(took, n)
	}
}

// result is a point read in a pass, before it is recorded.
type result struct {
	t *tracked
	p Point
}

// reconcile opens handles for new containers and drops those no longer
// wanted.
func (a *Agent) reconcile(log logr.Logger) {
	a.podsMu.Lock()
	if a.podsGen != a.seenGen {
		a.seenGen = a.podsGen
		clear(a.wanted)
		for _, refs := range a.pods {
			for _, r := range refs {
				a.wanted[key{r.PodUID, r.Container}] = r
			}
		}
	}
	a.podsMu.Unlock()

	ids := make(map[string]struct{}, len(a.wanted))
	for k, ref := range a.wanted {
		ids[ref.ContainerID] = struct{}{}
		if t, ok := a.tracked[k]; ok && t.ref.ContainerID == ref.ContainerID {
			if t.ref != ref {
				a.mu.Lock()
				t.ref = ref
				a.mu.Unlock()
			}
			continue
		}
		if _, gone := a.gone[ref.ContainerID]; gone {
			continue
		}
		a.open(log, k, ref)
	}
	a.mu.Lock()
	for k, t := range a.tracked {
		if ref, ok := a.wanted[k]; !ok || ref.ContainerID != t.ref.ContainerID {
			a.dropLocked(k)
		}
	}
	a.mu.Unlock()
	// Forget IDs the pods no longer mention.
	for id := range a.gone {
		if _, ok := ids[id]; !ok {
			delete(a.gone, id)
		}
	}
	for id := range a.notFound {
		if _, ok := ids[id]; !ok {
			delete(a.notFound, id)
		}
	}
}

// open finds and opens the cgroup of ref and starts tracking it. A cgroup
// that does not exist yet (or any more) is tried again on the next pass.
func (a *Agent) open(log logr.Logger, k key, ref ContainerRef) {
	h, p, err := a.sampler.Open(ref)
	if err != nil {
		a.metrics.findErrors.Inc()
		a.notFound[ref.ContainerID]++
		if errors.Is(err, fs.ErrNotExist) && a.notFound[ref.ContainerID] < 10 {
			log.V(1).Info("cgroup not found yet", "container", ref.String(), "err", err.Error())
		} else {
			log.Error(err, "finding cgroup", "container", ref.String())
		}
		return
	}
	delete(a.notFound, ref.ContainerID)
	log.V(1).Info("tracking container", "container", ref.String(), "cgroup", p.String())
	a.mu.Lock()
	a.dropLocked(k)
	a.tracked[k] = &tracked{ref: ref, path: p, handle: h, ring: newRing(a.cfg.HistorySize), series: a.metrics.newSeries(ref)}
	a.mu.Unlock()
}

// dropLocked stops tracking k. a.mu must be held.
func (a *Agent) dropLocked(k key) {
	t, ok := a.tracked[k]
	if !ok {
		return
	}
	_ = t.handle.Close()
	delete(a.tracked, k)
	a.metrics.forget(t.ref)
}

func (a *Agent) closeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.tracked {
		a.dropLocked(k)
	}
	a.metrics.tracked.Set(0)
}

// Query selects history points: those after Since (all if zero), at most
// Limit of them, the newest (all if Limit <= 0).
type Query struct {
	Since time.Time
	Limit int
}

// Containers returns a view of every tracked container that has at least one
// point, sorted by namespace, pod and container, with the history q selects.
func (a *Agent) Containers(q Query) []ContainerView {
	return a.views(q, func(ContainerRef) bool { return true })
}

// Pod returns the views of one pod's containers, as Containers does.
func (a *Agent) Pod(namespace, name string, q Query) []ContainerView {
	return a.views(q, func(r ContainerRef) bool { return r.Namespace == namespace && r.Pod == name })
}

// Container returns the view of one container, or false if it is not
// tracked or has no point yet.
func (a *Agent) Container(namespace, pod, container string, q Query) (ContainerView, bool) {
	vs := a.views(q, func(r ContainerRef) bool {
		return r.Namespace == namespace && r.Pod == pod && r.Container == container
	})
	if len(vs) == 0 {
		return ContainerView{}, false
	}
	return vs[0], true
}

func (a *Agent) views(q Query, match func(ContainerRef) bool) []ContainerView {
	var since int64
	if !q.Since.IsZero() {
		since = q.Since.UnixNano()
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []ContainerView
	for _, t := range a.tracked {
		if !match(t.ref) {
			continue
		}
		latest, ok := t.ring.latest()
		if !ok {
			continue
		}
		out = append(out, ContainerView{
			ContainerRef: t.ref, Cgroup: t.path, Latest: latest,
			History: t.ring.appendRecent(nil, since, q.Limit),
		})
	}
	slices.SortFunc(out, func(x, y ContainerView) int {
		return strings.Compare(x.Namespace+"\x00"+x.Pod+"\x00"+x.Container, y.Namespace+"\x00"+y.Pod+"\x00"+y.Container)
	})
	return out
}
