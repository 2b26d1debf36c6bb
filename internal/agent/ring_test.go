package agent

import (
	"testing"
	"unsafe"
)

// TestPointSize keeps docs/agent.md's memory figure honest.
func TestPointSize(t *testing.T) {
	if got := unsafe.Sizeof(Point{}); got != 264 {
		t.Errorf("a Point is %d bytes; docs/agent.md says 264: update it", got)
	}
}
