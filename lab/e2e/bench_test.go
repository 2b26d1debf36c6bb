//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchReaction runs `snug-lab bench reaction --autoscaler snug --runs 2`
// against the lab TestMain brought up (the command reuses it and leaves it
// up) and checks that the printed table parses and has T3 for every run.
// The figures are logged, not asserted against the goal: timed goals are
// printed figures (docs/benchmarks.md).
func TestBenchReaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, snugLabBin(t), "bench", "reaction", "--autoscaler", "snug", "--runs", "2",
		"--kubernetes-version", labOpts.KubernetesVersion, "--dir", labOpts.Dir, "--timeout", "2m")
	out, err := cmd.CombinedOutput()
	t.Logf("$ snug-lab bench reaction --autoscaler snug --runs 2\n%s", out)
	if err != nil {
		t.Fatalf("snug-lab bench reaction: %v", err)
	}
	if !strings.Contains(string(out), "using the lab that is up") {
		t.Errorf("the command did not reuse the lab that is up")
	}
	rows := parseReactionTable(t, string(out), "snug")
	for _, name := range []string{"1", "2", "median", "p95"} {
		r, ok := rows[name]
		if !ok {
			t.Errorf("table has no row %q", name)
			continue
		}
		t3, err := strconv.ParseFloat(r["T3"], 64)
		if err != nil || t3 <= 0 {
			t.Errorf("row %s: T3 %q, want seconds above 0", name, r["T3"])
		}
		if name == "1" || name == "2" {
			if r["HOW"] != "in" { // "in place", split on spaces
				t.Errorf("row %s: HOW %q, want in place", name, r["HOW"])
			}
			// T4, starvation ended, comes after T3, or the run says
			// plainly that it did not come.
			if r["T4"] == "never" {
				if !strings.Contains(string(out), "run "+name+": starvation had not ended 30s after T3: still throttled, ") {
					t.Errorf("row %s: T4 never, without the line saying how throttled", name)
				}
			} else if t4, err := strconv.ParseFloat(r["T4"], 64); err != nil || t4 < t3 {
				t.Errorf("row %s: T4 %q, want seconds at or after T3 (%.2f), or never", name, r["T4"], t3)
			}
		}
	}
	if !strings.Contains(string(out), "goal: median T3 <= 2 s") {
		t.Error("no goal line for T3")
	}
	if m := regexp.MustCompile(`goal: starvation ended within 4 s \(p50\) of a 4x CPU step: median T4 (\S+) \((met|not met)\)`).FindStringSubmatch(string(out)); m == nil {
		t.Error("no goal line for T4")
	} else {
		t.Logf("BENCH %s median T3 %s, median T4 %s (%s)", labOpts.KubernetesVersion, rows["median"]["T3"], m[1], m[2])
	}
}

// parseReactionTable finds the table of autoscaler name in out and returns
// its rows by their first cell, each as column name -> cell.
func parseReactionTable(t *testing.T, out, name string) map[string]map[string]string {
	t.Helper()
	lines := strings.Split(out, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, name+" on Kubernetes ") {
			start = i + 1
			break
		}
	}
	if start < 0 || start >= len(lines) {
		t.Fatalf("no %q table in the output", name)
	}
	head := strings.Fields(lines[start])
	if len(head) < 6 || head[0] != "RUN" || head[3] != "T3" {
		t.Fatalf("table head %q: want RUN T1 T2 T3 ...", lines[start])
	}
	rows := map[string]map[string]string{}
	for _, l := range lines[start+1:] {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(l, "goal:") {
			break
		}
		r := map[string]string{}
		for i, h := range head {
			if i < len(f) {
				r[h] = f[i]
			}
		}
		rows[f[0]] = r
	}
	return rows
}
