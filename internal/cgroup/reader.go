package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// ErrGone means the cgroup disappeared: the container exited, or was
// removed, while it was being found or read. Callers should drop the
// container quietly. Errors that match ErrGone also match fs.ErrNotExist.
var ErrGone = errors.New("cgroup gone")

// goneError wraps the filesystem error that showed the cgroup was gone.
type goneError struct{ err error }

func (e *goneError) Error() string { return "cgroup gone: " + e.err.Error() }
func (e *goneError) Unwrap() error { return e.err }
func (e *goneError) Is(target error) bool {
	return target == ErrGone || target == fs.ErrNotExist
}

// isGone reports whether err from open or read means the file's cgroup was
// removed. A read on an open file of a removed cgroup fails with ENODEV.
func isGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENODEV)
}

// Layout is how cgroup hierarchies are mounted under a Reader's root.
type Layout uint8

const (
	// LayoutUnknown means detection failed.
	LayoutUnknown Layout = iota
	// LayoutV1 has one v1 hierarchy per controller (root/cpu, root/memory,
	// ...), and no unified mount.
	LayoutV1
	// LayoutHybrid has v1 controllers plus a cgroup2 mount at root/unified
	// that holds few or no controllers (systemd's "hybrid" mode). cpu and
	// memory are read through v1. PSI comes from the unified mount when the
	// cgroup exists there.
	LayoutHybrid
	// LayoutUnified is pure cgroup v2, mounted at root.
	LayoutUnified
)

func (l Layout) String() string {
	switch l {
	case LayoutV1:
		return "v1"
	case LayoutHybrid:
		return "hybrid"
	case LayoutUnified:
		return "unified"
	default:
		return "unknown"
	}
}

// Path locates one cgroup (a container or a pod) on one host. All
// directories are absolute, i.e. include the Reader's root. A Path is plain
// data: keep it, compare it and log it freely.
type Path struct {
	// Version tells Read which files to expect.
	Version Version
	// Unified is the cgroup's directory in the v2 hierarchy. On v1 it is
	// the directory in the hybrid unified mount, used only for PSI, and is
	// empty if there is none.
	Unified string
	// CPU, CPUAcct and Memory are the v1 controller directories. They are
	// empty on v2. CPU and CPUAcct are equal when the controllers are
	// co-mounted without the usual symlinks.
	CPU, CPUAcct, Memory string
}

func (p Path) String() string {
	if p.Version == V2 {
		return p.Unified
	}
	return p.Memory
}

// Reader reads cgroups under Root. The zero value reads nothing: set Root,
// normally to "/sys/fs/cgroup". A Reader has no state and is safe for
// concurrent use.
type Reader struct {
	// Root is where the cgroup hierarchies are mounted.
	Root string
}

// Layout detects how cgroups are mounted under r.Root. It touches the
// filesystem, so call it once, not once per sample.
func (r Reader) Layout() (Layout, error) {
	if r.Root == "" {
		return LayoutUnknown, errors.New("detecting cgroup layout: empty root")
	}
	if exists(filepath.Join(r.Root, "cgroup.controllers")) {
		return LayoutUnified, nil
	}
	v1 := exists(filepath.Join(r.Root, "memory")) || exists(filepath.Join(r.Root, "cpu"))
	switch {
	case v1 && exists(filepath.Join(r.Root, "unified", "cgroup.controllers")):
		return LayoutHybrid, nil
	case v1:
		return LayoutV1, nil
	}
	return LayoutUnknown, fmt.Errorf("detecting cgroup layout: no cgroup.controllers, memory or cpu under %s", r.Root)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// bufPool holds read buffers for Reader.Read, so that a steady sampling
// loop does not allocate one per sample. 8 KiB fits every file it opens.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 8<<10)
	return &b
}}

// Read reads the cgroup at p into a Sample taken at now. It opens, reads
// and closes every file, which is simple but costs three syscalls a file.
// A loop that reads the same cgroup every second should use Open instead.
// Read is safe for concurrent use.
//
// If the cgroup disappears during the read, the error matches ErrGone.
// Some files are optional for the running kernel: memory.peak, the PSI
// files, and v2 cpu.max and cpu.weight when the cpu controller is off.
// When one is missing, its fields stay at zero.
func (r Reader) Read(p Path, now time.Time) (Sample, error) {
	bp := bufPool.Get().(*[]byte)
	src := pathSource{path: p, buf: *bp}
	s, err := decode(&src, p, now)
	*bp = src.buf
	bufPool.Put(bp)
	return s, err
}

// pathSource opens, reads and closes each file for Reader.Read.
type pathSource struct {
	path Path
	buf  []byte
}

func (ps *pathSource) get(id fileID) ([]byte, bool, error) {
	spec := specs[id]
	dir := ps.path.dir(spec.ctrl)
	path := dir + "/" + spec.name
	f, err := openFile(path)
	if err != nil {
		return nil, false, missing(dir, spec, err)
	}
	b, err := readWhole(f, &ps.buf)
	f.close()
	if err != nil {
		return nil, false, readError(spec, path, err)
	}
	return b, true, nil
}

// readWhole reads a whole file with one pread at offset 0. If the file
// fills the buffer, the buffer grows and the read starts over from 0:
// cgroupfs regenerates a file on every read from 0, so the pieces of two
// partial reads might not match.
func readWhole(f sysFile, buf *[]byte) ([]byte, error) {
	for {
		n, err := f.readAt0(*buf)
		if err != nil {
			return nil, err
		}
		if n < len(*buf) {
			return (*buf)[:n], nil
		}
		if len(*buf) >= maxFileBytes {
			return nil, errTooLarge
		}
		*buf = make([]byte, 2*len(*buf))
	}
}

// missing classifies a failure to open one of a cgroup's files. It returns
// nil if the file is optional and absent.
func missing(dir string, spec fileSpec, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := os.Stat(dir); serr != nil && isGone(serr) {
			return &goneError{err: err}
		}
		if spec.optional {
			return nil
		}
		// The cgroup is there but the file is not. That is a setup
		// problem (a controller is not enabled), not an exit.
		return fmt.Errorf("reading cgroup: controller file missing: %w", err)
	case isGone(err):
		return &goneError{err: err}
	default:
		return fmt.Errorf("reading cgroup: %w", err)
	}
}

// readError classifies a failed read of an open file. A read from a file of
// a removed cgroup fails with ENODEV. A PSI file that cgroup.pressure
// turned off fails with EOPNOTSUPP.
func readError(spec fileSpec, path string, err error) error {
	if spec.optional && errors.Is(err, syscall.EOPNOTSUPP) {
		return nil
	}
	perr := &fs.PathError{Op: "read", Path: path, Err: err}
	if isGone(err) {
		return &goneError{err: perr}
	}
	return fmt.Errorf("reading cgroup: %w", perr)
}
