package trace

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"
)

// TestFollowRewatchesFromLastVersion drives follow with scripted watches:
// a watch that ends is started again from the last resourceVersion seen,
// bookmarks move that version, an expired version re-lists, and an
// error that is not about expiry is retried after a backoff.
func TestFollowRewatchesFromLastVersion(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	r, err := NewRecorder(nil, Options{Namespace: "demo", Pod: "app-1", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app-1", ResourceVersion: rv}}
	}
	gone := apierrors.NewResourceExpired("too old resource version")
	busy := apierrors.NewServiceUnavailable("busy")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	var asked, handled []string
	relists := 0
	script := []func() (watch.Interface, error){
		func() (watch.Interface, error) { // events, then the client's timeout
			return scripted(watch.Event{Type: watch.Modified, Object: pod("11")}, watch.Event{Type: watch.Bookmark, Object: pod("15")}), nil
		},
		func() (watch.Interface, error) { // the version expired
			return scripted(watch.Event{Type: watch.Error, Object: &gone.ErrStatus}), nil
		},
		func() (watch.Interface, error) { return nil, busy }, // retried after a backoff
		func() (watch.Interface, error) {
			return scripted(watch.Event{Type: watch.Modified, Object: pod("31")}), nil
		},
	}
	watchFrom := func(_ context.Context, rv string) (watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, rv)
		if len(asked) > len(script) {
			cancel()
			return nil, context.Canceled
		}
		return script[len(asked)-1]()
	}
	relist := func(context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		relists++
		return "20", nil
	}
	handle := func(ev watch.Event) {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, ev.Object.(*corev1.Pod).ResourceVersion)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.follow(ctx, "pods", "10", watchFrom, relist, handle)
	}()
	// The failed start waits on the fake clock; step it until follow
	// is done.
	for {
		select {
		case <-done:
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff([]string{"10", "15", "20", "20", "31"}, asked); diff != "" {
				t.Errorf("watches started from (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"11", "31"}, handled); diff != "" {
				t.Errorf("events handled (-want +got):\n%s", diff)
			}
			if relists != 1 {
				t.Errorf("%d relists, want 1", relists)
			}
			if r.Rewatches() != 3 {
				t.Errorf("%d rewatches, want 3", r.Rewatches())
			}
			return
		default:
			if clk.HasWaiters() {
				clk.Step(5 * time.Second)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// TestFollowGivesUp ends the recorder with the error after too many failed
// starts.
func TestFollowGivesUp(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	r, _ := NewRecorder(nil, Options{Namespace: "demo", Pod: "app-1", Clock: clk})
	down := errors.New("connection refused")
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.follow(context.Background(), "pods", "1",
			func(context.Context, string) (watch.Interface, error) { return nil, down },
			func(context.Context) (string, error) { return "", down },
			func(watch.Event) {})
	}()
	for {
		select {
		case <-done:
			select {
			case <-r.Done():
			default:
				t.Fatal("Done not closed")
			}
			if _, err := r.Stop(); !errors.Is(err, down) {
				t.Errorf("Stop error %v, want it to wrap %v", err, down)
			}
			return
		default:
			if clk.HasWaiters() {
				clk.Step(5 * time.Second)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// scripted is a watch that delivers evs and ends, as a watch the client's
// timeout cuts does.
func scripted(evs ...watch.Event) watch.Interface {
	ch := make(chan watch.Event, len(evs))
	for _, e := range evs {
		ch <- e
	}
	close(ch)
	return &closedWatch{ch: ch}
}

type closedWatch struct{ ch chan watch.Event }

func (w *closedWatch) Stop()                          {}
func (w *closedWatch) ResultChan() <-chan watch.Event { return w.ch }
