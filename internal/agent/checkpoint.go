package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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

// DefaultPublishInterval is the least time between two snapshots of one
// pod: the controller writes a policy's checkpoint about once a minute.
const DefaultPublishInterval = time.Minute

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
	// last is when the last snapshot was taken (or rec started); seconds
	// the own seconds of samples it held.
	last     time.Time
	seconds  float64
	inFlight bool
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
// of each pod whose one is due. Called by PassDone on the loop goroutine
// (after it took in the finished publications); the patches go out as
// effects, at most one per pod, never while the pod's resize is in flight.
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
	for uid, st := range d.pods {
		if st.rec == nil || len(st.containers) == 0 {
			continue
		}
		pub := c.pubs[uid]
		if pub == nil || pub.rec != st.rec {
			pub = &publication{rec: st.rec, last: now, prior: d.prior(log, st)}
			c.pubs[uid] = pub
		}
		if st.phase == phaseInFlight || !pub.due(now, c.interval) {
			continue
		}
		pub.last = now
		s, seconds, err := snapshotOf(st, pub, now)
		if err != nil {
			log.Error(err, "taking the learnt history", "pod", st.ns+"/"+st.name)
			continue
		}
		if seconds <= pub.seconds {
			continue // nothing learnt since the last one
		}
		patch, err := s.MergePatch(uid)
		if err != nil {
			log.Error(err, "taking the learnt history", "pod", st.ns+"/"+st.name)
			continue
		}
		pub.inFlight = true
		ns, name := st.ns, st.name
		c.fx.start(ctx, "", func(ctx context.Context) settleFunc {
			pctx, cancel := context.WithTimeout(ctx, checkpointReadTimeout)
			err := c.patch(pctx, ns, name, patch)
			cancel()
			return func(_ context.Context, log logr.Logger) {
				pub.inFlight = false
				if err != nil {
					d.metrics.snapshots.WithLabelValues("error").Inc()
					log.Error(fmt.Errorf("patching annotation %s: %w", history.SnapshotAnnotation, err), "publishing the learnt history", "pod", ns+"/"+name)
					return
				}
				d.metrics.snapshots.WithLabelValues("ok").Inc()
				pub.seconds = seconds
				log.V(1).Info("published the learnt history", "pod", ns+"/"+name, "seconds", round3(seconds))
			}
		})
	}
}

// due reports whether a snapshot may be taken at now: none in flight and
// interval passed since the last one (or since the recommender started).
func (p *publication) due(now time.Time, interval time.Duration) bool {
	return !p.inFlight && now.Sub(p.last) >= interval
}

// snapshotOf is what st's containers learnt by themselves, merged with the
// publication's prior, at now, and the own seconds of samples behind it
// (both resources, all containers): 0 when nothing was learnt.
func snapshotOf(st *podState, pub *publication, now time.Time) (history.Snapshot, float64, error) {
	aggs := map[string]*recommend.Aggregate{}
	seconds := 0.0
	for name, cs := range st.containers {
		a := cs.rc.Snapshot(now)
		seconds += a.CPUSeconds + a.MemorySeconds
		aggs[name] = a
	}
	for _, name := range slices.Sorted(maps.Keys(pub.prior)) {
		a, ok := aggs[name]
		if !ok {
			a = recommend.NewAggregate(st.rec.Config())
			aggs[name] = a
		}
		if err := a.Merge(pub.prior[name]); err != nil {
			return history.Snapshot{}, 0, fmt.Errorf("carrying the earlier history of container %s: %w", name, err)
		}
	}
	s, err := history.NewSnapshot(now, aggs)
	return s, seconds, err
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
