package labcli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestBenchAgentFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "agent", "--layout", "v3"}, `--layout "v3": want v1 or v2`},
		{[]string{"bench", "agent", "--containers", "0"}, "--containers 0 is out of range"},
		{[]string{"bench", "agent", "--duration", "10ms"}, "--duration 10ms is shorter than --interval 1s"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), tc.args, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// TestBenchScaleFlags: bad flags of bench scale are refused before
// anything starts (exit 2, no lab).
// TestBenchScaleSkipCreations: --create-for 0 skips the creation phase
// (pflag's int slice cannot be set empty).
func TestBenchScaleSkipCreations(t *testing.T) {
	o := newBenchScaleOptions()
	o.CreateFor = 0
	if err := o.Validate(); err != nil || len(o.CreateRates) != 0 {
		t.Errorf("--create-for 0: %v, rates %v; want no error and no rates", err, o.CreateRates)
	}
}

func TestBenchScaleFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "scale", "--nodes", "0"}, "--nodes 0 is out of range [1, 5000]"},
		{[]string{"bench", "scale", "--pods-per-node", "200"}, "--pods-per-node 200 is out of range [1, 110]"},
		{[]string{"bench", "scale", "--steady", "1s"}, "the others at least 10s"},
		{[]string{"bench", "scale", "--step-fraction", "0"}, "--step-fraction 0 is out of range (0, 1]"},
		{[]string{"bench", "scale", "--max-load", "-1"}, "--max-load -1 must be positive"},
		{[]string{"bench", "scale", "--create-rates", "0"}, "--create-rates 0 is out of range [1, 1000]"},
		{[]string{"bench", "scale", "--create-for", "500ms"}, "--create-for 500ms is out of range [1s, 10m], or 0 to skip"},
		{[]string{"bench", "scale", "--nodes", "50,100,50"}, "--nodes 50 is named twice"},
		{[]string{"bench", "scale", "--rollout-window", "-1s"}, "--rollout-window -1s must not be negative"},
		{[]string{"bench", "scale", "--google-mode", "mean"}, `--google-mode "mean": want drawn or hold`},
		{[]string{"bench", "scale", "--trace", "/nonexistent/trace"}, "reading the trace"},
		{[]string{"bench", "kubelet", "--pods", "0"}, "--pods 0 is out of range [1, 100]"},
		{[]string{"bench", "kubelet", "--rates", "0"}, "--rates 0 is out of range (0, 600]"},
		{[]string{"bench", "kubelet", "--window", "1s"}, "the window at least 10s"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), tc.args, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), tc.want)
			}
		})
	}
}
