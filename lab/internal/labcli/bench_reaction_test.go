package labcli

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchReactionFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--autoscaler", "keda"}, `--autoscaler "keda": want snug, vpa or snug,vpa`},
		{[]string{"--autoscaler", "snug,snug"}, "--autoscaler names snug twice"},
		{[]string{"--autoscaler", ""}, "--autoscaler: name at least one of snug, vpa"},
		{[]string{"--runs", "0"}, "--runs 0: want at least 1"},
		{[]string{"--runs", "-2", "--autoscaler", "vpa"}, "--runs -2: want at least 1"},
		{[]string{"--timeout", "0s"}, "--timeout 0s: want a positive duration"},
		{[]string{"--trace-dir", file}, "is not a directory"},
		{[]string{"--kubernetes-version", "2"}, "--kubernetes-version must look like 1.35.4"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			// A bad flag must stop the command before it touches a lab:
			// --dir points nowhere usable, so any lab work would fail
			// differently.
			args := append([]string{"bench", "reaction", "--dir", "/nonexistent/snug-lab"}, tc.args...)
			code := Run(context.Background(), args, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("printed before failing: %q", stdout.String())
			}
		})
	}
}

func TestMedianP95(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		xs          []float64
		median, p95 float64
	}{
		{[]float64{3, 1, 2}, 2, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 4},
		{[]float64{1.5}, 1.5, 1.5},
		{[]float64{nan, 2, 1}, 1.5, 2},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}, 11, 20},
	} {
		if got := median(tc.xs); got != tc.median {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.median)
		}
		if got := p95(tc.xs); got != tc.p95 {
			t.Errorf("p95(%v) = %v, want %v", tc.xs, got, tc.p95)
		}
	}
	if !math.IsNaN(median(nil)) || !math.IsNaN(p95([]float64{nan})) {
		t.Error("median and p95 of nothing should be NaN")
	}
}

func TestReactionTable(t *testing.T) {
	nan, never := math.NaN(), math.Inf(1)
	snug := []reactionRow{
		{T1: 0.9, T2: 1.0, T3: 1.3, T4: 3.3, Kubelet: 0.2, StillThrottled: nan, How: "in place", CPU: "50m/100m -> 100m/200m"},
		{T1: 1.1, T2: 1.2, T3: 1.6, T4: never, Kubelet: 0.25, StillThrottled: 0.42, How: "in place", CPU: "50m/100m -> 100m/200m"},
		{T1: 0.8, T2: 0.9, T3: 1.1, T4: 5.0, Kubelet: 0.15, StillThrottled: nan, How: "in place", CPU: "50m/100m -> 100m/200m"},
	}
	vpaRows := []reactionRow{
		{T1: nan, T2: 60, T3: 125, T4: never, Kubelet: 0.3, StillThrottled: nan, How: "in place", CPU: "50m/100m -> 138m/276m"},
		{T1: nan, T2: 70, T3: nan, T4: nan, Kubelet: nan, StillThrottled: nan, How: "timed out", CPU: "-"},
	}
	var b bytes.Buffer
	writeReactionTable(&b, "snug", "v1.35.4", snug)
	writeReactionTable(&b, "vpa", "v1.35.4", vpaRows)
	writeReactionComparison(&b, "v1.35.4", snug, vpaRows)
	want := `snug on Kubernetes v1.35.4: seconds from the load step (3 runs)
RUN     T1    T2    T3    T4     T3-T2  KUBELET  HOW       CPU request/limit
1       0.90  1.00  1.30  3.30   0.30   0.20     in place  50m/100m -> 100m/200m
2       1.10  1.20  1.60  never  0.40   0.25     in place  50m/100m -> 100m/200m
3       0.80  0.90  1.10  5.00   0.20   0.15     in place  50m/100m -> 100m/200m
median  0.90  1.00  1.30  5.00   0.30   0.20               
p95     1.10  1.20  1.60  never  0.40   0.25               
run 2: starvation had not ended 30s after T3: still throttled, 42% of periods in the last 2 s
goal: median T3 <= 2 s (1.30: met), p95 T3 <= 5 s (1.60: met)
goal: starvation ended within 4 s (p50) of a 4x CPU step: median T4 5.00 (not met)
vpa on Kubernetes v1.35.4: seconds from the load step (2 runs)
RUN     T1  T2     T3      T4     T3-T2  KUBELET  HOW        CPU request/limit
1       -   60.00  125.00  never  65.00  0.30     in place   50m/100m -> 138m/276m
2       -   70.00  -       -      -      -        timed out  -
median  -   65.00  125.00  never  65.00  0.30                
p95     -   70.00  125.00  never  65.00  0.30                
run 1: starvation had not ended 30s after T3: still throttled, an unknown share of periods in the last 2 s
side by side on Kubernetes v1.35.4: median seconds from the load step
         snug  vpa     vpa/snug
T2       1.00  65.00   65x
T3       1.30  125.00  96x
T4       5.00  never   -
T3-T2    0.30  65.00   217x
KUBELET  0.20  0.30    1.5x
`
	if got := b.String(); got != want {
		t.Errorf("tables:\n%s\nwant:\n%s", got, want)
	}
}

// TestMetAtPrintedResolution: a goal is judged at the 0.01 s a figure is
// printed with, so the fourth one-second tick of T4 (a few ms late) meets
// "within 4 s" and the fifth does not.
func TestMetAtPrintedResolution(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{{4.004, "met"}, {4.0, "met"}, {3.2, "met"}, {4.006, "not met"}, {5.003, "not met"}, {math.NaN(), "not met"}} {
		if got := met(tc.x, 4); got != tc.want {
			t.Errorf("met(%v, 4) = %q, want %q", tc.x, got, tc.want)
		}
	}
}
