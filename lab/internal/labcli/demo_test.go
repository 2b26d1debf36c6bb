package labcli

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/internal/agent"
)

func TestDemoFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // substring of the error; empty: valid
	}{
		{name: "defaults", args: nil},
		{name: "shrink and keep-lab", args: []string{"--shrink", "--keep-lab", "--timeout=30s"}},
		{name: "experiments", args: []string{"--experiments"}},
		{name: "deprecated keep", args: []string{"--keep"}},
		{name: "zero timeout", args: []string{"--timeout=0s"}, want: "--timeout must be positive"},
		{name: "shrink with experiments", args: []string{"--experiments", "--shrink"}, want: "does not go with --experiments"},
		{name: "bad version", args: []string{"--kubernetes-version=2"}, want: "--kubernetes-version must look like"},
		{name: "two problems at once", args: []string{"--timeout=-1s", "--dir=relative"}, want: "--dir must be an absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newDemoOptions()
			fs := pflag.NewFlagSet("demo", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("parsing %v: %v", tc.args, err)
			}
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestDemoBadFlagStartsNothing runs the command with a bad flag: it must
// fail on the flag, before the lab, with nothing printed.
func TestDemoBadFlagStartsNothing(t *testing.T) {
	var out bytes.Buffer
	root := newRootCommand(&out, &out)
	root.SetArgs([]string{"demo", "--timeout=0s", "--dir=/nonexistent/snug-demo-test"})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "--timeout must be positive") {
		t.Fatalf("err = %v, want the --timeout error", err)
	}
	if out.Len() != 0 {
		t.Errorf("printed %q before failing, want nothing", out.String())
	}
}

func TestDemoSummary(t *testing.T) {
	step := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s := &demoSummary{
		Targets:  "cpu=400m",
		Step:     step,
		StatusAt: step.Add(1930 * time.Millisecond),
		Before:   podState{CPU: "50m/100m", CPURequestMilli: 50, CPULimitMilli: 100, ContainerID: "containerd://abc", QoS: corev1.PodQOSBurstable},
		After:    podState{CPU: "120m/240m", CPURequestMilli: 120, CPULimitMilli: 240, ContainerID: "containerd://abc", QoS: corev1.PodQOSBurstable},
		Resizes: []agent.ResizeJSON{
			{Outcome: "Applied", Plan: "app cpu 50m/100m -> 120m/240m (throttled)", DecidedAt: step.Add(840 * time.Millisecond), DecisionToPatchSeconds: 0.06},
			{Outcome: "Applied", Plan: "app cpu 120m/240m -> 300m/600m", DecidedAt: step.Add(3 * time.Second)},
		},
	}
	want := `
== Result: grown in place, 1.93s from the load step (cpu=400m) to the pod's status
     step -> agent's decision       0.84s  (app cpu 50m/100m -> 120m/240m (throttled))
     step -> patch accepted         0.90s
     step -> status shows it        1.93s  (actual cpu 50m/100m -> 120m/240m)
     resizes after the step       2 (the agent records them as they complete)
     restarts                     0 -> 0
     container ID                 unchanged (containerd://abc)
     QoS class                    Burstable -> Burstable (unchanged)
`
	if diff := cmp.Diff(want, s.format()); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}

	// After the grow the demo waits for the pod's starvation to end, and
	// says when, or how throttled it still is.
	s.EndWatched, s.Ended, s.EndCPU = true, step.Add(5120*time.Millisecond), "300m/600m"
	ended := "     step -> starvation ended       5.12s  (throttled under 5% of periods for 2 s; actual cpu then 300m/600m)\n"
	if got := s.format(); !strings.Contains(got, "     step -> status shows it        1.93s  (actual cpu 50m/100m -> 120m/240m)\n"+ended) {
		t.Errorf("summary lacks %q after the status line:\n%s", ended, got)
	}
	s.Ended, s.StillThrottled = time.Time{}, 0.384
	still := "     starvation not ended         still throttled: 38% of periods 30s after the status (actual cpu then 300m/600m)\n"
	if got := s.format(); !strings.Contains(got, still) {
		t.Errorf("summary lacks %q:\n%s", still, got)
	}
	s.StillThrottled = math.NaN()
	if got := s.format(); !strings.Contains(got, "     starvation not ended         still throttled 30s after") {
		t.Errorf("summary without a throttled share:\n%s", got)
	}
	s.EndWatched = false

	// A shrink, a restart and a QoS change say so.
	s.Before, s.After = s.After, s.Before
	s.After.Restarts, s.After.ContainerID, s.After.QoS = 1, "containerd://def", corev1.PodQOSGuaranteed
	s.Resizes = nil
	got := s.format()
	for _, line := range []string{"== Result: shrunk in place", "restarts                     0 -> 1", "container ID                 changed:", "Burstable -> Guaranteed (CHANGED)"} {
		if !strings.Contains(got, line) {
			t.Errorf("summary lacks %q:\n%s", line, got)
		}
	}
	if strings.Contains(got, "agent's decision") {
		t.Errorf("summary without the agent's records shows a decision:\n%s", got)
	}
}

func TestDemoStops(t *testing.T) {
	at := func(req, lim int64) podState { return podState{CPURequestMilli: req, CPULimitMilli: lim} }
	for _, tc := range []struct {
		name        string
		stop        stopWhen
		before, now podState
		want        bool
	}{
		{"grow: same", growStop, at(50, 100), at(50, 100), false},
		{"grow: limit up", growStop, at(50, 100), at(120, 240), true},
		{"grow: request only", growStop, at(50, 100), at(80, 100), false},
		{"shrink: same", shrinkStop, at(300, 600), at(300, 600), false},
		{"shrink: request down, limit kept", shrinkStop, at(300, 600), at(200, 600), true},
		{"shrink: grew again", shrinkStop, at(300, 600), at(400, 800), false},
	} {
		if got := tc.stop(tc.before, tc.now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
