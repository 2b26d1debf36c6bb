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
	noop := func(context.Context) error { return nil }
	err = Up(ctx, o, log)
	switch {
	case errors.Is(err, ErrAlreadyUp):
		return noop, true, nil
	case err != nil:
		return noop, false, err
	case keep:
		return noop, false, nil
	}
	return func(ctx context.Context) error { return Down(ctx, o, log) }, false, nil
}
