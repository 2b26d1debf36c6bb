package loadgen

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultQuantum is how long a worker spins at a time. Each wake-up costs
// the Go runtime and the kernel a little CPU (about 0.2 ms on the lab VM),
// so the period is stretched to fit the target rather than the busy time
// shrunk: the overhead then stays a fixed, small share of the target.
const DefaultQuantum = 10 * time.Millisecond

// maxPeriod bounds a worker's period, so that even a tiny target burns at
// least once a second (its busy time then falls below the quantum).
const maxPeriod = time.Second

// duty is one worker's cycle: spin for busy out of every period.
type duty struct {
	busy, period time.Duration
}

// dutyPlan splits millis over as few workers as can carry it (one core
// each at most), spread evenly, and gives each the cycle that burns its
// share: quantum busy out of quantum*1000/share, at most maxPeriod long.
func dutyPlan(millis int64, quantum time.Duration) []duty {
	if millis <= 0 || quantum <= 0 {
		return nil
	}
	workers := (millis + 999) / 1000
	plan := make([]duty, workers)
	for i := range plan {
		// The first millis%workers workers carry one millicore more.
		share := millis / workers
		if int64(i) < millis%workers {
			share++
		}
		period := time.Duration(int64(quantum) * 1000 / share)
		busy := quantum
		if period > maxPeriod {
			period = maxPeriod
			busy = time.Duration(int64(maxPeriod) * share / 1000)
		}
		plan[i] = duty{busy: busy, period: period}
	}
	return plan
}

// Burner burns CPU: each worker goroutine spins for a quantum and sleeps
// for the rest of a period sized to its share. The zero value is idle with
// DefaultQuantum.
// Its methods are safe for concurrent use.
//
// When the cgroup throttles the process the burn simply falls short, which
// is what snug wants to see: a worker that falls behind skips the periods
// it missed rather than bursting to catch up.
type Burner struct {
	// Quantum is how long a worker spins at a time; zero means
	// DefaultQuantum. Set it before the first SetMillis.
	Quantum time.Duration

	mu     sync.Mutex
	millis int64
	cancel context.CancelFunc
	wg     sync.WaitGroup

	running atomic.Int32 // workers alive, for tests
}

// SetMillis changes the burn to millis millicores; 0 stops it. It returns
// once the old workers have stopped and the new ones are started.
func (b *Burner) SetMillis(millis int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if millis == b.millis {
		return
	}
	if b.cancel != nil {
		b.cancel()
		b.wg.Wait()
		b.cancel = nil
	}
	b.millis = millis
	quantum := b.Quantum
	if quantum <= 0 {
		quantum = DefaultQuantum
	}
	plan := dutyPlan(millis, quantum)
	if len(plan) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	for _, d := range plan {
		b.wg.Add(1)
		b.running.Add(1)
		go func() {
			defer b.wg.Done()
			defer b.running.Add(-1)
			burn(ctx, d.busy, d.period)
		}()
	}
}

// Millis returns the current burn in millicores.
func (b *Burner) Millis() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.millis
}

// burn spins for busy out of every period until ctx is done.
//
// Busy time is the thread's own CPU time where the kernel reports it (the
// goroutine is locked to its thread), so a burner that shares the CPU with
// other work still gets its share; it is capped at the end of the period,
// so a throttled or starved burner falls short instead of bursting later.
func burn(ctx context.Context, busy, period time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	timer := time.NewTimer(period)
	timer.Stop()
	next := time.Now()
	for {
		end := next.Add(period)
		spin(busy, end)
		next = end
		idle := time.Until(next)
		if idle <= 0 {
			// Late (starved, throttled or a slow wake-up): start afresh
			// rather than owe the missed periods.
			next = time.Now()
			select {
			case <-ctx.Done():
				return
			default:
				continue
			}
		}
		timer.Reset(idle)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
	}
}

// spin keeps the CPU busy until the thread has used busy of CPU time, or
// until the wall clock reaches end.
func spin(busy time.Duration, end time.Time) {
	if cpu0, ok := threadCPU(); ok {
		for {
			cpu, _ := threadCPU()
			if cpu-cpu0 >= busy || !time.Now().Before(end) {
				return
			}
		}
	}
	stop := time.Now().Add(busy)
	if end.Before(stop) {
		stop = end
	}
	for time.Now().Before(stop) {
	}
}
