package lab

import (
	"context"
	"errors"
	"io"
)

// UpOrReuse brings the lab up, or uses the one that is up. It returns the
// function that ends what it started: Down for a lab it brought up, nothing
// for a lab that was already up (that one is left up). keep leaves a lab it
// brought up running as well. reused says whether the lab was already up.
//
// Commands that need a lab for a while (benchmarks, the demo) use it so that
// a lab someone is working with survives them.
func UpOrReuse(ctx context.Context, o *Options, keep bool, log io.Writer) (release func(context.Context) error, reused bool, err error) {
	return StartedOrReused(Up(ctx, o, log), ErrAlreadyUp, keep, func(ctx context.Context) error { return Down(ctx, o, log) })
}

// StartedOrReused turns the result of starting something (upErr; alreadyUp
// when it was already running) into UpOrReuse's answer: release is down for
// what was started here unless keep, and does nothing otherwise.
func StartedOrReused(upErr, alreadyUp error, keep bool, down func(context.Context) error) (release func(context.Context) error, reused bool, err error) {
	noop := func(context.Context) error { return nil }
	switch {
	case errors.Is(upErr, alreadyUp):
		return noop, true, nil
	case upErr != nil:
		return noop, false, upErr
	case keep:
		return noop, false, nil
	}
	return down, false, nil
}
