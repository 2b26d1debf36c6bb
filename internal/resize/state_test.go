package resize

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestState(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	pending := func(cpu string) *podBuilder {
		return newPod("web").with(ctr("app", cpu, "")).
			statusAs("app", rl("cpu=250m"), &corev1.ResourceRequirements{Requests: rl("cpu=250m")})
	}
	tests := []struct {
		name        string
		pod         *corev1.Pod
		wantOutcome Outcome
		wantString  string
	}{
		{"settled", burstable(), Applied, "Applied"},
		{"deferred", pending("700m").condition(corev1.PodResizePending, corev1.PodReasonDeferred, ago(3*time.Minute+12*time.Second+400*time.Millisecond)).get(), Deferred, "Deferred 3m12s"},
		{"infeasible", pending("3").condition(corev1.PodResizePending, corev1.PodReasonInfeasible, ago(90*time.Second)).get(), Infeasible, "Infeasible 1m30s"},
		{"in progress", pending("500m").condition(corev1.PodResizeInProgress, "", ago(2*time.Second)).get(), InProgress, "InProgress 2s"},
		{"error", pending("500m").condition(corev1.PodResizeInProgress, corev1.PodReasonError, ago(time.Hour)).get(), Error, "Error 1h0m0s"},
		{"pending wins over in progress", pending("3").
			condition(corev1.PodResizeInProgress, "", ago(time.Minute)).
			condition(corev1.PodResizePending, corev1.PodReasonDeferred, ago(time.Second)).get(), Deferred, "Deferred 1s"},
		{"not yet seen by the kubelet", pending("500m").get(), InProgress, "InProgress"},
		{"generation not observed", burstable2(), InProgress, "InProgress"},
		{"clock skew", pending("700m").condition(corev1.PodResizePending, corev1.PodReasonDeferred, now.Add(time.Minute)).get(), Deferred, "Deferred 0s"},
		{"no transition time", pending("700m").condition(corev1.PodResizePending, corev1.PodReasonDeferred, time.Time{}).get(), Deferred, "Deferred"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := State(tc.pod, now)
			if s.Outcome != tc.wantOutcome {
				t.Errorf("Outcome = %s, want %s", s.Outcome, tc.wantOutcome)
			}
			if got := s.String(); got != tc.wantString {
				t.Errorf("String() = %q, want %q", got, tc.wantString)
			}
		})
	}
}

// burstable2 is a settled pod whose latest generation the kubelet has not
// observed yet.
func burstable2() *corev1.Pod {
	p := burstable()
	p.Generation = 3
	p.Status.ObservedGeneration = 2
	return p
}

func TestStateContainers(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	actual := &corev1.ResourceRequirements{Requests: rl("cpu=250m"), Limits: rl("cpu=500m")}
	pod := newPod("web").
		init(ctr("setup", "1", "")).
		sidecar(ctr("mesh", "50m", "")).
		with(ctr("app", "700m/1400m", "")).
		statusAs("app", rl("cpu=250m"), actual).
		condition(corev1.PodResizePending, corev1.PodReasonDeferred, now.Add(-time.Minute)).get()
	pod.Status.Conditions[0].Message = "Node didn't have enough resource: cpu, requested: 700, used: 1400, capacity: 2000"
	s := State(pod, now)
	type row struct {
		Name                       string
		Sidecar, Settled           bool
		Desired, Allocated, Actual string
	}
	var got []row
	for _, c := range s.Containers {
		r := row{Name: c.Name, Sidecar: c.Sidecar, Settled: c.Settled(), Desired: summary(c.Desired),
			Allocated: summary(corev1.ResourceRequirements{Requests: c.Allocated})}
		if c.Actual != nil {
			r.Actual = summary(*c.Actual)
		}
		got = append(got, r)
	}
	want := []row{
		{Name: "app", Desired: "cpu=700m/1400m memory=-/-", Allocated: "cpu=250m/- memory=-/-", Actual: "cpu=250m/500m memory=-/-"},
		{Name: "mesh", Sidecar: true, Settled: true, Desired: "cpu=50m/- memory=-/-", Allocated: "cpu=50m/- memory=-/-", Actual: "cpu=50m/- memory=-/-"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	wantPending := &ResizeCondition{
		Type: corev1.PodResizePending, Outcome: Deferred, Reason: corev1.PodReasonDeferred,
		Message: pod.Status.Conditions[0].Message, Since: now.Add(-time.Minute), Age: time.Minute,
	}
	if diff := cmp.Diff(wantPending, s.Pending); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	if s.InProgress != nil {
		t.Errorf("InProgress = %v, want nil", s.InProgress)
	}
	if got := State(nil, now); got.Outcome != Unknown {
		t.Errorf("State(nil) outcome = %s, want Unknown", got.Outcome)
	}
}

func TestOutcomeStrings(t *testing.T) {
	got := map[string]string{}
	for o := Outcome(-1); o <= Timeout+1; o++ {
		got[o.String()] += "x"
	}
	want := map[string]string{"Unknown": "xxx", "Applied": "x", "Deferred": "x", "Infeasible": "x", "InProgress": "x",
		"Error": "x", "Rejected": "x", "Conflict": "x", "Timeout": "x"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Outcome names (-want +got):\n%s", diff)
	}
	preds := map[Prediction][2]string{
		0:                 {"Unknown", "Unknown"},
		WouldApply:        {"WouldApply", "Applied"},
		WouldDefer:        {"WouldDefer", "Deferred"},
		WouldBeInfeasible: {"WouldBeInfeasible", "Infeasible"},
	}
	for p, want := range preds {
		if got := [2]string{p.String(), p.Outcome().String()}; got != want {
			t.Errorf("Prediction %d = %v, want %v", p, got, want)
		}
	}
}

func TestOptions(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Errorf("DefaultOptions().Validate() = %v", err)
	}
	if got := (Options{}).withDefaults(); got != DefaultOptions() {
		t.Errorf("zero options = %+v, want the defaults %+v", got, DefaultOptions())
	}
	for _, o := range []Options{{NoRoom: "Maybe"}, {MemoryHeadroom: -0.1}, {MemoryHeadroom: 11}, {MaxMemoryDecreaseFraction: 1.5}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v validated", o)
		}
	}
}
