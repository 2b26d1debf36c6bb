//go:build !linux

package loadgen

import "time"

// threadCPU is unavailable here; the burner falls back to the wall clock.
func threadCPU() (time.Duration, bool) { return 0, false }
