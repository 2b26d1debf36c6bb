package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPodPhaseTransitions holds the whole transition table: every
// (phase, event) pair either moves as the table in phase.go says or is
// not taken and leaves the phase as it is.
func TestPodPhaseTransitions(t *testing.T) {
	type step struct{ from, to podPhase }
	want := map[podEvent][]step{
		evWish:       {{phaseIdle, phaseWanted}, {phaseWanted, phaseWanted}},
		evHold:       {{phaseWanted, phaseIdle}, {phaseAwaitingQuota, phaseIdle}},
		evAwaitQuota: {{phaseWanted, phaseAwaitingQuota}},
		evQuotaRead:  {{phaseAwaitingQuota, phaseWanted}},
		evSent:       {{phaseIdle, phaseInFlight}, {phaseWanted, phaseInFlight}, {phaseAwaitingQuota, phaseInFlight}},
		evSettled:    {{phaseInFlight, phaseIdle}},
	}
	got := map[podEvent][]step{}
	for e := range numEvents {
		for p := range numPhases {
			next, ok := p.on(e)
			if !ok {
				if next != p {
					t.Errorf("%s on %s: not taken but moved to %s", p, e, next)
				}
				continue
			}
			got[e] = append(got[e], step{p, next})
		}
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(step{})); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	// Nothing leaves Unusable, and only an outcome leaves InFlight.
	for e := range numEvents {
		if next, ok := phaseUnusable.on(e); ok || next != phaseUnusable {
			t.Errorf("Unusable on %s: %s, %v", e, next, ok)
		}
	}
}

// TestPodStateFire: fire applies the table to the pod and reports whether
// the event was taken.
func TestPodStateFire(t *testing.T) {
	st := &podState{phase: phaseIdle}
	for _, tc := range []struct {
		e    podEvent
		ok   bool
		want podPhase
	}{
		{evSettled, false, phaseIdle},
		{evWish, true, phaseWanted},
		{evAwaitQuota, true, phaseAwaitingQuota},
		{evWish, false, phaseAwaitingQuota},
		{evQuotaRead, true, phaseWanted},
		{evSent, true, phaseInFlight},
		{evWish, false, phaseInFlight},
		{evSettled, true, phaseIdle},
	} {
		if ok := st.fire(tc.e); ok != tc.ok || st.phase != tc.want {
			t.Fatalf("fire %s: taken %v, phase %s; want %v, %s", tc.e, ok, st.phase, tc.ok, tc.want)
		}
	}
	if s := podPhase(9).String(); s != "podPhase(9)" {
		t.Errorf("unknown phase prints %q", s)
	}
}
