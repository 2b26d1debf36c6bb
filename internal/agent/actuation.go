package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/clock"

	"github.com/snug-dev/snug/internal/actuate"
	"github.com/snug-dev/snug/internal/recommend"
	"github.com/snug-dev/snug/internal/resize"
)

// The agent actuates through internal/actuate only: actuate.Send patches
// the resize subresource and classifies the API server's answer,
// actuate.Wait classifies the pod's versions (fed from the agent's pod
// informer, not a watch of its own) and actuate.Revert clears an
// Infeasible resize. A resize runs as one of the Decider's effects
// (effects.go), one per pod at a time, off the loop goroutine; the loop
// goroutine, which owns the recommender state, takes its outcome in as
// soon as the executor says one is ready (Settle, between passes) or at
// the start of the next PassDone.

// sendJob is one resize handed to the executor (Decider.send).
type sendJob struct {
	uid types.UID
	pod *corev1.Pod
	// policy is the name of the pod's policy (its namespace is the pod's).
	policy string
	patch  []byte
	// want is what the patch sets, for actuate.Wait.
	want      []resize.ContainerPlan
	decidedAt time.Time
	plan      *resize.Plan
	caps      []recommend.Cap
	// namespaceCapped: the plan was fitted to the namespace's quotas or
	// LimitRanges (caps are then its new requests).
	namespaceCapped bool
	// inputs names the versions of the namespace's objects the plan was
	// fitted to (namespaceInputs); a refused patch is kept with them.
	inputs  string
	summary string
	// deferred is set for a behavior.deferred action (FitToNode or
	// Revert), which sets the spec to spec and is no decision of the
	// recommender's.
	deferred string
	spec     map[string]corev1.ResourceRequirements
	// boost is set for a startup boost's resize (boost.go): Boost or
	// Unboost; boosted names the containers whose boost it starts or
	// ends. No decision of the recommender's either.
	boost   string
	boosted []string
}

// targets are the job's new values, for the JSON API.
func (j sendJob) targets() map[string]ResourcesJSON {
	if j.plan != nil {
		return planTargets(j.plan)
	}
	return specTargets(j.spec)
}

// specPlans are a fit's new spec as what actuate.Wait waits for.
func specPlans(spec map[string]corev1.ResourceRequirements) []resize.ContainerPlan {
	out := make([]resize.ContainerPlan, 0, len(spec))
	for name, rr := range spec {
		out = append(out, resize.ContainerPlan{Name: name, Requests: rr.Requests, Limits: rr.Limits})
	}
	return out
}

// sendResult is what became of a sendJob.
type sendResult struct {
	job        sendJob
	outcome    resize.Outcome
	err        error
	message    string
	sentAt     time.Time
	patchedAt  time.Time
	finishedAt time.Time
	reverted   bool
}

// sender runs a sendJob through an actuate.Actuator. Decider.send runs it
// on the executor, keyed by the pod, so a pod has at most one job out.
type sender struct {
	act     *actuate.Actuator
	timeout time.Duration
	clock   clock.PassiveClock
}

// run sends the job's patch, waits for the outcome and reverts an
// Infeasible resize (waiting until the kubelet has dropped it, so that the
// pod's next job starts from a settled pod).
func (q *sender) run(ctx context.Context, j sendJob) sendResult {
	r := sendResult{job: j}
	res, err := q.act.Send(ctx, j.pod, j.patch, actuate.SendOptions{})
	r.sentAt, r.patchedAt = res.Sent, res.Answered
	if err == nil && res.Outcome == resize.InProgress {
		res, err = q.act.Wait(ctx, res, j.want, actuate.WaitOptions{Timeout: q.timeout})
	}
	r.finishedAt = q.clock.Now()
	if err != nil {
		r.outcome, r.err = resize.Unknown, err
		return r
	}
	if !res.Decided.IsZero() {
		r.finishedAt = res.Decided
	}
	r.outcome, r.message = res.Outcome, res.Message
	switch res.Outcome {
	case resize.Conflict:
		if res.APIError != nil {
			r.message = "the pod's resources changed since it was planned (the patch's test failed): " + res.Message
		}
	case resize.Timeout:
		r.message = fmt.Sprintf("no answer in %s (last seen %s)", q.timeout, res.Last)
		if res.Message != "" {
			r.message += ": " + res.Message
		}
	case resize.Infeasible:
		rv, err := q.act.Revert(ctx, res.Pod, actuate.ApplyOptions{Wait: true, WaitOptions: actuate.WaitOptions{Timeout: q.timeout}})
		r.reverted = err == nil && rv.Outcome == resize.Applied
	}
	return r
}

// podFeed tells the followers of a pod that the informer has a new version
// of it. The pod informer's handlers call changed (through UpsertPod and
// DeletePod); cacheSource follows. The zero value is ready to use.
type podFeed struct {
	mu   sync.Mutex
	subs map[types.UID][]chan struct{}
}

// changed wakes the followers of the pod with uid. It never blocks.
func (f *podFeed) changed(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs[uid] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (f *podFeed) subscribe(uid types.UID) chan struct{} {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[types.UID][]chan struct{}{}
	}
	f.subs[uid] = append(f.subs[uid], ch)
	return ch
}

func (f *podFeed) unsubscribe(uid types.UID, ch chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	subs := f.subs[uid]
	for i, c := range subs {
		if c == ch {
			subs = append(subs[:i], subs[i+1:]...)
			break
		}
	}
	if len(subs) == 0 {
		delete(f.subs, uid)
	} else {
		f.subs[uid] = subs
	}
}

// cacheSource is an actuate.PodSource over the agent's pod informer: it
// reads the pod from the informer's cache each time the feed says the pod
// changed, so a resize costs no watch of its own.
type cacheSource struct {
	feed *podFeed
	pods corelisters.PodLister
}

// Follow implements actuate.PodSource. Versions older than from (a lower
// generation: the cache can lag behind the patch's answer) are skipped,
// so a cache not yet updated is never taken for someone else's change.
func (s cacheSource) Follow(ctx context.Context, from *corev1.Pod, see func(*corev1.Pod) bool) error {
	ch := s.feed.subscribe(from.UID)
	defer s.feed.unsubscribe(from.UID, ch)
	last := from.ResourceVersion
	for {
		p, err := s.pods.Pods(from.Namespace).Get(from.Name)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && p.UID != from.UID):
			return fmt.Errorf("reading pod %s/%s from the cache: %w", from.Namespace, from.Name, actuate.ErrPodDeleted)
		case err != nil:
			return fmt.Errorf("reading pod %s/%s from the cache: %w", from.Namespace, from.Name, err)
		}
		if p.ResourceVersion != last && p.Generation >= from.Generation {
			last = p.ResourceVersion
			if see(p) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

var _ actuate.PodSource = cacheSource{}
