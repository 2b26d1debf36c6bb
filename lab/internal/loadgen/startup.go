package loadgen

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Startup is a CPU-bound start-up, as a JVM's class loading and JIT or a
// model server's weight loading are: Work of CPU time, spread over
// Threads, done before the load starts; Ready says when it is.
type Startup struct {
	// Work is the CPU time to burn; 0 is no start-up.
	Work time.Duration
	// Threads run it; the start-up takes Work/Threads of wall time with
	// Threads cores, Work/limit with a CPU limit below that.
	Threads int

	ready atomic.Bool
}

// Ready reports whether the start-up is done.
func (s *Startup) Ready() bool { return s.Work <= 0 || s.ready.Load() }

// Run burns Work of CPU time on Threads locked OS threads, each its share
// by its own thread CPU clock (the wall clock where there is none), then
// marks the start-up Ready; it returns early when ctx is done.
func (s *Startup) Run(ctx context.Context) {
	if s.Work <= 0 {
		return
	}
	n := max(s.Threads, 1)
	share := s.Work / time.Duration(n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			start, ok := threadCPU()
			wall := time.Now()
			for ctx.Err() == nil {
				for i := 0; i < 1<<16; i++ {
					spinSink += i
				}
				if now, ok2 := threadCPU(); ok && ok2 {
					if now-start >= share {
						return
					}
				} else if time.Since(wall) >= share {
					return
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() == nil {
		s.ready.Store(true)
	}
}

// spinSink keeps the spin loop from being optimized away.
var spinSink int
