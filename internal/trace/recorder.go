package trace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// UsageSource gives a container's measured usage. The node agent can
// satisfy it. Usage is called once per tick per running container, from
// one goroutine, outside the recorder's lock; it should answer quickly
// (from a cache) and return false when it knows nothing.
type UsageSource interface {
	Usage(namespace, pod, container string) (Usage, bool)
}

// DefaultInterval is the period of the samples taken between watch events.
const DefaultInterval = time.Second

// Options say what a Recorder follows and how.
type Options struct {
	// Namespace is the pods' namespace. Required.
	Namespace string
	// Pod is the name of the pod to trace. A pod deleted and created again
	// under the same name joins the trace again.
	Pod string
	// Selector is a label selector; every pod it selects, now or later,
	// joins the trace. Exactly one of Pod and Selector is required.
	Selector string
	// Interval is the period of the samples taken between watch events.
	// 0 means DefaultInterval.
	Interval time.Duration
	// Clock is the time source; nil means the real clock. Tests step a
	// fake one.
	Clock clock.WithTicker
	// Usage, when set, gives usage for the samples taken every Interval.
	Usage UsageSource
}

// Validate reports the first problem with the options.
func (o Options) Validate() error {
	switch {
	case o.Namespace == "":
		return errors.New("a namespace is required")
	case o.Pod == "" && o.Selector == "":
		return errors.New("give a pod name or a label selector")
	case o.Pod != "" && o.Selector != "":
		return errors.New("give a pod name or a label selector, not both")
	case o.Interval < 0:
		return fmt.Errorf("interval %s is negative", o.Interval)
	}
	if o.Selector != "" {
		if _, err := labels.Parse(o.Selector); err != nil {
			return fmt.Errorf("bad label selector %q: %w", o.Selector, err)
		}
	}
	return nil
}

// Recorder follows pods and records a Recording. Create it with
// NewRecorder, start it with Start and end it with Stop. All methods are
// safe for concurrent use.
type Recorder struct {
	client kubernetes.Interface
	opts   Options
	clock  clock.WithTicker

	mu        sync.Mutex
	rec       Recording
	live      map[types.UID]*corev1.Pod // last version of each pod not deleted
	order     []types.UID               // live pods in the order they joined
	traced    map[string]bool           // UIDs of every pod that was in the trace
	names     map[string]bool           // names of those pods
	pending   map[string][]Event        // events for pods not seen yet, by pod UID
	nPending  int                       // events in pending
	seenEvent map[types.UID]string      // event UID -> last resourceVersion
	rewatches int
	err       error
	origin    time.Time     // clock reading at Start, with its monotonic part
	changed   chan struct{} // closed and replaced on every change

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	done     chan struct{} // closed when the recorder ends by itself
	doneOnce sync.Once
	stopOnce sync.Once
}

// NewRecorder returns a recorder for the pods opts names.
func NewRecorder(client kubernetes.Interface, opts Options) (*Recorder, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	c := opts.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	return &Recorder{
		client:    client,
		opts:      opts,
		clock:     c,
		live:      map[types.UID]*corev1.Pod{},
		traced:    map[string]bool{},
		names:     map[string]bool{},
		pending:   map[string][]Event{},
		seenEvent: map[types.UID]string{},
		changed:   make(chan struct{}),
		done:      make(chan struct{}),
		rec: Recording{
			Format:          FormatVersion,
			Namespace:       opts.Namespace,
			Pod:             opts.Pod,
			Selector:        opts.Selector,
			IntervalSeconds: opts.Interval.Seconds(),
			Samples:         []Sample{},
			Events:          []Event{},
		},
	}, nil
}

// Start checks that the API server answers, that the namespace exists and,
// for a pod traced by name, that the pod exists; it then takes the first
// samples and starts following. The recorder runs until Stop, or until it
// fails by itself (Done). ctx bounds the checks only.
func (r *Recorder) Start(ctx context.Context) error {
	v, err := r.client.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("reaching the API server: %w", err)
	}
	ns := r.opts.Namespace
	if _, err := r.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("namespace %q not found", ns)
		case !apierrors.IsForbidden(err):
			return fmt.Errorf("reading namespace %q: %w", ns, err)
		}
	}
	pods, err := r.client.CoreV1().Pods(ns).List(ctx, r.podListOptions())
	if err != nil {
		return fmt.Errorf("listing pods to trace: %w", err)
	}
	if r.opts.Pod != "" && len(pods.Items) == 0 {
		return fmt.Errorf("pod %q not found in namespace %q", r.opts.Pod, ns)
	}
	events, err := r.client.CoreV1().Events(ns).List(ctx, r.eventListOptions())
	if err != nil {
		return fmt.Errorf("listing events: %w", err)
	}

	r.mu.Lock()
	r.origin = r.clock.Now()
	now := r.now()
	r.rec.ServerVersion = v.GitVersion
	r.rec.Started = now
	for i := range events.Items {
		// Events from before the trace are not part of it.
		r.seenEvent[events.Items[i].UID] = events.Items[i].ResourceVersion
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].CreationTimestamp.Before(&pods.Items[j].CreationTimestamp) })
	for i := range pods.Items {
		r.observePodLocked(&pods.Items[i], now, CauseList)
	}
	r.mu.Unlock()

	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	r.wg.Add(3)
	go func() {
		defer r.wg.Done()
		r.follow(fctx, "pods", pods.ResourceVersion, r.watchPods, r.relistPods, r.handlePod)
	}()
	go func() {
		defer r.wg.Done()
		r.follow(fctx, "events", events.ResourceVersion, r.watchEvents, r.relistEvents, r.handleEvent)
	}()
	go func() {
		defer r.wg.Done()
		r.tickLoop(fctx)
	}()
	return nil
}

// Stop ends the trace and returns the recording. The error is the one
// that ended the recorder early, if any; the recording is complete up to
// then either way. Stop may be called more than once.
func (r *Recorder) Stop() (*Recording, error) {
	r.stopOnce.Do(func() {
		if r.cancel != nil {
			r.cancel()
		}
		r.wg.Wait()
		r.mu.Lock()
		r.rec.Ended = r.now()
		if r.err != nil {
			r.rec.EndReason = r.err.Error()
		} else {
			r.rec.EndReason = "stopped"
		}
		r.notifyLocked()
		r.mu.Unlock()
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.copyLocked(), r.err
}

// Done is closed when the recorder fails by itself (its watches could not
// be restarted); Stop then returns the error.
func (r *Recorder) Done() <-chan struct{} { return r.done }

// Mark records a named instant, such as "patch sent".
func (r *Recorder) Mark(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Marks = append(r.rec.Marks, Mark{At: r.now(), Name: name})
	r.notifyLocked()
}

// Recording returns a copy of what is recorded so far.
func (r *Recorder) Recording() *Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.copyLocked()
}

// Rewatches is how many times a watch was started again after it ended
// (the client's timeout ends one every few seconds).
func (r *Recorder) Rewatches() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rewatches
}

// Wait blocks until cond holds for the recording, the recorder fails, or
// ctx ends. cond is called with the recorder's lock held on its own
// recording: it must neither keep nor change it.
func (r *Recorder) Wait(ctx context.Context, cond func(*Recording) bool) error {
	for {
		r.mu.Lock()
		ok, err, ch := cond(&r.rec), r.err, r.changed
		r.mu.Unlock()
		switch {
		case ok:
			return nil
		case err != nil:
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// now is the time to stamp a sample with: the wall time at Start plus the
// time elapsed since, measured on the monotonic clock. A step of the wall
// clock during a trace (NTP, a VM's time sync) then changes no duration in
// the recording, and a saved recording renders exactly as the live one,
// since JSON keeps no monotonic reading.
func (r *Recorder) now() time.Time {
	if r.origin.IsZero() {
		return r.clock.Now()
	}
	return r.origin.Round(0).Add(r.clock.Since(r.origin))
}

func (r *Recorder) copyLocked() *Recording {
	c := r.rec
	c.Marks = slices.Clone(r.rec.Marks)
	c.Samples = slices.Clone(r.rec.Samples)
	c.Events = slices.Clone(r.rec.Events)
	return &c
}

func (r *Recorder) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *Recorder) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.notifyLocked()
	r.mu.Unlock()
	r.doneOnce.Do(func() { close(r.done) })
}

func (r *Recorder) podListOptions() metav1.ListOptions {
	if r.opts.Pod != "" {
		return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", r.opts.Pod).String()}
	}
	return metav1.ListOptions{LabelSelector: r.opts.Selector}
}

func (r *Recorder) eventListOptions() metav1.ListOptions {
	set := fields.Set{"involvedObject.kind": "Pod", "involvedObject.namespace": r.opts.Namespace}
	if r.opts.Pod != "" {
		set["involvedObject.name"] = r.opts.Pod
	}
	return metav1.ListOptions{FieldSelector: fields.SelectorFromSet(set).String()}
}

// observePodLocked records a version of a pod; a pod seen for the first
// time joins the trace.
func (r *Recorder) observePodLocked(p *corev1.Pod, at time.Time, cause Cause) {
	uid := string(p.UID)
	if _, ok := r.live[p.UID]; !ok {
		r.order = append(r.order, p.UID)
		if !r.traced[uid] {
			r.traced[uid] = true
			r.names[p.Name] = true
			if evs := r.pending[uid]; len(evs) > 0 {
				r.rec.Events = append(r.rec.Events, evs...)
				sort.SliceStable(r.rec.Events, func(i, j int) bool { return r.rec.Events[i].At.Before(r.rec.Events[j].At) })
				delete(r.pending, uid)
				r.nPending -= len(evs)
			}
		}
	}
	r.live[p.UID] = p
	r.rec.Samples = append(r.rec.Samples, SampleOf(p, at, cause))
	r.notifyLocked()
}

// podGoneLocked records a pod's deletion; last is its final version.
func (r *Recorder) podGoneLocked(last *corev1.Pod, at time.Time) {
	if _, ok := r.live[last.UID]; !ok {
		return
	}
	s := SampleOf(last, at, CauseDeleted)
	s.Deleted = true
	r.rec.Samples = append(r.rec.Samples, s)
	delete(r.live, last.UID)
	r.order = slices.DeleteFunc(r.order, func(u types.UID) bool { return u == last.UID })
	r.notifyLocked()
}

// observeEventLocked records a version of an event about a pod.
func (r *Recorder) observeEventLocked(e *corev1.Event, at time.Time) {
	if r.seenEvent[e.UID] == e.ResourceVersion {
		return
	}
	r.seenEvent[e.UID] = e.ResourceVersion
	ev := EventOf(e, at)
	switch {
	case ev.PodUID != "" && r.traced[ev.PodUID], ev.PodUID == "" && r.names[ev.Pod]:
		r.rec.Events = append(r.rec.Events, ev)
		r.notifyLocked()
	case ev.PodUID != "" && r.nPending < maxPendingEvents:
		// The event may have overtaken its pod; keep it until the pod
		// joins. Most are about pods that never will (other pods of
		// the namespace), hence the bound.
		r.pending[ev.PodUID] = append(r.pending[ev.PodUID], ev)
		r.nPending++
	}
}

func (r *Recorder) handlePod(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.now()
	switch ev.Type {
	case watch.Added, watch.Modified:
		r.observePodLocked(p, at, CauseWatch)
	case watch.Deleted:
		r.podGoneLocked(p, at)
	}
}

func (r *Recorder) handleEvent(ev watch.Event) {
	e, ok := ev.Object.(*corev1.Event)
	if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observeEventLocked(e, r.now())
}

func (r *Recorder) watchPods(ctx context.Context, rv string) (watch.Interface, error) {
	o := r.podListOptions()
	o.ResourceVersion, o.AllowWatchBookmarks = rv, true
	return r.client.CoreV1().Pods(r.opts.Namespace).Watch(ctx, o)
}

func (r *Recorder) watchEvents(ctx context.Context, rv string) (watch.Interface, error) {
	o := r.eventListOptions()
	o.ResourceVersion, o.AllowWatchBookmarks = rv, true
	return r.client.CoreV1().Events(r.opts.Namespace).Watch(ctx, o)
}

// relistPods reads the pods afresh after their watch expired: changed pods
// get a sample, vanished ones end.
func (r *Recorder) relistPods(ctx context.Context) (string, error) {
	list, err := r.client.CoreV1().Pods(r.opts.Namespace).List(ctx, r.podListOptions())
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.now()
	present := map[types.UID]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		present[p.UID] = true
		if old, ok := r.live[p.UID]; ok && old.ResourceVersion == p.ResourceVersion {
			continue
		}
		r.observePodLocked(p, at, CauseRelist)
	}
	for _, uid := range slices.Clone(r.order) {
		if !present[uid] {
			r.podGoneLocked(r.live[uid], at)
		}
	}
	return list.ResourceVersion, nil
}

func (r *Recorder) relistEvents(ctx context.Context) (string, error) {
	list, err := r.client.CoreV1().Events(r.opts.Namespace).List(ctx, r.eventListOptions())
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.now()
	for i := range list.Items {
		r.observeEventLocked(&list.Items[i], at)
	}
	return list.ResourceVersion, nil
}

// maxPendingEvents bounds the events kept for pods not (yet) in the trace.
const maxPendingEvents = 2000

// maxWatchFailures is how many times in a row a watch may fail to start
// (with backoff, about half a minute in all) before the recorder gives up.
const maxWatchFailures = 10

// follow watches from resourceVersion rv until ctx ends. A watch that
// ends (the server's or the client's timeout) is started again from the
// last version seen; one whose version has expired re-lists first.
func (r *Recorder) follow(ctx context.Context, what, rv string,
	watchFrom func(context.Context, string) (watch.Interface, error),
	relist func(context.Context) (string, error),
	handle func(watch.Event)) {
	failures := 0
	retry := func(err error) bool {
		failures++
		if failures > maxWatchFailures {
			r.fail(fmt.Errorf("watching %s: giving up after %d failures: %w", what, failures-1, err))
			return false
		}
		t := r.clock.NewTimer(min(time.Duration(1<<min(failures, 4))*250*time.Millisecond, 5*time.Second))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
			return true
		}
	}
	expired := func(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }
	// relistInto lists afresh and moves *rv to the list's version; when
	// the list fails, *rv stays (the next watch expires again and lists
	// again) and it returns whether to go on.
	relistInto := func(rv *string) bool {
		fresh, err := relist(ctx)
		if err != nil {
			return retry(err)
		}
		*rv = fresh
		return true
	}
	for ctx.Err() == nil {
		w, err := watchFrom(ctx, rv)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && expired(err):
			if !relistInto(&rv) {
				return
			}
			continue
		case err != nil:
			if !retry(err) {
				return
			}
			continue
		}
		failures = 0
		var werr error
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				werr = apierrors.FromObject(ev.Object)
				break
			}
			if m, ok := ev.Object.(metav1.Object); ok && m.GetResourceVersion() != "" {
				rv = m.GetResourceVersion()
			}
			if ev.Type != watch.Bookmark {
				handle(ev)
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		r.rewatches++
		r.mu.Unlock()
		switch {
		case werr != nil && expired(werr):
			if !relistInto(&rv) {
				return
			}
		case werr != nil:
			if !retry(werr) {
				return
			}
		}
	}
}

// tickLoop takes a sample of every live pod every Interval.
func (r *Recorder) tickLoop(ctx context.Context) {
	t := r.clock.NewTicker(r.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			r.tick()
		}
	}
}

// tick samples every live pod, with usage when a source gives it.
func (r *Recorder) tick() {
	usage := map[string]Usage{}
	if r.opts.Usage != nil {
		r.mu.Lock()
		var want [][2]string
		for _, uid := range r.order {
			p := r.live[uid]
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Running != nil {
					want = append(want, [2]string{p.Name, cs.Name})
				}
			}
		}
		r.mu.Unlock()
		for _, w := range want {
			if u, ok := r.opts.Usage.Usage(r.opts.Namespace, w[0], w[1]); ok {
				usage[w[0]+"/"+w[1]] = u
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.now()
	for _, uid := range r.order {
		p := r.live[uid]
		s := SampleOf(p, at, CauseTick)
		for i := range s.Containers {
			if u, ok := usage[p.Name+"/"+s.Containers[i].Name]; ok {
				s.Containers[i].Usage = &u
			}
		}
		r.rec.Samples = append(r.rec.Samples, s)
	}
	if len(r.order) > 0 {
		r.notifyLocked()
	}
}
