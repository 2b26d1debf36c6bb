package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/kube"
	"github.com/snug-dev/snug/internal/recommend"
)

// The agent's half of the learnt history (docs/controller.md): it
// publishes what each covered pod's containers learnt in the pod's
// history.SnapshotAnnotation, and seeds a container it starts to
// recommend for from the policy's checkpoint ConfigMap, which the
// controller folds those snapshots into.

// DefaultPublishInterval is the least time between two looks at a pod's
// snapshot (and so between two snapshots of it): the controller writes a
// policy's checkpoint about once a minute.
const DefaultPublishInterval = time.Minute

// A look at a pod's snapshot publishes it only when the pod's checkpoint
// would change materially (publishReason): a pod in steady state writes
// nothing, so the agent's writes grow with what changes, not with its
// pods (issue 29: a PATCH per pod per minute was the cluster's largest
// write stream, and bookkeeping). Why a snapshot went out (the reason
// label of snug_agent_snapshots_published_total):
const (
	// publishFirst: the pod's first, when it carried none.
	publishFirst = "first"
	// publishMoved: a container's workload targets, as a pod seeded from
	// the snapshot would be sized, left the hysteresis band around the
	// last published ones (recommend.Config's GrowBand and ShrinkBand: a
	// move inside it would resize no pod), or its memory peak rose by more
	// than GrowBand, or the set of containers changed.
	publishMoved = "moved"
	// publishLearnt: the snapshot's seconds of samples doubled since the
	// last published one, so an agent that dies loses at most half of what
	// the checkpoint would hold of the pod, and a pod writes about
	// log2(its lifetime / interval) snapshots in steady state.
	publishLearnt = "learnt"
	// publishFinal: the pod is terminating; its last snapshot goes out at
	// once, so that the controller retires all it learnt.
	publishFinal = "final"
)

// MaxSnapshotsPerPass bounds the snapshot patches one pass of the loop
// (a second) starts; the pods over it are looked at on the next passes,
// terminating pods first, then those waiting longest. Without it every pod
// an agent starts tracking at once (its start, a rollout, a namespace
// deleted) came due in the same second: on the scale bench 50 hollow
// agents of 30 pods each sent their 1,500 first snapshots together, and
// 373 patches ran out of checkpointReadTimeout waiting in client-go's
// token bucket (5 requests/s, burst 10, the agent's client), which the
// agent's resizes share. Two a second take at most 2 of those 5, and a
// node's 110 pods (the kubelet's default maximum) are all published
// within a minute, the publish interval.
const MaxSnapshotsPerPass = 2

const (
	// checkpointTTL is how long a checkpoint read for one container seeds
	// the policy's other new containers too: an agent restart starts every
	// pod of a policy in one pass, so one read serves them, not one per
	// pod. Short, so that a pod created later (a rolling update, a
	// replacement) sees what the controller wrote since.
	checkpointTTL = 5 * time.Second
	// checkpointReadTimeout bounds the read; a container waits for it
	// before its first sample is recommended on, and goes unseeded after.
	checkpointReadTimeout = 5 * time.Second
)

// CheckpointConfig turns on the agent's half of the learnt history.
type CheckpointConfig struct {
	// Client reads checkpoint ConfigMaps (get configmaps) and patches the
	// snapshot annotation onto pods (patch pods). Required.
	Client *kube.Client
	// PublishInterval is the least time between two snapshots of a pod,
	// and from tracking a pod to its first. 0 means DefaultPublishInterval.
	PublishInterval time.Duration
}

// SeedJSON is the workload history a container's recommender started
// from, in the JSON API.
type SeedJSON struct {
	// Checkpoint is the ConfigMap it came from, namespace/name.
	Checkpoint string `json:"checkpoint"`
	// CPUSeconds and MemorySeconds are the seconds of samples behind it.
	CPUSeconds    float64 `json:"cpuSeconds"`
	MemorySeconds float64 `json:"memorySeconds"`
	// MemoryPeakBytes is the workload's memory peak it carried, if any.
	MemoryPeakBytes int64 `json:"memoryPeakBytes,omitempty"`
}

// checkpoints is the Decider's checkpoint state, the loop goroutine's;
// reads and publications run as its effects (effects.go).
type checkpoints struct {
	interval time.Duration
	patch    func(ctx context.Context, ns, name string, patch []byte) error
	reader   *checkpointReader
	fx       *executor

	pubs  map[types.UID]*publication
	seeds map[key]SeedJSON
}

// publication is the publishing state of one pod's recommender.
type publication struct {
	// rec is the recommender it describes; a new one (a changed policy)
	// starts a new publication.
	rec *recommend.Pod
	// prior is what the pod's annotation held when rec started (an earlier
	// agent, an earlier policy generation): carried into every snapshot,
	// so that a later snapshot still holds all the pod's history.
	prior map[string]*recommend.Aggregate
	// last is when the snapshot was last looked at (or rec started);
	// seconds the own seconds of samples the last published one held.
	last     time.Time
	seconds  float64
	inFlight bool
	// sent sums up what the pod's annotation holds: the last published
	// snapshot, or the prior; nil when it holds none. final: the
	// terminating pod's last snapshot went out.
	sent  *snapshotSum
	final bool
}

// snapshotSum is what publishReason compares of two snapshots: their
// seconds of samples (both resources, all containers, prior included)
// and each container's workload targets.
type snapshotSum struct {
	seconds    float64
	containers map[string]containerSum
}

type containerSum struct {
	cpu, memory, peak int64
}

// sumOf sums up aggs at now under cfg.
func sumOf(aggs map[string]*recommend.Aggregate, cfg recommend.Config, now time.Time) (*snapshotSum, error) {
	s := &snapshotSum{containers: make(map[string]containerSum, len(aggs))}
	for name, a := range aggs {
		r, err := a.Recommendation(cfg, recommend.Bounds{}, now)
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", name, err)
		}
		s.seconds += a.CPUSeconds + a.MemorySeconds
		s.containers[name] = containerSum{cpu: r.CPU.Target, memory: r.Memory.Target, peak: a.MemoryPeakBytes}
	}
	return s, nil
}

// publishReason says why a snapshot summed up as next should replace the
// one summed up as sent (nil: none is published), or "" when it should
// not: see the publish constants.
func publishReason(sent, next *snapshotSum, cfg recommend.Config) string {
	if sent == nil {
		return publishFirst
	}
	if len(next.containers) != len(sent.containers) {
		return publishMoved
	}
	outside := func(was, is int64) bool {
		return float64(is) > float64(was)*(1+cfg.GrowBand) || float64(is) < float64(was)*(1-cfg.ShrinkBand)
	}
	for name, n := range next.containers {
		o, ok := sent.containers[name]
		if !ok || outside(o.cpu, n.cpu) || outside(o.memory, n.memory) ||
			float64(n.peak) > float64(o.peak)*(1+cfg.GrowBand) {
			return publishMoved
		}
	}
	if next.seconds >= 2*sent.seconds {
		return publishLearnt
	}
	return ""
}

// UseCheckpoints turns on publishing snapshots and seeding from
// checkpoints. Call it after Decide and before Run. A dry run seeds but
// never publishes.
func (d *Decider) UseCheckpoints(cfg CheckpointConfig) error {
	if cfg.Client == nil {
		return errors.New("configuring checkpoints: a client is required")
	}
	if cfg.PublishInterval < 0 {
		return fmt.Errorf("configuring checkpoints: publish interval %v is negative", cfg.PublishInterval)
	}
	if cfg.PublishInterval == 0 {
		cfg.PublishInterval = DefaultPublishInterval
	}
	cs := cfg.Client
	d.ckpt = newCheckpoints(cfg.PublishInterval, d.clock, d.fx,
		func(ctx context.Context, ns, name string) (map[string]string, error) {
			cm, err := cs.ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			return cm.Data, nil
		},
		func(ctx context.Context, ns, name string, patch []byte) error {
			_, err := cs.Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		})
	return nil
}

func newCheckpoints(interval time.Duration, clk interface{ Now() time.Time }, fx *executor,
	read func(ctx context.Context, ns, name string) (map[string]string, error),
	patch func(ctx context.Context, ns, name string, patch []byte) error) *checkpoints {
	return &checkpoints{
		interval: interval, patch: patch, fx: fx,
		reader: &checkpointReader{read: read, now: clk.Now, ttl: checkpointTTL, fx: fx, entries: map[string]*readCheckpoint{}},
		pubs:   map[types.UID]*publication{}, seeds: map[key]SeedJSON{},
	}
}

// seed returns what a container of st starts from: the workload aggregate
// for its name in pol's checkpoint, or nil when there is none or it does
// not fit (logged). ok is false while the checkpoint is being read; the
// caller tries again with the next sample. Loop goroutine only.
func (d *Decider) seed(ctx context.Context, log logr.Logger, pol *v1alpha1.SnugPolicy, st *podState, container string) (seed *recommend.Aggregate, ok bool) {
	c := d.ckpt
	if c == nil {
		return nil, true
	}
	name := history.CheckpointName(pol.Name)
	data, ok, err := c.reader.get(ctx, pol.Namespace, name)
	if !ok {
		return nil, false
	}
	k := key{st.uid, container}
	delete(c.seeds, k)
	a, why, err := seedFrom(data, err, container, st.rec.Config())
	d.metrics.seeds.WithLabelValues(why).Inc()
	switch why {
	case seedUsed:
	case seedNone, seedEmpty:
		log.V(1).Info("no learnt history to start from", "checkpoint", pol.Namespace+"/"+name)
		return nil, true
	default:
		// Not fatal: the container learns from scratch.
		log.Info("starting without the workload's history", "checkpoint", pol.Namespace+"/"+name, "why", why, "err", err.Error())
		return nil, true
	}
	c.seeds[k] = SeedJSON{Checkpoint: pol.Namespace + "/" + name, CPUSeconds: a.CPUSeconds, MemorySeconds: a.MemorySeconds, MemoryPeakBytes: a.MemoryPeakBytes}
	log.Info("starting from the workload's history", "checkpoint", pol.Namespace+"/"+name,
		"cpuSeconds", round3(a.CPUSeconds), "memorySeconds", round3(a.MemorySeconds), "memoryPeakBytes", a.MemoryPeakBytes)
	return a, true
}

// Why a container was or was not seeded (the label of
// snug_agent_checkpoint_seeds_total).
const (
	seedUsed         = "seeded"
	seedNone         = "none"         // no checkpoint, or no key for the container
	seedEmpty        = "empty"        // a key with no samples
	seedUnreadable   = "unreadable"   // the ConfigMap could not be read
	seedBad          = "bad"          // the key does not decode
	seedIncompatible = "incompatible" // other half-lives than the agent's
)

// seedFrom picks a container's seed out of checkpoint data read with
// readErr, checked against cfg. It returns the seed (only with seedUsed),
// why, and for the failures the cause.
func seedFrom(data map[string]string, readErr error, container string, cfg recommend.Config) (*recommend.Aggregate, string, error) {
	if readErr != nil {
		return nil, seedUnreadable, readErr
	}
	a, err := history.CheckpointAggregate(data, container)
	switch {
	case err != nil:
		return nil, seedBad, err
	case a == nil:
		return nil, seedNone, nil
	case a.CPUSeconds == 0 && a.MemorySeconds == 0:
		return nil, seedEmpty, nil
	}
	if err := a.Compatible(cfg); err != nil {
		return nil, seedIncompatible, err
	}
	return a, seedUsed, nil
}

// publishSnapshots forgets pods that are gone and publishes the snapshot
// of each pod whose one is due and would change the checkpoint materially
// (publishReason), or whose pod is terminating. Called by PassDone on the
// loop goroutine (after it took in the finished publications); the
// patches go out as effects, at most one per pod, never while the pod's
// resize is in flight.
func (d *Decider) publishSnapshots(ctx context.Context, log logr.Logger, now time.Time) {
	c := d.ckpt
	if c == nil {
		return
	}
	for uid := range c.pubs {
		if _, ok := d.pods[uid]; !ok {
			delete(c.pubs, uid)
		}
	}
	for k := range c.seeds {
		if _, ok := d.pods[k.uid]; !ok {
			delete(c.seeds, k)
		}
	}
	if d.cfg.DryRun {
		return
	}
	// The pods whose snapshot is due: terminating ones first (their last
	// snapshot is lost once the pod is gone), then the longest unlooked-at.
	type due struct {
		uid         types.UID
		st          *podState
		pub         *publication
		terminating bool
	}
	var dues []due
	for uid, st := range d.pods {
		if st.rec == nil || len(st.containers) == 0 {
			continue
		}
		pub := c.pubs[uid]
		if pub == nil || pub.rec != st.rec {
			pub = d.startPublication(log, st, pub, now)
			c.pubs[uid] = pub
		}
		if st.phase == phaseInFlight || pub.inFlight || pub.final {
			continue
		}
		terminating := false
		if pod, err := d.podOf(uid, st.ns, st.name); err == nil && pod.DeletionTimestamp != nil {
			terminating = true
		}
		if !terminating && now.Sub(pub.last) < c.interval {
			continue
		}
		dues = append(dues, due{uid, st, pub, terminating})
	}
	slices.SortFunc(dues, func(a, b due) int {
		if a.terminating != b.terminating {
			if a.terminating {
				return -1
			}
			return 1
		}
		if c := a.pub.last.Compare(b.pub.last); c != 0 {
			return c
		}
		return strings.Compare(string(a.uid), string(b.uid))
	})
	sent := 0
	for _, du := range dues {
		if sent >= MaxSnapshotsPerPass {
			// Looked at on a later pass: pub.last is unchanged.
			d.metrics.snapshotsDelayed.Inc()
			continue
		}
		uid, st, pub, terminating := du.uid, du.st, du.pub, du.terminating
		pub.last = now
		aggs, seconds, err := snapshotOf(st, pub, now)
		if err != nil {
			log.Error(err, "taking the learnt history", "pod", st.ns+"/"+st.name)
			continue
		}
		if seconds <= pub.seconds {
			continue // nothing learnt since the last one
		}
		cfg := st.rec.Config()
		sum, err := sumOf(aggs, cfg, now)
		if err != nil {
			log.Error(err, "taking the learnt history", "pod", st.ns+"/"+st.name)
			continue
		}
		reason := publishFinal
		if !terminating {
			if reason = publishReason(pub.sent, sum, cfg); reason == "" {
				d.metrics.snapshotsHeld.Inc()
				continue
			}
		}
		snap, err := history.NewSnapshot(now, aggs)
		var patch []byte
		if err == nil {
			patch, err = snap.MergePatch(uid)
		}
		if err != nil {
			log.Error(err, "taking the learnt history", "pod", st.ns+"/"+st.name)
			continue
		}
		pub.inFlight = true
		sent++
		ns, name := st.ns, st.name
		c.fx.start(ctx, "", func(ctx context.Context) settleFunc {
			pctx, cancel := context.WithTimeout(ctx, checkpointReadTimeout)
			err := c.patch(pctx, ns, name, patch)
			cancel()
			return func(_ context.Context, log logr.Logger) {
				pub.inFlight = false
				if err != nil {
					d.metrics.snapshots.WithLabelValues("error", reason).Inc()
					log.Error(fmt.Errorf("patching annotation %s: %w", history.SnapshotAnnotation, err), "publishing the learnt history", "pod", ns+"/"+name)
					return
				}
				d.metrics.snapshots.WithLabelValues("ok", reason).Inc()
				pub.seconds, pub.sent, pub.final = seconds, sum, reason == publishFinal
				log.V(1).Info("published the learnt history", "pod", ns+"/"+name, "reason", reason, "seconds", round3(sum.seconds))
			}
		})
	}
}

// startPublication starts publishing what st's recommender learns. Its
// prior is what the pod learnt before: the earlier recommender's whole
// history (old, a policy's earlier generation), published or not, when
// that fits st's; else what the pod's annotation holds (an earlier agent).
// Either way later snapshots are compared with what the annotation holds.
func (d *Decider) startPublication(log logr.Logger, st *podState, old *publication, now time.Time) *publication {
	pub := &publication{rec: st.rec, last: now}
	if old != nil && old.rec != nil {
		carried, err := carriedOf(old, st.rec.Config(), now)
		if err == nil {
			pub.prior, pub.sent = carried, old.sent
			return pub
		}
		log.Info("starting from the pod's published history only", "pod", st.ns+"/"+st.name, "err", err.Error())
	}
	pub.prior = d.prior(log, st)
	if len(pub.prior) > 0 {
		sum, err := sumOf(pub.prior, st.rec.Config(), now)
		if err != nil {
			// Not fatal: the first snapshot is published as the pod's first.
			log.Error(err, "summing up the pod's earlier learnt history", "pod", st.ns+"/"+st.name)
		}
		pub.sent = sum
	}
	return pub
}

// carriedOf is all an ended publication's pod learnt: its recommender's
// containers with its prior, at now, each fitting cfg.
func carriedOf(old *publication, cfg recommend.Config, now time.Time) (map[string]*recommend.Aggregate, error) {
	out := map[string]*recommend.Aggregate{}
	for _, c := range old.rec.Containers() {
		out[c.Name()] = c.Snapshot(now)
	}
	if err := mergePrior(out, old.prior, old.rec.Config()); err != nil {
		return nil, err
	}
	for name, a := range out {
		if err := a.Compatible(cfg); err != nil {
			return nil, fmt.Errorf("container %s: %w", name, err)
		}
	}
	return out, nil
}

// snapshotOf is what st's containers learnt by themselves, merged with the
// publication's prior, at now, by container, and the own seconds of
// samples behind it (both resources, all containers): 0 when nothing was
// learnt.
func snapshotOf(st *podState, pub *publication, now time.Time) (map[string]*recommend.Aggregate, float64, error) {
	aggs := map[string]*recommend.Aggregate{}
	seconds := 0.0
	for name, cs := range st.containers {
		a := cs.rc.Snapshot(now)
		seconds += a.CPUSeconds + a.MemorySeconds
		aggs[name] = a
	}
	if err := mergePrior(aggs, pub.prior, st.rec.Config()); err != nil {
		return nil, 0, err
	}
	return aggs, seconds, nil
}

// mergePrior merges each container's prior into aggs, adding an empty
// aggregate under cfg for a container aggs lacks.
func mergePrior(aggs, prior map[string]*recommend.Aggregate, cfg recommend.Config) error {
	for _, name := range slices.Sorted(maps.Keys(prior)) {
		a, ok := aggs[name]
		if !ok {
			a = recommend.NewAggregate(cfg)
			aggs[name] = a
		}
		if err := a.Merge(prior[name]); err != nil {
			return fmt.Errorf("carrying the earlier history of container %s: %w", name, err)
		}
	}
	return nil
}

// prior reads the snapshot a pod already carries when its recommender
// starts, keeping the containers whose aggregate fits the recommender.
func (d *Decider) prior(log logr.Logger, st *podState) map[string]*recommend.Aggregate {
	pod, err := d.cfg.Pods.Pods(st.ns).Get(st.name)
	if err != nil || pod.UID != st.uid {
		return nil
	}
	return priorOf(log, pod, st.rec.Config())
}

func priorOf(log logr.Logger, pod *corev1.Pod, cfg recommend.Config) map[string]*recommend.Aggregate {
	s, ok, err := history.ParseSnapshot(pod)
	if err != nil {
		log.Info("dropping the pod's earlier learnt history", "pod", pod.Namespace+"/"+pod.Name, "err", err.Error())
	}
	if !ok {
		return nil
	}
	out := map[string]*recommend.Aggregate{}
	for _, name := range slices.Sorted(maps.Keys(s.Containers)) {
		a, err := s.Aggregate(name)
		if err == nil {
			err = a.Compatible(cfg)
		}
		if err != nil {
			log.Info("dropping the pod's earlier learnt history", "pod", pod.Namespace+"/"+pod.Name, "container", name, "err", err.Error())
			continue
		}
		out[name] = a
	}
	return out
}

// checkpointReader reads checkpoint ConfigMaps as effects (effects.go)
// and keeps each for checkpointTTL. Loop only.
type checkpointReader struct {
	read func(ctx context.Context, ns, name string) (map[string]string, error)
	now  func() time.Time
	ttl  time.Duration
	fx   *executor

	entries map[string]*readCheckpoint
}

type readCheckpoint struct {
	data map[string]string
	err  error
	at   time.Time
}

// get returns, with ok, the checkpoint's data (nil if it does not exist)
// or the error reading it, if it was read within the TTL. Otherwise it
// starts reading it (unless a read runs) and returns ok false; once the
// loop has taken the read in, a later call has the answer.
func (r *checkpointReader) get(ctx context.Context, ns, name string) (data map[string]string, ok bool, err error) {
	k := ns + "/" + name
	now := r.now()
	if e := r.entries[k]; e != nil && now.Sub(e.at) < r.ttl {
		return e.data, true, e.err
	}
	for k, e := range r.entries {
		if now.Sub(e.at) >= r.ttl {
			delete(r.entries, k)
		}
	}
	r.fx.start(ctx, "checkpoint/"+k, func(ctx context.Context) settleFunc {
		rctx, cancel := context.WithTimeout(ctx, checkpointReadTimeout)
		data, err := r.read(rctx, ns, name)
		cancel()
		if err != nil {
			err = fmt.Errorf("reading checkpoint %s: %w", k, err)
		}
		e := &readCheckpoint{data: data, err: err, at: r.now()}
		return func(context.Context, logr.Logger) { r.entries[k] = e }
	})
	return nil, false, nil
}
