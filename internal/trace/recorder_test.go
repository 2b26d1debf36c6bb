package trace

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestOptionsValidate(t *testing.T) {
	for name, o := range map[string]Options{
		"no namespace":  {Pod: "a"},
		"no target":     {Namespace: "n"},
		"both":          {Namespace: "n", Pod: "a", Selector: "app=a"},
		"bad selector":  {Namespace: "n", Selector: "app in (a"},
		"negative tick": {Namespace: "n", Pod: "a", Interval: -time.Second},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("%s: %+v accepted", name, o)
		}
	}
	if err := (Options{Namespace: "n", Selector: "app=a,tier!=db"}).Validate(); err != nil {
		t.Errorf("valid selector refused: %v", err)
	}
}

// TestTicksFollowTheClock steps a fake clock and expects one sample per
// interval, with usage from the source.
func TestTicksFollowTheClock(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	u := &fakeUsage{}
	r, err := NewRecorder(nil, Options{Namespace: "demo", Pod: "app-1", Clock: clk, Usage: u})
	if err != nil {
		t.Fatal(err)
	}
	r.rec.Started = t0
	p := newPod("app-1", "uid-1").desired("100m", "200m", "64Mi", "64Mi").actual("100m", "200m", "64Mi", "64Mi")
	r.mu.Lock()
	r.observePodLocked(p.pod, t0, CauseList)
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.tickLoop(ctx)
	}()
	for i := 1; i <= 3; i++ {
		// Wait until the loop waits on the ticker before stepping.
		for !clk.HasWaiters() {
			time.Sleep(time.Millisecond)
		}
		clk.Step(time.Second)
		want := i + 1
		if err := r.Wait(context.Background(), func(rec *Recording) bool { return len(rec.Samples) == want }); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	<-done
	rec := r.Recording()
	for i, s := range rec.Samples[1:] {
		if s.Cause != CauseTick || !s.At.Equal(t0.Add(time.Duration(i+1)*time.Second)) {
			t.Errorf("sample %d: %s at t+%s, want a tick at t+%ds", i+1, s.Cause, s.At.Sub(t0), i+1)
		}
		if s.Containers[0].Usage == nil {
			t.Errorf("sample %d has no usage", i+1)
		}
	}
	if rec.Samples[0].Containers[0].Usage != nil {
		t.Error("the listed sample has usage; only ticks should")
	}
}

// TestEventBeforeItsPod keeps an event that overtook its pod until the pod
// joins, and drops events of pods never traced and repeated versions.
func TestEventBeforeItsPod(t *testing.T) {
	r, err := NewRecorder(nil, Options{Namespace: "demo", Selector: "app=x"})
	if err != nil {
		t.Fatal(err)
	}
	p := newPod("app-2", "uid-2").desired("100m", "", "", "")
	other := newPod("other", "uid-9")
	r.mu.Lock()
	r.observeEventLocked(event(p.pod, "e1", "5", "Scheduled", "assigned", at(1)), at(1))
	r.observeEventLocked(event(other.pod, "e2", "6", "Scheduled", "assigned", at(1.5)), at(1.5))
	if len(r.rec.Events) != 0 {
		t.Errorf("events %v recorded before their pod joined", r.rec.Events)
	}
	r.observePodLocked(p.pod, at(2), CauseWatch)
	r.observeEventLocked(event(p.pod, "e3", "7", "ResizeStarted", "go", at(3)), at(3))
	r.observeEventLocked(event(p.pod, "e3", "7", "ResizeStarted", "go", at(3)), at(3.5))
	r.mu.Unlock()
	var got []string
	for _, e := range r.Recording().Events {
		got = append(got, e.Pod+" "+e.Reason)
	}
	want := []string{"app-2 Scheduled", "app-2 ResizeStarted"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("events %v, want %v", got, want)
	}
	if !r.Recording().Events[1].Resize || r.Recording().Events[0].Resize {
		t.Error("only ResizeStarted is a resize event")
	}
}

func TestIsResizeEvent(t *testing.T) {
	for _, c := range []struct {
		reason, source, message string
		want                    bool
	}{
		{"ResizeDeferred", "kubelet", "", true},
		{"ResizeInfeasible", "kubelet", "", true},
		{"EvictedByVPA", "vpa-updater", "Pod was evicted by VPA Updater", true},
		{"InPlaceResizedByVPA", "", "", true},
		{"Resized", "snug", "", true},
		{"Started", "kubelet", "Started container app", false},
		{"Killing", "kubelet", "Container app resize requires restart", true},
	} {
		if got := IsResizeEvent(c.reason, c.source, c.message); got != c.want {
			t.Errorf("IsResizeEvent(%q, %q, %q) = %v, want %v", c.reason, c.source, c.message, got, c.want)
		}
	}
}
