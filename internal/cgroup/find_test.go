package cgroup

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The pod UID as systemd slice names spell it.
const testUIDSystemd = "0e6a5b9c_1d2e_4f3a_8b7c_6d5e4f3a2b1c"

// findCases spell out, literally, where the kubelet and each runtime put a
// container's cgroup, relative to a hierarchy root.
var findCases = []struct {
	name        string
	qos         string
	containerID string
	rel         string
}{
	{"cgroupfs containerd burstable", "Burstable", "containerd://" + testID,
		"kubepods/burstable/pod" + testUID + "/" + testID},
	{"cgroupfs containerd guaranteed", "Guaranteed", "containerd://" + testID,
		"kubepods/pod" + testUID + "/" + testID},
	{"cgroupfs containerd besteffort", "BestEffort", "containerd://" + testID,
		"kubepods/besteffort/pod" + testUID + "/" + testID},
	{"cgroupfs cri-o burstable", "burstable", "cri-o://" + testID,
		"kubepods/burstable/pod" + testUID + "/crio-" + testID},
	{"cgroupfs cri-o guaranteed", "GUARANTEED", "cri-o://" + testID,
		"kubepods/pod" + testUID + "/crio-" + testID},
	{"cgroupfs docker besteffort", "besteffort", "docker://" + testID,
		"kubepods/besteffort/pod" + testUID + "/" + testID},
	{"systemd containerd burstable", "Burstable", "containerd://" + testID,
		"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + testUIDSystemd + ".slice/cri-containerd-" + testID + ".scope"},
	{"systemd containerd guaranteed", "Guaranteed", "containerd://" + testID,
		"kubepods.slice/kubepods-pod" + testUIDSystemd + ".slice/cri-containerd-" + testID + ".scope"},
	{"systemd cri-o besteffort", "BestEffort", "cri-o://" + testID,
		"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + testUIDSystemd + ".slice/crio-" + testID + ".scope"},
	{"systemd cri-o guaranteed", "Guaranteed", "cri-o://" + testID,
		"kubepods.slice/kubepods-pod" + testUIDSystemd + ".slice/crio-" + testID + ".scope"},
	{"systemd docker burstable", "Burstable", "docker://" + testID,
		"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + testUIDSystemd + ".slice/docker-" + testID + ".scope"},
	{"no scheme cgroupfs cri-o", "Burstable", testID,
		"kubepods/burstable/pod" + testUID + "/crio-" + testID},
	{"no scheme systemd containerd", "Guaranteed", testID,
		"kubepods.slice/kubepods-pod" + testUIDSystemd + ".slice/cri-containerd-" + testID + ".scope"},
	{"unknown runtime systemd cri-o", "BestEffort", "kata://" + testID,
		"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + testUIDSystemd + ".slice/crio-" + testID + ".scope"},
}

func TestFind(t *testing.T) {
	for _, layout := range allHostLayouts {
		for _, tc := range findCases {
			t.Run(string(layout)+"/"+tc.name, func(t *testing.T) {
				h := newHost(t, layout)
				h.cgroup(tc.rel)
				// Decoys: the pod's sandbox and another pod's container
				// with the same container ID.
				h.cgroup(filepath.Join(filepath.Dir(tc.rel), "0000sandbox"))
				h.cgroup(strings.Replace(tc.rel, "0e6a5b9c", "99999999", 1))
				got, err := Reader{Root: h.root}.Find(testUID, tc.qos, tc.containerID)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(h.path(tc.rel), got); diff != "" {
					t.Errorf("Find mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestFindHybridWithoutUnifiedCgroup(t *testing.T) {
	// A runtime that does not join the unified mount leaves Path.Unified
	// empty, and Read then reports no PSI.
	h := newHost(t, hostHybrid)
	rel := findCases[0].rel
	h.mkdirs("cpu/"+rel, "cpuacct/"+rel, "memory/"+rel)
	got, err := Reader{Root: h.root}.Find(testUID, findCases[0].qos, findCases[0].containerID)
	if err != nil {
		t.Fatal(err)
	}
	want := h.path(rel)
	want.Unified = ""
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Find mismatch (-want +got):\n%s", diff)
	}
}

func TestFindPod(t *testing.T) {
	for _, tc := range []struct {
		qos string
		rel string
	}{
		{"Guaranteed", "kubepods/pod" + testUID},
		{"Burstable", "kubepods/burstable/pod" + testUID},
		{"BestEffort", "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + testUIDSystemd + ".slice"},
		{"Guaranteed", "kubepods.slice/kubepods-pod" + testUIDSystemd + ".slice"},
	} {
		for _, layout := range allHostLayouts {
			t.Run(string(layout)+"/"+tc.rel, func(t *testing.T) {
				h := newHost(t, layout)
				h.cgroup(tc.rel + "/" + testID)
				got, err := Reader{Root: h.root}.FindPod(testUID, tc.qos)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(h.path(tc.rel), got); diff != "" {
					t.Errorf("FindPod mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestFindNotFound(t *testing.T) {
	h := newHost(t, hostV1)
	_, err := Reader{Root: h.root}.Find(testUID, "Burstable", "containerd://"+testID)
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("got %v, want *NotFoundError", err)
	}
	want := []string{
		filepath.Join(h.root, "memory/kubepods/burstable/pod"+testUID+"/"+testID),
		filepath.Join(h.root, "memory/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"+testUIDSystemd+".slice/cri-containerd-"+testID+".scope"),
	}
	if diff := cmp.Diff(want, nf.Tried); diff != "" {
		t.Errorf("Tried mismatch (-want +got):\n%s", diff)
	}
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrGone) {
		t.Errorf("error %v should match fs.ErrNotExist and not ErrGone", err)
	}
	for _, p := range want {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not name %s", err, p)
		}
	}

	// Unknown runtimes try every naming, on v2 without controller
	// directories.
	h = newHost(t, hostUnified)
	_, err = Reader{Root: h.root}.Find(testUID, "Guaranteed", testID)
	if !errors.As(err, &nf) || len(nf.Tried) != 5 {
		t.Errorf("got %v, want 5 tried paths (2 cgroupfs, 3 systemd)", err)
	}

	// memory is there, cpu is not: every cpu mount is listed.
	h = newHost(t, hostV1)
	h.mkdirs("memory/kubepods/pod" + testUID)
	_, err = Reader{Root: h.root}.FindPod(testUID, "Guaranteed")
	if !errors.As(err, &nf) {
		t.Fatalf("got %v, want *NotFoundError", err)
	}
	want = []string{
		filepath.Join(h.root, "cpu/kubepods/pod"+testUID),
		filepath.Join(h.root, "cpu,cpuacct/kubepods/pod"+testUID),
		filepath.Join(h.root, "cpuacct,cpu/kubepods/pod"+testUID),
	}
	if diff := cmp.Diff(want, nf.Tried); diff != "" {
		t.Errorf("Tried mismatch (-want +got):\n%s", diff)
	}
}

func TestFindBadInput(t *testing.T) {
	r := Reader{Root: newHost(t, hostUnified).root}
	for _, tc := range []struct{ uid, qos, id, want string }{
		{testUID, "Platinum", testID, "unknown QoS class"},
		{"../../etc", "Burstable", testID, "invalid pod UID"},
		{testUID, "Burstable", "containerd://../x", "invalid pod UID"},
		{testUID, "Burstable", "containerd://", "invalid pod UID"},
		{testUID, "Burstable", "", "invalid pod UID"},
		{"", "Burstable", testID, "invalid pod UID"},
	} {
		_, err := r.Find(tc.uid, tc.qos, tc.id)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Find(%q, %q, %q) = %v, want error containing %q", tc.uid, tc.qos, tc.id, err, tc.want)
		}
	}
	if _, err := r.FindPod("a/b", "Burstable"); err == nil {
		t.Error("FindPod accepted a UID with a slash")
	}
	if _, err := (Reader{Root: t.TempDir()}).FindPod(testUID, "Burstable"); err == nil || !strings.Contains(err.Error(), "detecting cgroup layout") {
		t.Errorf("got %v, want a layout error", err)
	}
}

// TestFindThenRead ties Find and Read together on the layout this lab VM
// has, for a pod and its container.
func TestFindThenRead(t *testing.T) {
	h := newHost(t, hostHybrid)
	pod := "kubepods/burstable/pod" + testUID
	h.fill(pod, "v1/root")
	h.fill(pod+"/"+testID, "v1/busy")
	r := Reader{Root: h.root}
	pp, err := r.FindPod(testUID, "Burstable")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := r.Find(testUID, "Burstable", "containerd://"+testID)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := r.Read(pp, t0)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := r.Read(cp, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !ps.MemoryLimit.Unlimited || cs.MemoryLimit.Bytes != 134217728 {
		t.Errorf("pod limit %+v, container limit %+v", ps.MemoryLimit, cs.MemoryLimit)
	}
}
