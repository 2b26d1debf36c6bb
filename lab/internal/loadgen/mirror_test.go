package loadgen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMirrorOnce(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := newMirror(from, "kubepods.slice", to)
	pod := filepath.Join("kubepods.slice", "kubepods-burstable.slice", "kubepods-burstable-podx.slice")
	ctr := filepath.Join(pod, "cri-containerd-abc.scope")
	write(filepath.Join(from, "cgroup.controllers"), "cpu io memory pids\n")
	write(filepath.Join(from, "system.slice", "cpu.max"), "max 100000\n")
	write(filepath.Join(from, ctr, "cpu.max"), "25000 100000\n")
	write(filepath.Join(from, ctr, "cgroup.procs"), "42\n")
	write(filepath.Join(from, pod, "memory.max"), "134217728\n")
	if err := m.once(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"cgroup.controllers":             "cpu io memory pids\n",
		filepath.Join(ctr, "cpu.max"):    "25000 100000\n",
		filepath.Join(pod, "memory.max"): "134217728\n",
	} {
		got, err := os.ReadFile(filepath.Join(to, path))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	for _, path := range []string{"system.slice", filepath.Join(ctr, "cgroup.procs")} {
		if _, err := os.Stat(filepath.Join(to, path)); err == nil {
			t.Errorf("%s was copied; only %v below kubepods.slice are", path, MirrorFiles)
		}
	}
	// A change is copied; a cgroup that goes is removed.
	write(filepath.Join(from, ctr, "cpu.max"), "50000 100000\n")
	if err := m.once(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(to, ctr, "cpu.max")); string(got) != "50000 100000\n" {
		t.Errorf("after the change cpu.max = %q", got)
	}
	if err := os.RemoveAll(filepath.Join(from, ctr)); err != nil {
		t.Fatal(err)
	}
	if err := m.once(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(to, ctr)); err == nil {
		t.Error("the removed container's cgroup is still mirrored")
	}
	if _, err := os.Stat(filepath.Join(to, pod, "memory.max")); err != nil {
		t.Errorf("the pod's cgroup went with its container's: %v", err)
	}
}

// TestMirrorHeartbeat: while it copies, the mirror writes the time to its
// heartbeat file, and it stops when its context is done.
func TestMirrorHeartbeat(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	beat := filepath.Join(t.TempDir(), "heartbeat")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- MirrorCgroups(ctx, from, "kubepods.slice", to, 10*time.Millisecond, beat) }()
	var got []byte
	for got == nil {
		select {
		case err := <-done:
			t.Fatalf("the mirror returned before its context was done: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		got, _ = os.ReadFile(beat)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(got)))
	if err != nil {
		t.Fatalf("heartbeat %q: %v", got, err)
	}
	if at.Before(start.Add(-time.Second)) || at.After(time.Now().Add(time.Second)) {
		t.Errorf("heartbeat %s, want the time of the run (%s)", at, start)
	}
	if err := MirrorCgroups(t.Context(), from, "kubepods.slice", to, 0, beat); err == nil {
		t.Error("interval 0: no error")
	}
}
