package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture returns the contents of testdata/<rel>.
func fixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hostLayout is a way a host can mount its cgroup hierarchies.
type hostLayout string

const (
	// hostUnified is pure cgroup v2 at the root.
	hostUnified hostLayout = "unified"
	// hostV1 mounts cpu and cpuacct separately, as on the lab VM.
	hostV1 hostLayout = "v1"
	// hostV1CoMounted mounts cpu and cpuacct together at cpu,cpuacct with
	// cpu and cpuacct symlinks, as Debian and systemd do.
	hostV1CoMounted hostLayout = "v1-comounted"
	// hostV1CoMountedNoLinks is cpu,cpuacct without the symlinks, as in
	// some minimal init systems.
	hostV1CoMountedNoLinks hostLayout = "v1-comounted-nolinks"
	// hostHybrid is hostV1 plus a cgroup2 mount at unified with only
	// hugetlb, as on the lab VM.
	hostHybrid hostLayout = "hybrid"
)

var allHostLayouts = []hostLayout{hostUnified, hostV1, hostV1CoMounted, hostV1CoMountedNoLinks, hostHybrid}

// fakeHost is a cgroup root built under t.TempDir() with the directory
// layout of one kind of host. Its files are ordinary files.
type fakeHost struct {
	t      testing.TB
	root   string
	layout hostLayout
}

func newHost(t testing.TB, layout hostLayout) *fakeHost {
	t.Helper()
	h := &fakeHost{t: t, root: t.TempDir(), layout: layout}
	switch layout {
	case hostUnified:
		h.write("cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n")
	case hostV1, hostHybrid:
		h.mkdirs("cpu", "cpuacct", "memory", "pids")
		if layout == hostHybrid {
			h.write("unified/cgroup.controllers", "hugetlb\n")
		}
	case hostV1CoMounted:
		h.mkdirs("cpu,cpuacct", "memory")
		for _, link := range []string{"cpu", "cpuacct"} {
			if err := os.Symlink("cpu,cpuacct", filepath.Join(h.root, link)); err != nil {
				t.Fatal(err)
			}
		}
	case hostV1CoMountedNoLinks:
		h.mkdirs("cpu,cpuacct", "memory")
	default:
		t.Fatalf("unknown layout %q", layout)
	}
	return h
}

func (h *fakeHost) mkdirs(rels ...string) {
	h.t.Helper()
	for _, rel := range rels {
		if err := os.MkdirAll(filepath.Join(h.root, rel), 0o755); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *fakeHost) write(rel, content string) {
	h.t.Helper()
	path := filepath.Join(h.root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// mount returns the hierarchy directory, relative to the root, that holds
// the files of kind ("cpu", "cpuacct", "memory" or "unified") on a v1
// layout, or "" if the layout has no such hierarchy. On co-mounted layouts
// with symlinks, "cpu" and "cpuacct" go through the links, as Find does.
func (h *fakeHost) mount(kind string) string {
	switch {
	case kind == "unified":
		if h.layout == hostHybrid {
			return "unified"
		}
		return ""
	case h.layout == hostV1CoMountedNoLinks && (kind == "cpu" || kind == "cpuacct"):
		return "cpu,cpuacct"
	}
	return kind
}

// cgroup creates the cgroup rel in every hierarchy, as runc does.
func (h *fakeHost) cgroup(rel string) {
	h.t.Helper()
	if h.layout == hostUnified {
		h.mkdirs(rel)
		return
	}
	for _, kind := range []string{"cpu", "cpuacct", "memory", "unified"} {
		if m := h.mount(kind); m != "" {
			h.mkdirs(filepath.Join(m, rel))
		}
	}
}

// fill creates the cgroup rel and copies the fixture files of
// testdata/<dir> into it, each into the hierarchy its controller lives in.
// On v1 layouts, PSI files go to the unified mount, and only if it exists.
func (h *fakeHost) fill(rel, dir string) {
	h.t.Helper()
	h.cgroup(rel)
	entries, err := os.ReadDir(filepath.Join("testdata", dir))
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		var m string
		switch {
		case h.layout == hostUnified:
			m = "."
		case strings.HasSuffix(name, ".pressure"):
			m = h.mount("unified")
		case strings.HasPrefix(name, "cpuacct."):
			m = h.mount("cpuacct")
		case strings.HasPrefix(name, "cpu."):
			m = h.mount("cpu")
		case strings.HasPrefix(name, "memory."):
			m = h.mount("memory")
		}
		if m == "" {
			continue
		}
		h.write(filepath.Join(m, rel, name), string(fixture(h.t, filepath.Join(dir, name))))
	}
}

// path is the Path that Find should return for rel on this host.
func (h *fakeHost) path(rel string) Path {
	if h.layout == hostUnified {
		return Path{Version: V2, Unified: filepath.Join(h.root, rel)}
	}
	p := Path{
		Version: V1,
		CPU:     filepath.Join(h.root, h.mount("cpu"), rel),
		CPUAcct: filepath.Join(h.root, h.mount("cpuacct"), rel),
		Memory:  filepath.Join(h.root, "memory", rel),
	}
	if h.layout == hostHybrid {
		p.Unified = filepath.Join(h.root, "unified", rel)
	}
	return p
}
