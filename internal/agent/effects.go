package agent

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
)

// The Decider's state belongs to the agent's loop goroutine; its I/O does
// not run there. Every side effect that waits on the API server (a resize
// through internal/actuate, a read of a namespace's ResourceQuotas, a read
// of a policy's checkpoint, a snapshot publication, a pod condition write)
// is started through one executor: the effect runs on its own goroutine
// and returns what the loop is to do with its result (a settleFunc); the
// executor queues that, fires Settled, and the loop runs it between passes
// (Settle) or at the start of the next pass. Decider.Wait joins every
// effect started. An effect may carry a key: while one with that key runs
// (until the loop has taken its result in), another is not started, which
// is how a pod has at most one resize in flight and a namespace at most
// one quota read.

// settleFunc is what the loop goroutine does with an effect's result.
type settleFunc func(ctx context.Context, log logr.Logger)

// effect does its I/O with ctx and returns what the loop is to do with
// the result; nil when there is nothing to do.
type effect func(ctx context.Context) settleFunc

// executor runs effects off the loop goroutine and hands their results
// back to it. start, running and take are the loop goroutine's; the
// effects' goroutines only append to done.
type executor struct {
	wg sync.WaitGroup
	// ready holds a token while done is not empty.
	ready chan struct{}
	// running are the keys of the keyed effects started and not yet taken
	// in. Loop only.
	running map[string]struct{}

	mu   sync.Mutex
	done []finished
}

// finished is an effect's result waiting for the loop.
type finished struct {
	key    string
	settle settleFunc
}

func newExecutor() *executor {
	return &executor{ready: make(chan struct{}, 1), running: map[string]struct{}{}}
}

// start runs fx on its own goroutine with ctx, unless key is not empty and
// an effect with that key still runs; it reports whether it started it.
func (x *executor) start(ctx context.Context, key string, fx effect) bool {
	if key != "" {
		if _, ok := x.running[key]; ok {
			return false
		}
		x.running[key] = struct{}{}
	}
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		s := fx(ctx)
		if s == nil && key == "" {
			return
		}
		x.mu.Lock()
		x.done = append(x.done, finished{key: key, settle: s})
		x.mu.Unlock()
		select {
		case x.ready <- struct{}{}:
		default:
		}
	}()
	return true
}

// post hands settle to the loop goroutine, from any goroutine: a wake-up
// that is no effect's result (a pod informer's event).
func (x *executor) post(settle settleFunc) {
	x.mu.Lock()
	x.done = append(x.done, finished{settle: settle})
	x.mu.Unlock()
	select {
	case x.ready <- struct{}{}:
	default:
	}
}

// busy reports whether an effect with key runs (or its result waits to be
// taken in).
func (x *executor) busy(key string) bool {
	_, ok := x.running[key]
	return ok
}

// take returns the results of the effects that ended since the last take,
// oldest first, and frees their keys. Loop only.
func (x *executor) take() []settleFunc {
	x.mu.Lock()
	done := x.done
	x.done = nil
	x.mu.Unlock()
	out := make([]settleFunc, 0, len(done))
	for _, f := range done {
		if f.key != "" {
			delete(x.running, f.key)
		}
		if f.settle != nil {
			out = append(out, f.settle)
		}
	}
	return out
}

// wait waits for every effect started to end (they end with their
// context).
func (x *executor) wait() { x.wg.Wait() }
