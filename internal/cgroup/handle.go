package cgroup

import (
	"errors"
	"time"
)

// Handle keeps one cgroup's files open, so that each Read costs one pread
// per file instead of an open, a read and a close. The agent reads every
// container every second, so this is the form it should use.
//
// A Handle holds 11 to 14 file descriptors. Close it when the container
// goes away, which Read reports with ErrGone. A Handle is not safe for
// concurrent use.
type Handle struct {
	path Path
	open [numFiles]bool
	fds  [numFiles]sysFile
	buf  []byte
}

// Open opens the files Read needs for p. Optional files that are missing
// now (memory.peak on old kernels, PSI without CONFIG_PSI) stay absent for
// the Handle's life. If the cgroup is already gone, the error matches
// ErrGone.
func (r Reader) Open(p Path) (*Handle, error) {
	ids := filesOf(p)
	if ids == nil {
		return nil, errors.New("opening cgroup: unknown version")
	}
	h := &Handle{path: p, buf: make([]byte, 8<<10)}
	for _, id := range ids {
		spec := specs[id]
		dir := p.dir(spec.ctrl)
		f, err := openFile(dir + "/" + spec.name)
		if err != nil {
			if err = missing(dir, spec, err); err != nil {
				h.Close()
				return nil, err
			}
			continue
		}
		h.fds[id], h.open[id] = f, true
	}
	return h, nil
}

// Path returns the cgroup the Handle reads.
func (h *Handle) Path() Path { return h.path }

// Read reads the cgroup into a Sample taken at now. If the cgroup was
// removed since Open, the error matches ErrGone. Close the Handle then.
func (h *Handle) Read(now time.Time) (Sample, error) {
	return decode(h, h.path, now)
}

func (h *Handle) get(id fileID) ([]byte, bool, error) {
	if !h.open[id] {
		if !specs[id].optional {
			return nil, false, errors.New("reading cgroup: handle is closed")
		}
		return nil, false, nil
	}
	b, err := readWhole(h.fds[id], &h.buf)
	if err != nil {
		spec := specs[id]
		dir := h.path.dir(spec.ctrl)
		if err = readError(spec, dir+"/"+spec.name, err); err != nil {
			return nil, false, err
		}
		return nil, false, nil
	}
	return b, true, nil
}

// Close closes the Handle's files. A closed Handle's Read fails. Close
// always returns nil: a close error on a read-only file leaks nothing.
func (h *Handle) Close() error {
	for id := range h.fds {
		if h.open[id] {
			h.fds[id].close()
			h.open[id] = false
		}
	}
	return nil
}
