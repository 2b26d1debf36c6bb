//go:build e2e

package e2e

import "testing"

// pushSnugImages pushes the agent's and the controller's images of this
// build to the lab's registry under n tags, as <registry>/snug-dev/snug-agent
// and .../snug-controller (the chart's repositories), and returns the
// registry and the tags.
func pushSnugImages(t *testing.T, n int) (registry string, tags []string) {
	t.Helper()
	t.Fatal("the lab has no registry yet: pushing snug's images needs the lab's registry and image builder (branch h-lab)")
	return "", nil
}
