package loadgen

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to write from Run while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond for up to 5 s; Run's loop runs on real time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	o := NewOptions()
	o.ControlDir = dir
	o.PodName = "p1"
	o.Listen = ""
	o.Memory = "1Mi"
	o.PollInterval = 5 * time.Millisecond
	o.Marker = filepath.Join(dir, "marker")
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, &stdout, &stderr) }()

	waitFor(t, "start line", func() bool { return stdout.String() == "cpu=0 memory=1Mi\n" })
	marker, err := os.ReadFile(o.Marker)
	if err != nil || !strings.HasPrefix(string(marker), "started ") {
		t.Errorf("marker %q, %v", marker, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "all"), []byte("memory=2Mi"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "all applied", func() bool { return strings.HasSuffix(stdout.String(), "cpu=0 memory=2Mi\n") })
	if err := os.WriteFile(filepath.Join(dir, "p1"), []byte("cpu=bad"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "error reported", func() bool { return strings.Contains(stderr.String(), `control file p1: parsing cpu "bad"`) })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v", err)
	}
	if n := strings.Count(stderr.String(), "\n"); n != 1 {
		t.Errorf("stderr has %d lines, want 1:\n%s", n, stderr.String())
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"cpu", func(o *Options) { o.CPU = "lots" }, "--cpu: parsing cpu"},
		{"memory", func(o *Options) { o.Memory = "1MB" }, "--memory: parsing memory"},
		{"poll", func(o *Options) { o.PollInterval = 0 }, "--poll-interval"},
		{"marker", func(o *Options) { o.Marker = "/nonexistent/dir/marker" }, "writing marker"},
		{"listen", func(o *Options) { o.Listen = "bad:address:x" }, "listening"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			o.ControlDir = t.TempDir()
			tt.edit(&o)
			err := Run(context.Background(), o, &syncBuffer{}, &syncBuffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestWriteMarker(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m")
	for _, sec := range []int64{1700000000, 1700000001} {
		if err := WriteMarker(p, time.Unix(sec, 5)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "started 1700000001\n" {
		t.Errorf("marker %q, %v", b, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("left %d files behind", len(entries))
	}
}

// TestStartupBurnsItsWork: the start-up burns its CPU time on its threads
// (by the thread CPU clock), /readyz is 503 until it is done and 200
// after, and a start-up cut short by its context is never Ready.
func TestStartupBurnsItsWork(t *testing.T) {
	s := &Startup{Work: 200 * time.Millisecond, Threads: 2}
	h := withReadyz(http.NotFoundHandler(), s)
	code := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code
	}
	if c := code(); c != http.StatusServiceUnavailable {
		t.Fatalf("/readyz before the start-up: %d, want 503", c)
	}
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	s.Run(context.Background())
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	used := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	t.Logf("start-up used %v of CPU", used)
	if used < s.Work {
		t.Errorf("start-up used %v of CPU, want at least its %v", used, s.Work)
	}
	if c := code(); c != http.StatusOK {
		t.Errorf("/readyz after the start-up: %d, want 200", c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cut := &Startup{Work: time.Hour, Threads: 1}
	cut.Run(ctx)
	if cut.Ready() {
		t.Error("a start-up cut short is Ready")
	}
}

// TestRunSaysGOMEMLIMIT: with GOMEMLIMIT set (from the downward API's
// limits.memory in the lab's restart-window test), snug-load says what it
// read and the Go runtime's limit, once, at its start.
func TestRunSaysGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "67108864")
	o := NewOptions()
	o.ControlDir = t.TempDir()
	o.PodName = "p1"
	o.Listen = ""
	o.PollInterval = 5 * time.Millisecond
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, &stdout, &stderr) }()
	waitFor(t, "the GOMEMLIMIT line", func() bool {
		return strings.Contains(stdout.String(), "GOMEMLIMIT 67108864: the Go runtime's memory limit is ")
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v", err)
	}
}
