package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// AllFile is the control file every pod reads when it has no file of its
// own name.
const AllFile = "all"

// controlFile is one read of a control file.
type controlFile struct {
	name    string // empty: no file
	modTime time.Time
	data    []byte
}

// readControl reads the control file that applies to pod: dir/pod if it
// exists, else dir/all. Both missing is no error: the name is then empty.
func readControl(dir, pod string) (controlFile, error) {
	names := []string{AllFile}
	if pod != "" && pod != AllFile && !strings.ContainsAny(pod, `/\`) && pod != "." && pod != ".." {
		names = []string{pod, AllFile}
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return controlFile{}, fmt.Errorf("reading control file: %w", err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return controlFile{}, fmt.Errorf("reading control file: %w", err)
		}
		return controlFile{name: name, modTime: fi.ModTime(), data: data}, nil
	}
	return controlFile{}, nil
}

// controlWatcher turns successive reads of the control directory into
// updates. It applies a file once two reads in a row agree (name, mtime and
// content), so a half-written file is never applied, and only if that file
// differs from the one it last applied, so that a change made over HTTP is
// not undone by a file nobody touched. Rewriting a file, even with the same
// content, changes its mtime and applies it again. The zero value is ready.
type controlWatcher struct {
	pending, applied controlFile
}

func (f controlFile) same(o controlFile) bool {
	return f.name == o.name && f.modTime.Equal(o.modTime) && bytes.Equal(f.data, o.data)
}

// observe takes one read of the control directory and returns the update
// to apply, with ok false when there is none.
func (w *controlWatcher) observe(f controlFile) (u Update, ok bool, err error) {
	stable := f.same(w.pending)
	w.pending = f
	if f.name == "" || !stable || f.same(w.applied) {
		// No file, or a removed one, leaves the targets as they are.
		return Update{}, false, nil
	}
	w.applied = f
	u, err = ParseUpdate(bytes.NewReader(f.data))
	if err != nil {
		return Update{}, false, fmt.Errorf("control file %s: %w", f.name, err)
	}
	return u, !u.Empty(), nil
}
