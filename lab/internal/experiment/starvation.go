package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/internal/cgroup"
	"github.com/snug-dev/snug/lab/internal/quality"
)

// StarvationInterval is how often a StarvationWatch reads the cgroups: the
// second that "starvation ended" is defined over.
const StarvationInterval = time.Second

// StarvationWatch follows the CPU throttling of a workload's containers
// from a load step, reading their cgroup files on this machine (the lab's
// node) directly, not through snug's agent: the kernel's nr_periods and
// nr_throttled, every StarvationInterval. It says when starvation ended by
// the replay's definition (quality.Ending): the end of the first 2 s in
// which every container ran throttled under 5 % of its periods. Its
// methods are safe for concurrent use.
type StarvationWatch struct {
	handles []*cgroup.Handle
	started time.Time
	stop    context.CancelFunc
	done    chan struct{} // closed when the loop has returned
	ended   chan struct{} // closed when starvation ended

	mu      sync.Mutex
	endedAt time.Time
	// recent are the last intervals' throttled and runnable periods,
	// summed over the containers, newest last.
	recent []periods
	// readErr is the last failed read (a container gone, for one).
	readErr error
}

type periods struct{ throttled, total uint64 }

// StarvationTarget names one container's cgroup: its pod's UID and QoS
// class and the container ID from the pod's status.
type StarvationTarget struct {
	PodUID, QOSClass, ContainerID string
}

// StarvationTargets are the named container of each pod.
func StarvationTargets(pods []corev1.Pod, container string) ([]StarvationTarget, error) {
	var ts []StarvationTarget
	for _, p := range pods {
		id := ""
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == container {
				id = cs.ContainerID
			}
		}
		if id == "" {
			return nil, fmt.Errorf("pod %s/%s has no running container %q", p.Namespace, p.Name, container)
		}
		ts = append(ts, StarvationTarget{PodUID: string(p.UID), QOSClass: string(p.Status.QOSClass), ContainerID: id})
	}
	return ts, nil
}

// WatchStarvation finds and opens the targets' cgroups under root (for
// example /sys/fs/cgroup), takes the first reading now (the start of the
// first interval: call it just before the load step) and reads every
// StarvationInterval until ctx ends, Stop, or starvation ended.
func WatchStarvation(ctx context.Context, root string, targets []StarvationTarget) (*StarvationWatch, error) {
	if len(targets) == 0 {
		return nil, errors.New("watching starvation: no containers")
	}
	r := cgroup.Reader{Root: root}
	w := &StarvationWatch{done: make(chan struct{}), ended: make(chan struct{})}
	for _, t := range targets {
		p, err := r.Find(t.PodUID, t.QOSClass, t.ContainerID)
		if err == nil {
			var h *cgroup.Handle
			h, err = r.Open(p)
			w.handles = append(w.handles, h)
		}
		if err != nil {
			w.closeHandles()
			return nil, fmt.Errorf("watching starvation of container %s: %w", t.ContainerID, err)
		}
	}
	prev := make([]cgroup.Sample, len(w.handles))
	w.started = time.Now()
	for i, h := range w.handles {
		s, err := h.Read(w.started)
		if err != nil {
			w.closeHandles()
			return nil, fmt.Errorf("reading cgroup %s: %w", h.Path(), err)
		}
		prev[i] = s
	}
	ctx, w.stop = context.WithCancel(ctx)
	go w.loop(ctx, prev)
	return w, nil
}

func (w *StarvationWatch) loop(ctx context.Context, prev []cgroup.Sample) {
	defer close(w.done)
	defer w.closeHandles()
	ending := quality.NewEnding(len(w.handles))
	throttled := make([]float64, len(w.handles))
	last := w.started
	tick := time.NewTicker(StarvationInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Now()
		var sum periods
		var readErr error
		for i, h := range w.handles {
			throttled[i] = math.NaN()
			cur, err := h.Read(now)
			if err != nil {
				readErr = fmt.Errorf("reading cgroup %s: %w", h.Path(), err)
				continue
			}
			if sig := cgroup.Rate(prev[i], cur); sig.HasRate {
				throttled[i] = sig.CPUThrottledFraction
				sum.throttled += cur.CPUThrottledPeriods - prev[i].CPUThrottledPeriods
				sum.total += cur.CPUPeriods - prev[i].CPUPeriods
			}
			prev[i] = cur
		}
		ended := ending.Observe(now.Sub(last).Seconds(), throttled)
		last = now
		w.mu.Lock()
		w.recent = append(w.recent, sum)
		if n := len(w.recent); n > quality.EndedSeconds {
			w.recent = w.recent[n-quality.EndedSeconds:]
		}
		if readErr != nil {
			w.readErr = readErr
		}
		if ended {
			w.endedAt = now
		}
		w.mu.Unlock()
		if ended {
			close(w.ended)
			return
		}
	}
}

func (w *StarvationWatch) closeHandles() {
	for _, h := range w.handles {
		if h != nil {
			h.Close()
		}
	}
}

// Started is the first reading's time, where the first interval begins.
func (w *StarvationWatch) Started() time.Time { return w.started }

// Ended is when starvation ended (the reading that closed the calm 2 s);
// ok is false while it has not.
func (w *StarvationWatch) Ended() (at time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.endedAt, !w.endedAt.IsZero()
}

// Wait returns when starvation ended, or ctx's error when ctx ends first
// (or the watch's, when it was stopped before).
func (w *StarvationWatch) Wait(ctx context.Context) (time.Time, error) {
	select {
	case <-w.ended:
		at, _ := w.Ended()
		return at, nil
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	case <-w.done:
		if at, ok := w.Ended(); ok {
			return at, nil
		}
		return time.Time{}, errors.New("the starvation watch stopped before starvation ended")
	}
}

// Throttled is the share of runnable CFS periods throttled over the last
// (up to) 2 s read, summed over the containers; ok is false before a
// first interval, or when the containers ran in no period.
func (w *StarvationWatch) Throttled() (fraction float64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sum periods
	for _, p := range w.recent {
		sum.throttled += p.throttled
		sum.total += p.total
	}
	if sum.total == 0 {
		return 0, false
	}
	return float64(sum.throttled) / float64(sum.total), true
}

// Err is the last failed read, nil when every read worked.
func (w *StarvationWatch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.readErr
}

// Stop ends the readings and closes the cgroup files. It is safe to call
// more than once.
func (w *StarvationWatch) Stop() {
	w.stop()
	<-w.done
}
