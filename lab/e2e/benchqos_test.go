//go:build e2e

package e2e

import (
	"strings"
	"testing"
)

// TestBenchQoS runs `snug-lab bench qos --autoscaler snug` (the field report's
// wall 4) on the lab and holds snug to issue 6: the Guaranteed pods under
// RequestsOnly are resized in place, stay Guaranteed, keep their UIDs and
// do not restart.
func TestBenchQoS(t *testing.T) {
	out, _, code := runCmd(t, nil, snugLabBin(t), "bench", "qos", "--autoscaler", "snug",
		"--kubernetes-version", labOpts.KubernetesVersion, "--observe", "90s")
	if code != 0 {
		t.Fatalf("snug-lab bench qos exited %d", code)
	}
	const want = "verdict snug: resized in place keeping QoS Guaranteed: 2/2 pods"
	if !strings.Contains(out, want) || !strings.Contains(out, "restarts 0, same pod UIDs") {
		t.Errorf("want the verdict %q with restarts 0 and the same pod UIDs", want)
	}
}
