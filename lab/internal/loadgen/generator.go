package loadgen

import (
	"fmt"
	"io"
	"sync"
)

// Small interfaces over Burner and Memory, so tests need not burn or hold.
type (
	cpuSetter interface{ SetMillis(millis int64) }
	memSetter interface{ SetBytes(n int64) }
)

// Generator owns the current targets and applies changes to the burner and
// the memory holder, logging one line to its log writer per change. Its
// methods are safe for concurrent use: the control directory and the HTTP
// endpoint may race, and the last change wins.
type Generator struct {
	cpu   cpuSetter
	mem   memSetter
	cache memSetter
	log   io.Writer

	mu  sync.Mutex
	cur Targets
}

// NewGenerator returns an idle generator driving cpu, mem and cache (the
// page-cache file).
func NewGenerator(cpu cpuSetter, mem, cache memSetter, log io.Writer) *Generator {
	return &Generator{cpu: cpu, mem: mem, cache: cache, log: log}
}

// Start applies t and logs it even if nothing changed, so the log always
// begins with the targets in force.
func (g *Generator) Start(t Targets) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.set(t)
	fmt.Fprintln(g.log, t)
}

// Apply applies u and returns the targets now in force. It logs a line if
// they changed.
func (g *Generator) Apply(u Update) Targets {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := u.Apply(g.cur)
	if t != g.cur {
		g.set(t)
		fmt.Fprintln(g.log, t)
	}
	return t
}

// Targets returns the targets in force.
func (g *Generator) Targets() Targets {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cur
}

func (g *Generator) set(t Targets) {
	// Memory first: when both shrink, CPU keeps burning a moment longer
	// than memory stays; when both grow, memory is in place before CPU.
	g.mem.SetBytes(t.MemBytes)
	g.cache.SetBytes(t.CacheBytes)
	g.cpu.SetMillis(t.CPUMillis)
	g.cur = t
}
