package labcli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchQualityFlags: bad flags fail with exit code 2 and a clear
// message, before anything is replayed or built.
func TestBenchQualityFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "quality", "--shape", "sine"}, `--shape "sine": want one of`},
		{[]string{"bench", "quality", "--shape", ""}, "--shape and --seed: name at least one"},
		{[]string{"bench", "quality", "--trace-format", "prom"}, `--trace-format "prom": want snug or alibaba`},
		{[]string{"bench", "quality", "--alibaba-cpu-millis", "0"}, "--alibaba-cpu-millis and --alibaba-mem-bytes must be positive"},
		{[]string{"bench", "quality", "--workers", "0"}, "--workers must be at least 1"},
		{[]string{"bench", "quality", "--calibrate", "--duration", "5s"}, "--duration 5s: want whole seconds, at least 10s"},
		{[]string{"bench", "quality", "--calibrate", "--duration", "90.5s"}, "--duration 1m30.5s: want whole seconds"},
		{[]string{"bench", "quality", "--calibrate", "--autoscaler", "hpa"}, "--autoscaler [hpa]: want snug, vpa or snug,vpa"},
		{[]string{"bench", "quality", "--calibrate", "--autoscaler", "snug,snug"}, "--autoscaler [snug snug]: want snug, vpa or snug,vpa"},
		{[]string{"bench", "quality", "--calibrate", "--no-vpa"}, "--calibrate plays its own scenario under snug and VPA: no --trace or --no-vpa"},
		{[]string{"bench", "quality", "--calibrate", "--dir", "relative"}, "--dir"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), tc.args, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), tc.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("printed %q before failing", stdout.String())
			}
		})
	}
}

// TestBenchQuality replays one short shape without VPA and checks the
// table and the picture.
func TestBenchQuality(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"bench", "quality", "--no-vpa", "--shape", "startup", "--seed", "2", "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"startup/seed2 (held-out half, 1 pod(s), 1.0 h)", "starved core-s", "overall, held-out half (1 traces)", "replayed 1 trace(s) under 3 sizers"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	if _, err := os.Stat(filepath.Join(out, "startup-seed2.svg")); err != nil {
		t.Error(err)
	}
}
