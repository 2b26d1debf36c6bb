package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// MirrorFiles are the cgroup v2 files MirrorCgroups copies: what snug's
// cgroup reader reads (internal/cgroup) and the PSI files.
var MirrorFiles = []string{
	"cgroup.controllers", "cpu.stat", "cpu.max", "cpu.weight",
	"memory.current", "memory.peak", "memory.max", "memory.stat", "memory.events",
	"cpu.pressure", "memory.pressure", "io.pressure",
}

// MirrorCgroups copies, every interval, the MirrorFiles of from's root and
// of every cgroup below from/sub into the same paths under to, and
// removes the directories of cgroups that are gone. Each file is written
// to a sibling and renamed into place, so a reader sees a whole file. It
// is how the lab reads the cgroups of its cgroup-v2 node, a User-Mode
// Linux guest whose /sys/fs/cgroup this machine cannot see: the guest runs
// it, writing into a directory shared with the host. With heartbeat set
// it also writes the time to that file after a round, at most once a
// second: the host's sign that the guest still runs (a guest that hangs
// stops writing). It returns when ctx is done.
func MirrorCgroups(ctx context.Context, from, sub, to string, interval time.Duration, heartbeat string) error {
	if interval <= 0 {
		return errors.New("mirror interval must be positive")
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	m := newMirror(from, sub, to)
	var beat time.Time
	for {
		if err := m.once(); err != nil {
			fmt.Fprintf(os.Stderr, "mirror: %v\n", err)
		}
		if now := time.Now(); heartbeat != "" && now.Sub(beat) >= time.Second {
			if err := os.WriteFile(heartbeat, []byte(now.UTC().Format(time.RFC3339Nano)+"\n"), 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "mirror: heartbeat: %v\n", err)
			}
			beat = now
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// mirror remembers what it wrote, so that an unchanged file costs one
// read (in the guest every system call is dear), and which directories it
// made, so that those of cgroups that went can be removed.
type mirror struct {
	from, sub, to string
	written       map[string]string // path under to -> content
	dirs          map[string]bool   // directories under to, relative
}

func newMirror(from, sub, to string) *mirror {
	return &mirror{from: from, sub: sub, to: to, written: map[string]string{}, dirs: map[string]bool{}}
}

func (m *mirror) once() error {
	seen := map[string]bool{}
	copyDir := func(rel string) {
		seen[rel] = true
		for _, name := range MirrorFiles {
			data, err := os.ReadFile(filepath.Join(m.from, rel, name))
			if err != nil {
				continue
			}
			dst := filepath.Join(m.to, rel, name)
			if old, ok := m.written[dst]; ok && old == string(data) {
				continue
			}
			if !m.dirs[rel] {
				if os.MkdirAll(filepath.Dir(dst), 0o755) != nil {
					continue
				}
				m.dirs[rel] = true
			}
			tmp := dst + ".tmp"
			if os.WriteFile(tmp, data, 0o644) == nil && os.Rename(tmp, dst) == nil {
				m.written[dst] = string(data)
			}
		}
	}
	copyDir(".")
	err := filepath.WalkDir(filepath.Join(m.from, m.sub), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a cgroup removed during the walk
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(m.from, path)
			copyDir(rel)
		}
		return nil
	})
	// Directories of cgroups that no longer exist go.
	for rel := range m.dirs {
		if seen[rel] {
			continue
		}
		dir := filepath.Join(m.to, rel)
		_ = os.RemoveAll(dir)
		delete(m.dirs, rel)
		for p := range m.written {
			if strings.HasPrefix(p, dir+"/") {
				delete(m.written, p)
			}
		}
	}
	return err
}
