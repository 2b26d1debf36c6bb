//go:build !linux

package loadgen

import "context"

// Pause blocks until ctx is done. Only Linux reaps children.
func Pause(ctx context.Context) { <-ctx.Done() }
