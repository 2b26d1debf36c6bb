package experiment

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// podWatch follows one pod and keeps every version it receives, stamped
// with the time it arrived, so that a wait started after a patch still sees
// the versions that came in before it began, and timings are arrival times
// rather than the time a poll happened to look.
type podWatch struct {
	ns, name string
	stop     func()

	mu      sync.Mutex
	seen    []PodState
	gone    bool
	goneAt  time.Time
	err     error         // the watch broke
	changed chan struct{} // closed and replaced on every event
}

// watchPod starts following pod ns/name, which must exist. Stop it with
// w.stop().
func (s *session) watchPod(ctx context.Context, name string) (*podWatch, error) {
	pods := s.env.Client.CoreV1().Pods(s.run.Namespace)
	p, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("watching pod %s: %w", name, err)
	}
	w := &podWatch{ns: s.run.Namespace, name: name, changed: make(chan struct{})}
	w.seen = append(w.seen, stateOf(p, s.env.now()))
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	w.stop = func() {
		cancel()
		<-done
	}
	go func() {
		defer close(done)
		w.follow(wctx, pods, p.ResourceVersion, s.env.now)
	}()
	return w, nil
}

// follow watches the pod from resourceVersion rv until ctx ends or the
// pod is deleted. When the server closes a watch (the client's timeout
// does, every few seconds) it starts another where the last one ended; when
// that version is too old it reads the pod afresh.
func (w *podWatch) follow(ctx context.Context, pods typedcorev1.PodInterface, rv string, now func() time.Time) {
	sel := fields.OneTermEqualSelector("metadata.name", w.name).String()
	failures := 0
	for ctx.Err() == nil {
		wi, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			// A few failures in a row are retried: the API server may
			// be briefly busy. More end the waits with the error.
			if failures++; failures > 5 || ctx.Err() != nil {
				if ctx.Err() == nil {
					w.fail(fmt.Errorf("watch of pod %s/%s: %w", w.ns, w.name, err))
				}
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(failures) * 200 * time.Millisecond):
			}
			continue
		}
		failures = 0
		for ev := range wi.ResultChan() {
			if ev.Type == watch.Error {
				err := apierrors.FromObject(ev.Object)
				if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
					wi.Stop()
					w.fail(fmt.Errorf("watch of pod %s/%s: %w", w.ns, w.name, err))
					return
				}
				p, gerr := pods.Get(ctx, w.name, metav1.GetOptions{})
				switch {
				case apierrors.IsNotFound(gerr):
					ev = watch.Event{Type: watch.Deleted}
				case gerr != nil:
					wi.Stop()
					w.fail(fmt.Errorf("watch of pod %s/%s: %w", w.ns, w.name, gerr))
					return
				default:
					ev = watch.Event{Type: watch.Modified, Object: p}
				}
			}
			if m, ok := ev.Object.(metav1.Object); ok {
				rv = m.GetResourceVersion()
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			if !w.record(now(), ev) {
				wi.Stop()
				return
			}
		}
		wi.Stop()
	}
}

// fail ends the watch with err, which the waits then return.
func (w *podWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
	close(w.changed)
	w.changed = make(chan struct{})
}

// record keeps one event; it returns false when the watch should end.
func (w *podWatch) record(at time.Time, ev watch.Event) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer func() {
		close(w.changed)
		w.changed = make(chan struct{})
	}()
	switch ev.Type {
	case watch.Added, watch.Modified:
		if p, ok := ev.Object.(*corev1.Pod); ok {
			w.seen = append(w.seen, stateOf(p, at))
		}
	case watch.Deleted:
		w.gone, w.goneAt = true, at
		return false
	}
	return true
}

// mark returns a position in the history; waits from it only look at
// versions that arrive later.
func (w *podWatch) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

// latest is the newest version seen.
func (w *podWatch) latest() PodState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[len(w.seen)-1]
}

// between returns the versions seen in [from, to).
func (w *podWatch) between(from, to int) []PodState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]PodState(nil), w.seen[from:to]...)
}

// until waits for the first version at or after position from that
// satisfies cond, and returns it with its position. It gives up after
// timeout with an error naming what and the last version seen.
func (w *podWatch) until(ctx context.Context, from int, timeout time.Duration, what string, cond func(PodState) bool) (PodState, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for i := from; ; {
		w.mu.Lock()
		for ; i < len(w.seen); i++ {
			if cond(w.seen[i]) {
				s := w.seen[i]
				w.mu.Unlock()
				return s, i, nil
			}
		}
		last, gone, werr, ch := w.seen[len(w.seen)-1], w.gone, w.err, w.changed
		w.mu.Unlock()
		switch {
		case gone:
			return last, i, fmt.Errorf("waiting for %s: pod %s/%s was deleted; last seen: %s", what, w.ns, w.name, last)
		case werr != nil:
			return last, i, fmt.Errorf("waiting for %s: %w", what, werr)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return last, i, fmt.Errorf("waiting for %s on pod %s/%s: not seen within %s; last seen: %s", what, w.ns, w.name, timeout, last)
			}
			return last, i, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// untilGone waits for the pod's deletion and returns when it was seen.
func (w *podWatch) untilGone(ctx context.Context, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		w.mu.Lock()
		gone, at, werr, ch, last := w.gone, w.goneAt, w.err, w.changed, w.seen[len(w.seen)-1]
		w.mu.Unlock()
		switch {
		case gone:
			return at, nil
		case werr != nil:
			return time.Time{}, fmt.Errorf("waiting for pod %s/%s to be deleted: %w", w.ns, w.name, werr)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("waiting for pod %s/%s to be deleted: still there after %s; last seen: %s", w.ns, w.name, timeout, last)
		}
	}
}

// await waits like until and records on the timeline every change seen on
// the way, the last one as what. It returns the matching version and the
// position after it.
func (s *session) await(ctx context.Context, w *podWatch, from int, what string, cond func(PodState) bool) (PodState, int, error) {
	got, i, err := w.until(ctx, from, s.env.timeout(), what, cond)
	end := i + 1
	if err != nil {
		end = i
	}
	prev := PodState{}
	if from > 0 {
		prev = w.between(from-1, from)[0]
	}
	for j, st := range w.between(from, end) {
		// Desired only changes by the experiment's own patches, which
		// are on the timeline already.
		base := prev
		base.Desired = st.Desired
		change := st.changes(base)
		prev = st
		last := err == nil && from+j == i
		switch {
		case last:
			s.step(stepName(what, change), st, conditionNotes(st))
		case change != "" && from+j > 0:
			s.step(change, st, conditionNotes(st))
		}
	}
	return got, end, err
}

func stepName(what, change string) string {
	if change == "" {
		return what
	}
	return what + " (" + change + ")"
}

// conditionNotes joins the messages of the true resize conditions.
func conditionNotes(st PodState) string {
	var note string
	for _, c := range st.Conditions {
		if c.Status == corev1.ConditionTrue && c.Message != "" {
			if note != "" {
				note += "; "
			}
			note += string(c.Type) + ": " + c.Message
		}
	}
	return note
}

// running is the condition "the container runs and its resources are
// reported".
func running(st PodState) bool { return st.Running && st.ContainerID != "" && st.HasActual }
