package quality

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/snug-dev/snug/lab/internal/quality/node"
	"github.com/snug-dev/snug/lab/internal/quality/trace"
)

func TestToleranceAllows(t *testing.T) {
	resizes := Tolerance{Abs: 1, Rel: 0.2}
	slack := Tolerance{Abs: 0.05}
	for _, tt := range []struct {
		name       string
		tol        Tolerance
		model, lab float64
		want       bool
	}{
		{"resizes equal", resizes, 3, 3, true},
		{"resizes one off, few", resizes, 4, 3, true},
		{"resizes two off, few", resizes, 5, 3, false},
		{"resizes 20% of many", resizes, 12, 10, true},
		{"resizes over 20% of many", resizes, 13, 10, false},
		{"resizes below", resizes, 8, 10, true},
		{"slack 5 points", slack, 0.30, 0.25, true},
		{"slack over 5 points", slack, 0.19, 0.25, false},
		{"nan on one side", slack, math.NaN(), 0.25, false},
		{"nan on both", slack, math.NaN(), math.NaN(), true},
	} {
		if got := tt.tol.Allows(tt.model, tt.lab); got != tt.want {
			t.Errorf("%s: Allows(%v, %v) = %v, want %v", tt.name, tt.model, tt.lab, got, tt.want)
		}
	}
}

// TestStarvedMillis: the fluid model's mapping, demand 200m under a 100m
// limit is throttled half of each period: 100m unmet.
func TestStarvedMillis(t *testing.T) {
	for _, tt := range []struct{ demand, throttled, want float64 }{
		{200, 0.5, 100}, {200, 0, 0}, {200, 1.5, 200}, {200, -0.1, 0},
	} {
		if got := StarvedMillis(tt.demand, tt.throttled); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("StarvedMillis(%v, %v) = %v, want %v", tt.demand, tt.throttled, got, tt.want)
		}
	}
	// And it agrees with the node model where the model is fluid: a
	// second of constant demand over the limit.
	usage, _ := node.CPU(200, 100, nil)
	if math.Abs((200-usage)-StarvedMillis(200, 1-100.0/200)) > 1e-9 {
		t.Errorf("the model's starved %v differs from the mapping's %v", 200-usage, StarvedMillis(200, 0.5))
	}
}

// TestLabMetrics feeds four hand-made lab seconds of one pod through the
// replay's accumulation: a resize in second 2, starved from throttled time.
func TestLabMetrics(t *testing.T) {
	tr := tiny([]float64{200, 200, 200, 200}, []float64{50, 50, 50, 50}, 0)
	small := node.Resources{CPURequestMillis: 50, CPULimitMillis: 100, MemRequestBytes: 100, MemLimitBytes: 200}
	big := node.Resources{CPURequestMillis: 250, CPULimitMillis: 500, MemRequestBytes: 100, MemLimitBytes: 200}
	lab := [][]LabSecond{{
		{Running: true, CPUUsageMillis: 100, ThrottledFraction: 1, ThrottledSeconds: 0.5, MemBytes: 50, Resources: small},
		{Running: true, CPUUsageMillis: 100, ThrottledFraction: 1, ThrottledSeconds: 0.5, MemBytes: 50, Resources: small},
		{Running: true, CPUUsageMillis: 200, MemBytes: 50, Resources: big, Resized: true},
		{Running: false, Resources: big},
	}}
	m, err := LabMetrics(tr, "snug", lab)
	if err != nil {
		t.Fatal(err)
	}
	if m.Resizes != 1 {
		t.Errorf("resizes = %d, want 1", m.Resizes)
	}
	// Slack: (50-100)+ + (50-100)+ + (250-200) + 250 (not running: used
	// nothing) over 50+50+250+250.
	if want := 300.0 / 600; math.Abs(m.CPUSlack-want) > 1e-9 {
		t.Errorf("cpu slack = %v, want %v", m.CPUSlack, want)
	}
	// Starved: 100 + 100 unmet in throttled seconds, 200 while not
	// measured.
	if want := 0.4; math.Abs(m.StarvedCoreSeconds-want) > 1e-9 {
		t.Errorf("starved = %v, want %v", m.StarvedCoreSeconds, want)
	}
	// One calm second (2) before the container stopped: never ended.
	if len(m.Ended) != 1 || !math.IsNaN(m.Ended[0]) {
		t.Errorf("ended = %v, want [NaN]", m.Ended)
	}
	if got := LabUnmetCoreSeconds(tr, lab); math.Abs(got-0.2) > 1e-9 {
		t.Errorf("unmet = %v, want 0.2", got)
	}
	if got := LabThrottledTimeCoreSeconds(tr, lab); math.Abs(got-0.2) > 1e-9 {
		t.Errorf("throttled-time reading = %v, want 0.2", got)
	}
	// A shortfall without throttling is the host's, not starvation.
	lab[0][2].CPUUsageMillis = 150
	if m, _ := LabMetrics(tr, "snug", lab); math.Abs(m.StarvedCoreSeconds-0.4) > 1e-9 {
		t.Errorf("starved with an unthrottled shortfall = %v, want 0.4", m.StarvedCoreSeconds)
	}
	if got := LabUnmetCoreSeconds(tr, lab); math.Abs(got-0.25) > 1e-9 {
		t.Errorf("unmet with an unthrottled shortfall = %v, want 0.25", got)
	}
	if _, err := LabMetrics(tr, "snug", [][]LabSecond{lab[0][:3]}); err == nil {
		t.Error("LabMetrics took 3 seconds of a 4-second trace")
	}
}

func TestCalibrateAndWrite(t *testing.T) {
	lab := map[string]*Metrics{"snug": {Resizes: 4, CPUSlack: 0.2, StarvedCoreSeconds: 2, Ended: []float64{3}, Seconds: 100}}
	good := map[string]*Metrics{"snug": {Resizes: 5, CPUSlack: 0.24, StarvedCoreSeconds: 2.4, Ended: []float64{4}, Seconds: 100}}
	bad := map[string]*Metrics{"snug": {Resizes: 7, CPUSlack: 0.24, StarvedCoreSeconds: 4, Ended: []float64{4}, Seconds: 100}}
	checks, err := Calibrate([]string{"snug"}, lab, good)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteCalibration(&b, checks); err != nil {
		t.Errorf("a model within tolerance: %v\n%s", err, b.String())
	}
	if strings.Count(b.String(), "PASS") != 3 || strings.Contains(b.String(), "FAIL") {
		t.Errorf("want 3 PASS, no FAIL:\n%s", b.String())
	}
	checks, _ = Calibrate([]string{"snug"}, lab, bad)
	b.Reset()
	if err := WriteCalibration(&b, checks); !errors.Is(err, ErrCalibration) {
		t.Errorf("a model out of tolerance: err %v, want ErrCalibration", err)
	}
	if strings.Count(b.String(), "FAIL") != 2 {
		t.Errorf("want resizes and starved to FAIL:\n%s", b.String())
	}
	if _, err := Calibrate([]string{"vpa"}, lab, good); err == nil {
		t.Error("Calibrate compared a sizer it has no figures of")
	}
}

// TestSustainedModel: the scenario replays under snug on the model, and snug
// ends the initial starvation within seconds.
func TestSustainedModel(t *testing.T) {
	tr, err := trace.Sustained(300, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ModelRuns(tr, []string{"snug"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := m["snug"]
	t.Logf("snug on %s: %d resizes, cpu slack %.1f%%, starved %.2f core-s, ended %v", tr.Name, s.Resizes, 100*s.CPUSlack, s.StarvedCoreSeconds, s.Ended)
	if s.Resizes == 0 || s.EndedP50() > 30 {
		t.Errorf("snug: %d resizes, starvation ended after %v s; want it resized within 30 s", s.Resizes, s.EndedP50())
	}
}

func TestLabVPAPhases(t *testing.T) {
	for _, tt := range []struct {
		name string
		m    *Metrics
		want VPAPhases
		ok   bool
	}{
		{"no target", &Metrics{}, VPAPhases{}, false},
		{"target, no resize: updater a second before", &Metrics{Targets: []TargetChange{{44, 126}}, ResizedAt: [][]int{nil, nil}}, VPAPhases{44, 43}, true},
		{"first resize of either pod", &Metrics{Targets: []TargetChange{{44, 126}}, ResizedAt: [][]int{{165}, {105}}}, VPAPhases{44, 44}, true},
		{"wraps", &Metrics{Targets: []TargetChange{{60, 126}}, ResizedAt: [][]int{{120}}}, VPAPhases{0, 59}, true},
	} {
		got, ok := LabVPAPhases(tt.m)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: LabVPAPhases = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	// A phase outside the minute is refused.
	tr, _ := trace.Sustained(60, 1)
	if _, err := Run(tr, "vpa", Env{VPABinary: "unused", VPAPhases: &VPAPhases{Recommender: 60}}); err == nil {
		t.Error("Run took a recommender phase of 60")
	}
}
