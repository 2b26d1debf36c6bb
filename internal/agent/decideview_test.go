package agent

import (
	"testing"
	"time"
)

func TestResizesAfter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	v := &AutoscaleJSON{Resizes: []ResizeJSON{
		{Outcome: "Applied", DecidedAt: t0},
		{Outcome: "Conflict", DecidedAt: t0.Add(time.Second)},
		{Outcome: "Applied", DecidedAt: t0.Add(2 * time.Second)},
	}}
	got := v.ResizesAfter(t0)
	if len(got) != 2 || got[0].Outcome != "Conflict" || got[1].Outcome != "Applied" {
		t.Errorf("after t0: %+v, want the Conflict and the last Applied, in order", got)
	}
	if got := v.ResizesAfter(t0.Add(2 * time.Second)); len(got) != 0 {
		t.Errorf("after the last: %+v, want none", got)
	}
	var none *AutoscaleJSON
	if got := none.ResizesAfter(t0); got != nil {
		t.Errorf("nil view: %+v", got)
	}
}
