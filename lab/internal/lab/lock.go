package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrLocked is Lock's error when another process holds the lab.
var ErrLocked = errors.New("the lab is held by another run")

// Lock takes the lab's lock, a file beside Dir (Dir + ".lock"), and holds
// it until release is called or the process ends. The e2e TestMain takes
// it before it takes down whatever lab is up: a second e2e run (one more
// `go test -tags e2e`, even of one test) then fails at once, naming the
// lock, instead of taking down the lab under the first run's tests.
func Lock(o *Options) (release func(), err error) {
	path := filepath.Clean(o.Dir) + ".lock"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the lab's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: another run holds the lab at %s (lock %s); wait for it to end", ErrLocked, o.Dir, path)
		}
		return nil, fmt.Errorf("locking the lab (%s): %w", path, err)
	}
	return func() { f.Close() }, nil
}
