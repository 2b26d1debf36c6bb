package lab

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestV2Stalled: a guest (here a sleeping process recorded as the guest's
// kernel) is stalled only once its heartbeat, its start, its boot marks
// and the caller's known time are all older than the bound; one that is
// not running is not stalled.
func TestV2Stalled(t *testing.T) {
	o := NewOptions()
	o.Dir = t.TempDir()
	if _, ok := V2Stalled(o, time.Time{}, time.Second); ok {
		t.Fatal("no guest: stalled")
	}
	g, err := startProc(o, v2Component, []string{"sleep", "60"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = killSession(g) })
	for _, d := range []string{"state"} {
		if err := os.MkdirAll(o.v2Share(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := V2Stalled(o, time.Time{}, time.Minute); ok {
		t.Error("just started: stalled")
	}
	old := time.Now().Add(-5 * time.Minute)
	age := func(p string) {
		t.Helper()
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	age(pidFile(o, v2Component))
	if err := os.WriteFile(o.v2Heartbeat(), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := V2Stalled(o, time.Time{}, time.Minute); ok {
		t.Error("a fresh heartbeat: stalled")
	}
	age(o.v2Heartbeat())
	if _, ok := V2Stalled(o, time.Now(), time.Minute); ok {
		t.Error("known to run just now: stalled")
	}
	// The detail reads the process's state: wait until sleep sleeps (on a
	// busy machine it can still be starting, state R, for a while).
	for deadline := time.Now().Add(30 * time.Second); ; {
		st, err := procState(g.PID)
		if err != nil {
			t.Fatal(err)
		}
		if st == "S" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep 60 (pid %d) still in state %s after 30s", g.PID, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s, ok := V2Stalled(o, time.Time{}, time.Minute)
	if !ok {
		t.Fatal("heartbeat and start 5 minutes old: not stalled")
	}
	if s.Silent < 4*time.Minute || !s.LastBeat.Equal(old) {
		t.Errorf("silent %s, last beat %s; want about 5m and %s", s.Silent, s.LastBeat, old)
	}
	if got := s.String(); !strings.Contains(got, "no heartbeat for 3") || !strings.Contains(got, "state S") {
		t.Errorf("detail %q, want the silence and the process's state", got)
	}
	if err := killSession(g); err != nil {
		t.Fatal(err)
	}
	if _, ok := V2Stalled(o, time.Time{}, time.Minute); ok {
		t.Error("a guest that exited: stalled")
	}
}
