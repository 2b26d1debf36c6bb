package vpa

import (
	"context"
	"io"

	"github.com/snug-dev/snug/lab/internal/lab"
)

// UpOrReuse starts VPA and metrics-server on the lab, or uses them when
// they already run. The returned function stops what it started (Down), or
// does nothing when they were already up or keep is set. reused says
// whether they were already up.
func UpOrReuse(ctx context.Context, o *Options, keep bool, log io.Writer) (release func(context.Context) error, reused bool, err error) {
	return lab.StartedOrReused(Up(ctx, o, log), ErrAlreadyUp, keep, func(ctx context.Context) error { return Down(ctx, o, log) })
}
