package loadgen

import (
	"os"
	"runtime/debug"
	"sync"
)

// chunkBytes is the allocation unit: big enough to keep the chunk list
// short, small enough that growing and shrinking move little at a time.
const chunkBytes = 1 << 20

// Memory holds a target number of bytes, every page written so that it
// counts in the process's RSS and the cgroup's working set. The zero value
// holds nothing. Its methods are safe for concurrent use.
//
// The process's own footprint (Go runtime, stacks, buffers: a few MiB)
// comes on top of the target.
type Memory struct {
	mu     sync.Mutex
	chunks [][]byte
	held   int64
}

// SetBytes grows or shrinks the held memory to n bytes. Shrinking drops the
// references and returns the freed pages to the kernel before returning.
func (m *Memory) SetBytes(n int64) {
	if n < 0 {
		n = 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	shrunk := false
	for m.held > n {
		last := len(m.chunks) - 1
		m.held -= int64(len(m.chunks[last]))
		m.chunks[last] = nil
		m.chunks = m.chunks[:last]
		shrunk = true
	}
	page := os.Getpagesize()
	for m.held < n {
		size := min(int64(chunkBytes), n-m.held)
		c := make([]byte, size)
		// A fresh allocation may be untouched zero pages from the kernel;
		// write each page so it is really resident.
		for i := 0; i < len(c); i += page {
			c[i] = 1
		}
		m.chunks = append(m.chunks, c)
		m.held += size
	}
	if shrunk {
		if len(m.chunks) == 0 {
			m.chunks = nil
		}
		debug.FreeOSMemory()
	}
}

// Bytes returns the bytes held.
func (m *Memory) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held
}
