//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snug-dev/snug/lab/internal/lab"
)

// The cgroup-v2 node's User-Mode Linux guest very rarely locks up (see
// internal/lab/node2_watch.go): its pods stop answering and every wait on
// them, and every cleanup that waits for them to go, fails. That is the
// emulator's fault, not a result about snug. While TestV2Node runs, a
// watchdog reads the guest's heartbeat; when it stops it says so, with
// what the guest's processes do, and reboots the guest (its pods are
// deleted, so cleanups end). A case whose wait fails after a hang began is
// skipped with that reason, not failed, and runV2Case runs it once more on
// the new guest; a case that failed before the hang, or fails again on
// the new guest, fails.

// v2StallAfter is the silence that makes the watchdog call the guest hung.
// It beats once a second; the longest silence of a running guest is
// logged at the end of TestV2Node (v2Watchdog.stop).
const v2StallAfter = 20 * time.Second

type v2Hang struct {
	at    time.Time
	stall lab.V2Stall
}

type v2Watchdog struct {
	mu        sync.Mutex
	hangs     []v2Hang
	caseStart time.Time
	skipped   bool          // a case was skipped for a hang since caseStart
	maxSilent time.Duration // the longest gap between two beats
	cancel    context.CancelFunc
	done      chan struct{}
}

// v2Watch is the running watchdog, nil outside TestV2Node.
var v2Watch atomic.Pointer[v2Watchdog]

// startV2Watchdog watches the guest until the test's end.
func startV2Watchdog(t *testing.T) *v2Watchdog {
	ctx, cancel := context.WithCancel(context.Background())
	w := &v2Watchdog{cancel: cancel, done: make(chan struct{})}
	v2Watch.Store(w)
	go w.run(ctx, t)
	t.Cleanup(func() { w.stop(t) })
	return w
}

func (w *v2Watchdog) run(ctx context.Context, t *testing.T) {
	defer close(w.done)
	known := time.Now()
	var last time.Time // the last beat seen
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		stall, hung := lab.V2Stalled(labOpts, known, v2StallAfter)
		if !hung {
			// A silence counts once it has ended: the gap between two beats.
			if beat, ok := lab.V2LastBeat(labOpts); ok && beat.After(last) {
				if !last.IsZero() {
					w.mu.Lock()
					w.maxSilent = max(w.maxSilent, beat.Sub(last))
					w.mu.Unlock()
				}
				last = beat
			}
			continue
		}
		w.mu.Lock()
		w.hangs = append(w.hangs, v2Hang{at: time.Now(), stall: stall})
		w.mu.Unlock()
		t.Logf("WATCHDOG: the cgroup-v2 guest hung: %s; rebooting it", stall)
		var out bytes.Buffer
		start := time.Now()
		err := lab.RebootV2Node(ctx, labOpts, &out)
		t.Logf("WATCHDOG: $ snug-lab v2-node reboot (%.1fs)\n%s", time.Since(start).Seconds(), out.String())
		if err != nil {
			t.Errorf("WATCHDOG: rebooting the hung cgroup-v2 guest: %v", err)
			return
		}
		known, last = time.Now(), time.Time{}
	}
}

// stop ends the watchdog and logs what it saw.
func (w *v2Watchdog) stop(t *testing.T) {
	v2Watch.Store(nil)
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("WATCHDOG: %d guest hang(s); the longest gap between two heartbeats was %.1fs (a hang is %s of silence)",
		len(w.hangs), w.maxSilent.Seconds(), v2StallAfter)
}

// beginCase marks the start of a case: hangs from now on are its own.
func (w *v2Watchdog) beginCase() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.caseStart, w.skipped = time.Now(), false
}

// hangInCase is the first hang since the running case began.
func (w *v2Watchdog) hangInCase() (v2Hang, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.hangs {
		if !h.at.Before(w.caseStart) {
			return h, true
		}
	}
	return v2Hang{}, false
}

// errV2Hung is non-nil once the guest hung during the running case of
// TestV2Node: a wait on its pods cannot end well after that.
func errV2Hung() error {
	w := v2Watch.Load()
	if w == nil {
		return nil
	}
	if h, ok := w.hangInCase(); ok {
		return fmt.Errorf("the cgroup-v2 guest hung at %s (%s)", h.at.UTC().Format("15:04:05"), h.stall)
	}
	return nil
}

// skipIfV2Hung skips the test, saying why and what failed after it, when
// the guest hung during the running case of TestV2Node; the callers are
// the helpers' failure paths. A test that already failed stays failed.
func skipIfV2Hung(t *testing.T, format string, args ...any) {
	t.Helper()
	err := errV2Hung()
	if err == nil {
		return
	}
	w := v2Watch.Load()
	w.mu.Lock()
	w.skipped = true
	w.mu.Unlock()
	t.Skipf("not a result: %v; after it: %s", err, fmt.Sprintf(format, args...))
}

// skipIfV2Stalled is for a check that read the guest at readAt and is
// about to fail: a guest that had already stopped beating then (a hang
// the watchdog declares only after v2StallAfter of silence) gave a stale
// or starved reading, not a result. It waits until the guest beats after
// readAt (it ran: the failure stands, and the caller reports it) or the
// watchdog declares the hang (the test is skipped, as skipIfV2Hung does).
// Outside TestV2Node it returns at once.
func skipIfV2Stalled(t *testing.T, readAt time.Time, format string, args ...any) {
	t.Helper()
	if v2Watch.Load() == nil {
		return
	}
	deadline := time.Now().Add(v2StallAfter + 10*time.Second)
	for time.Now().Before(deadline) {
		if errV2Hung() != nil {
			skipIfV2Hung(t, format, args...)
		}
		if beat, ok := lab.V2LastBeat(labOpts); ok && beat.After(readAt) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	skipIfV2Hung(t, format, args...)
}

// runV2Case runs a case of TestV2Node as a subtest, and once more when the
// guest's hang cut it short (it was skipped for it).
func runV2Case(t *testing.T, w *v2Watchdog, name string, f func(*testing.T)) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		w.beginCase()
		t.Run(name, f)
		w.mu.Lock()
		again := w.skipped
		w.mu.Unlock()
		if !again {
			return
		}
		if attempt == 2 {
			t.Errorf("case %s: the cgroup-v2 guest hung in both runs of it; it was never run to its end", name)
			return
		}
		t.Logf("WATCHDOG: case %s was cut short by the guest's hang; running it again on the rebooted guest", name)
	}
}
