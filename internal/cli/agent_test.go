package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestAgentAndBenchFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"agent"}, 2, "--node is required"},
		{[]string{"agent", "--node", "n", "--interval", "100ms"}, 2, "--interval 100ms is out of range [250ms, 10s]"},
		{[]string{"agent", "--node", "n", "--interval", "11s"}, 2, "--interval 11s is out of range"},
		{[]string{"agent", "--node", "n", "--history", "0"}, 2, "--history 0 is out of range"},
		{[]string{"agent", "--node", "n", "--listen", "nohost"}, 2, `--listen "nohost"`},
		{[]string{"agent", "--node", "n", "--cgroup-root", ""}, 2, "--cgroup-root is empty"},
		{[]string{"agent", "--node", "n", "--cgroup-root", "/nonexistent"}, 1, "reading cgroups at /nonexistent"},
		{[]string{"agent", "--node", "n", "--cpu-half-life", "500ms"}, 2, "--cpu-half-life 500ms is out of range [1s, 24h]"},
		{[]string{"agent", "--node", "n", "--snapshot-interval", "500ms"}, 2, "--snapshot-interval 500ms is out of range [1s, 1h] (or 0)"},
		{[]string{"agent", "--node", "n", "--autoscale=false", "--dry-run"}, 2, "--dry-run needs --autoscale"},
		{[]string{"bench", "agent", "--layout", "v3"}, 2, `--layout "v3": want v1 or v2`},
		{[]string{"bench", "agent", "--containers", "0"}, 2, "--containers 0 is out of range"},
		{[]string{"bench", "agent", "--duration", "10ms"}, 2, "--duration 10ms is shorter than --interval 1s"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), tc.code, tc.want)
			}
		})
	}
}

func TestBenchAgentPrintsFigures(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"bench", "agent", "--containers", "5", "--interval", "250ms", "--duration", "600ms", "--layout", "v1"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"5 containers (5 tracked)", "% of one core", "passes ", "VmRSS"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}
