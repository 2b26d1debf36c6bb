package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHandleSeesChanges checks that a kept-open Handle reads fresh values,
// as after a resize, and that the buffer grows for a file bigger than it.
func TestHandleSeesChanges(t *testing.T) {
	h := newHost(t, hostUnified)
	rel := "kubepods/burstable/pod" + testUID + "/" + testID
	h.fill(rel, "v2/throttled")
	r := Reader{Root: h.root}
	p, err := r.Find(testUID, "Burstable", "containerd://"+testID)
	if err != nil {
		t.Fatal(err)
	}
	hd, err := r.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	if hd.Path() != p {
		t.Errorf("Path() = %+v, want %+v", hd.Path(), p)
	}

	// A resize to 750m and 512 MiB, and a memory.stat padded past the
	// 8 KiB buffer with keys snug ignores.
	h.write(filepath.Join(rel, "cpu.max"), "75000 100000\n")
	h.write(filepath.Join(rel, "memory.max"), "536870912\n")
	big := strings.Repeat("future_counter 1\n", 1000) + string(fixture(t, "v2/throttled/memory.stat"))
	h.write(filepath.Join(rel, "memory.stat"), big)
	s, err := hd.Read(t0)
	if err != nil {
		t.Fatal(err)
	}
	if s.CPULimit.Millicores() != 750 || s.MemoryLimit.Bytes != 512<<20 || s.MemoryInactiveFileBytes != 8388608 {
		t.Errorf("stale read: cpu %+v memory %+v inactive %d", s.CPULimit, s.MemoryLimit, s.MemoryInactiveFileBytes)
	}
}

func TestHandleGoneAndClosed(t *testing.T) {
	h := newHost(t, hostV1)
	rel := "kubepods/besteffort/pod" + testUID + "/" + testID
	h.fill(rel, "v1/busy")
	r := Reader{Root: h.root}
	p, err := r.Find(testUID, "BestEffort", testID)
	if err != nil {
		t.Fatal(err)
	}
	hd, err := r.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	hd.Close()
	if _, err := hd.Read(t0); err == nil || errors.Is(err, ErrGone) {
		t.Errorf("Read after Close: got %v, want a non-gone error", err)
	}

	// On cgroupfs, reading a kept-open file of a removed cgroup fails
	// with ENODEV. Ordinary files stay readable, so only Open can be
	// tested here.
	if err := os.RemoveAll(p.Memory); err != nil {
		t.Fatal(err)
	}
	_, err = r.Open(p)
	if !errors.Is(err, ErrGone) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a removed cgroup: got %v, want ErrGone", err)
	}
	if _, err := r.Open(Path{}); err == nil {
		t.Error("Open of a zero Path succeeded")
	}
}

func TestHandleOptionalFiles(t *testing.T) {
	// v2/odd has no cpu.max, cpu.weight, memory.peak or io.pressure.
	h := newHost(t, hostUnified)
	h.fill("kubepods/pod"+testUID+"/"+testID, "v2/odd")
	r := Reader{Root: h.root}
	p, err := r.Find(testUID, "Guaranteed", "cri-o://"+testID)
	if err == nil {
		t.Fatalf("found %+v under the containerd name for a cri-o ID", p)
	}
	p, err = r.Find(testUID, "Guaranteed", "containerd://"+testID)
	if err != nil {
		t.Fatal(err)
	}
	hd, err := r.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	s, err := hd.Read(t0)
	if err != nil {
		t.Fatal(err)
	}
	if s != wantV2Odd {
		t.Errorf("got %+v, want %+v", s, wantV2Odd)
	}
}
