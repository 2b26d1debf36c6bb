package loadgen

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// cacheReadBytes is the read unit of Cache's reader, and cacheReadRate
// bounds how fast it reads: fast enough to touch a working set of tens of
// MiB many times a second, slow enough that re-reading cached pages is
// not a CPU burner of its own.
const (
	cacheReadBytes = 1 << 20
	cacheReadRate  = 256 << 20 // bytes per second
)

// Cache keeps a file of a target size and reads it over and over, so that
// its pages are the process's page-cache working set: charged to its
// cgroup, and, when the cgroup's limit leaves no room for them beside the
// memory the process holds, reclaimed and read back (refaults) - memory
// stalls that PSI counts while the working set stays under the limit. The
// zero value keeps nothing, in os.TempDir(). Its methods are safe for
// concurrent use.
type Cache struct {
	// Dir holds the file; "" is os.TempDir().
	Dir string

	mu    sync.Mutex
	bytes int64
	stop  chan struct{}
	done  chan struct{}
	err   error
}

func (c *Cache) path() string {
	dir := c.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "snug-load-cache")
}

// SetBytes makes the file n bytes long and reads it in a loop; 0 stops the
// reader and removes the file. The first error writing the file is kept
// (Err) and the reader is not started.
func (c *Cache) SetBytes(n int64) {
	n = max(n, 0)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n == c.bytes {
		return
	}
	if c.stop != nil {
		close(c.stop)
		<-c.done
		c.stop, c.done = nil, nil
	}
	c.bytes, c.err = n, nil
	if n == 0 {
		_ = os.Remove(c.path())
		return
	}
	if err := writeSize(c.path(), n); err != nil {
		c.err = err
		return
	}
	c.stop, c.done = make(chan struct{}), make(chan struct{})
	go readLoop(c.path(), c.stop, c.done)
}

// Err is the last error keeping the file, if any.
func (c *Cache) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// writeSize makes path exactly n bytes of non-zero data (zero pages could
// be holes, which take no cache).
func writeSize(path string, n int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, cacheReadBytes)
	for i := range buf {
		buf[i] = byte(i) | 1
	}
	var werr error
	for off := int64(0); off < n && werr == nil; off += int64(len(buf)) {
		_, werr = f.WriteAt(buf[:min(int64(len(buf)), n-off)], off)
	}
	if werr == nil {
		werr = f.Truncate(n)
	}
	return errors.Join(werr, f.Close())
}

// readLoop reads path from start to end again and again, at most
// cacheReadRate, until stop is closed.
func readLoop(path string, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	buf := make([]byte, cacheReadBytes)
	per := time.Second * cacheReadBytes / cacheReadRate
	next := time.Now()
	var off int64
	for {
		select {
		case <-stop:
			return
		default:
		}
		k, err := f.ReadAt(buf, off)
		off += int64(k)
		if errors.Is(err, io.EOF) || k == 0 {
			off = 0
		} else if err != nil {
			return
		}
		next = next.Add(per)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		} else {
			next = time.Now()
		}
	}
}
