package vpa

import (
	"context"
	"errors"
	"io"
)

// UpOrReuse starts VPA and metrics-server on the lab, or uses them when
// they already run. The returned function stops what it started (Down), or
// does nothing when they were already up or keep is set. reused says
// whether they were already up.
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
