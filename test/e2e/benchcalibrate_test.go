//go:build e2e

package e2e

import (
	"strconv"
	"strings"
	"testing"
)

// TestBenchQualityCalibrate is a smoke of `snug-lab bench quality
// --calibrate` on snug's side alone, one minute of the sustained-load
// scenario: the command reuses the lab, installs snug, plays the trace,
// and prints the comparison table with the lab's figures beside the
// model's. snug must have resized the pods (their 100m limit is below the
// 200m load). Whether the figures are within tolerance is a bench result,
// printed, not asserted; the 30-minute run with VPA beside is in
// docs/benchmarks.md.
func TestBenchQualityCalibrate(t *testing.T) {
	out, stderr, code := runCmd(t, nil, snugLabBin(t), "bench", "quality", "--calibrate", "--autoscaler", "snug", "--duration", "1m",
		"--kubernetes-version", labOpts.KubernetesVersion, "--dir", labOpts.Dir)
	if code != 0 && !strings.Contains(stderr, "out of tolerance") {
		t.Fatalf("snug-lab bench quality --calibrate exited %d", code)
	}
	if !strings.Contains(out, "using the lab that is up") {
		t.Error("the command did not reuse the lab that is up")
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "snug" {
			rows[f[1]] = f
		}
	}
	r, ok := rows["resizes"]
	if !ok || len(r) < 5 {
		t.Fatalf("no snug resizes row in the table")
	}
	if n, err := strconv.Atoi(r[2]); err != nil || n < 1 {
		t.Errorf("lab resizes %q: want at least 1 (the load is twice the limit)", r[2])
	}
	for _, name := range []string{"cpu", "starved"} {
		f, ok := rows[name]
		if !ok || (f[len(f)-1] != "PASS" && f[len(f)-1] != "FAIL") {
			t.Errorf("row %s: %v, want a PASS or FAIL", name, f)
		}
	}
}
