package experiment

import (
	"testing"
	"time"

	"github.com/snug-dev/snug/internal/trace"
)

// sample builds one trace sample of container "app" with cpu
// request/limit desired, allocated request and actual; actual < 0 means
// not reported.
func sample(at time.Time, uid string, desired, allocated, actualReq, actualLim int64, conds ...trace.Condition) trace.Sample {
	c := trace.Container{Name: ReactionContainer, State: "running",
		Desired:   trace.Resources{CPURequestMillis: desired, CPULimitMillis: 2 * desired},
		Allocated: &trace.Resources{CPURequestMillis: allocated},
	}
	if actualReq >= 0 {
		c.Actual = &trace.Resources{CPURequestMillis: actualReq, CPULimitMillis: actualLim}
	}
	return trace.Sample{At: at, Pod: "load-" + uid, UID: uid, Conditions: conds, Containers: []trace.Container{c}}
}

func TestFindReaction(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	inProgress := trace.Condition{Type: "PodResizeInProgress", Status: "True"}
	before := []trace.Sample{
		sample(at(-5), "a", 50, 50, 50, 100),
		sample(at(-5), "b", 50, 50, 50, 100),
	}
	tests := []struct {
		name    string
		after   []trace.Sample
		ok      bool
		want    Reaction
		kubelet float64
	}{
		{name: "nothing yet", after: []trace.Sample{sample(at(1), "a", 100, 50, 50, 100)}},
		{
			name: "in place, allocated first",
			after: []trace.Sample{
				sample(at(1.0), "b", 100, 50, 50, 100),
				sample(at(1.1), "b", 100, 100, 50, 100),
				sample(at(1.3), "b", 100, 100, 100, 200),
			},
			ok:      true,
			want:    Reaction{Pod: "load-b", UID: "b", At: at(1.3), KubeletStart: at(1.1), From: trace.Resources{CPURequestMillis: 50, CPULimitMillis: 100}, To: trace.Resources{CPURequestMillis: 100, CPULimitMillis: 200}},
			kubelet: 0.2,
		},
		{
			name: "in progress condition starts the kubelet's part",
			after: []trace.Sample{
				sample(at(1.0), "a", 50, 50, 50, 200, inProgress),
				sample(at(1.5), "a", 50, 50, 50, 100),
				sample(at(1.4), "b", 100, 50, 50, 100),
			},
			// the limit-only change moved actual at 1.0 already
			ok:   true,
			want: Reaction{Pod: "load-a", UID: "a", At: at(1.0), KubeletStart: at(1.0), From: trace.Resources{CPURequestMillis: 50, CPULimitMillis: 100}, To: trace.Resources{CPURequestMillis: 50, CPULimitMillis: 200}},
		},
		{
			name: "one status update: no kubelet time to see",
			after: []trace.Sample{
				sample(at(2), "a", 100, 100, 100, 200),
			},
			ok:   true,
			want: Reaction{Pod: "load-a", UID: "a", At: at(2), KubeletStart: at(2), From: trace.Resources{CPURequestMillis: 50, CPULimitMillis: 100}, To: trace.Resources{CPURequestMillis: 100, CPULimitMillis: 200}},
		},
		{
			name: "recreated",
			after: []trace.Sample{
				func() trace.Sample { s := sample(at(60), "a", 50, 50, 50, 100); s.Deleting = true; return s }(),
				sample(at(61), "c", 140, 140, -1, 0),
				sample(at(63), "c", 140, 140, 140, 280),
			},
			ok:   true,
			want: Reaction{Pod: "load-c", UID: "c", Recreated: true, At: at(63), From: trace.Resources{CPURequestMillis: 50, CPULimitMillis: 100}, To: trace.Resources{CPURequestMillis: 140, CPULimitMillis: 280}},
		},
		{
			name:  "a new pod at the old size is no reaction",
			after: []trace.Sample{sample(at(61), "c", 50, 50, 50, 100)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &trace.Recording{Samples: append(append([]trace.Sample(nil), before...), tt.after...)}
			got, ok := FindReaction(rec, t0, ReactionContainer)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tt.ok, got)
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if d, ok := got.Kubelet(); ok && tt.kubelet > 0 && (d.Seconds() < tt.kubelet-1e-9 || d.Seconds() > tt.kubelet+1e-9) {
				t.Errorf("Kubelet() = %v, want %vs", d, tt.kubelet)
			}
		})
	}
}

func TestReactionTo(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	rec := &trace.Recording{Samples: []trace.Sample{
		sample(at(-1), "a", 50, 50, 50, 100),
		// a resize sent before the step lands after it: not the one
		sample(at(0.5), "a", 88, 88, 88, 176),
		sample(at(2.1), "a", 150, 88, 88, 176),
		sample(at(2.2), "a", 150, 150, 88, 176),
		sample(at(2.4), "a", 150, 150, 150, 300),
	}}
	got, ok := reactionTo(rec, "load-a", at(2.0), ReactionContainer, 150, 300)
	want := Reaction{Pod: "load-a", UID: "a", At: at(2.4), KubeletStart: at(2.2),
		From: trace.Resources{CPURequestMillis: 88, CPULimitMillis: 176}, To: trace.Resources{CPURequestMillis: 150, CPULimitMillis: 300}}
	if !ok || got != want {
		t.Errorf("reactionTo = %+v, %v\nwant %+v", got, ok, want)
	}
	if _, ok := reactionTo(rec, "load-a", at(2.0), ReactionContainer, 200, 400); ok {
		t.Error("reactionTo found a resize to 200m that never happened")
	}
}

func TestActualCPUs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rec := &trace.Recording{Samples: []trace.Sample{
		sample(t0, "a", 50, 50, 50, 100),
		sample(t0, "b", 50, 50, -1, 0),
		sample(t0.Add(time.Second), "b", 125, 125, 125, 250),
		sample(t0.Add(2*time.Second), "a", 313, 313, 313, 626),
		sample(t0.Add(3*time.Second), "a", 313, 313, -1, 0), // no actual: the last one stands
	}}
	if got, want := actualCPUs(rec, ReactionContainer), "313m/626m, 125m/250m"; got != want {
		t.Errorf("actualCPUs = %q, want %q", got, want)
	}
	if got := actualCPUs(&trace.Recording{}, ReactionContainer); got != "unknown" {
		t.Errorf("actualCPUs of nothing = %q, want unknown", got)
	}
}
