//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/snug-dev/snug/lab/internal/lab/image"
)

// pushSnugImages pushes the agent's and the controller's images of this
// build to the lab's registry under n tags, as
// <registry>/snug-dev/snug-agent and .../snug-controller (the chart's
// repositories), and returns the registry and the tags. The first tag is
// the build's version (pushedImages); each further one is another image of
// the same binaries (its version label differs), so that an upgrade to it
// changes the pods' image for real.
func pushSnugImages(t *testing.T, n int) (registry string, tags []string) {
	t.Helper()
	imgs := pushedImages(t)
	first := imgs["snug-agent"].Ref
	tag := first[strings.LastIndex(first, ":")+1:]
	tags = append(tags, tag)
	meta, err := image.GitMeta(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		m := meta
		m.Version = tag + "-helm" + string(rune('0'+i))
		builts, err := image.BuildProducts(labOpts.Registry(), filepath.Dir(labOpts.LoadBinary), m)
		if err != nil {
			t.Fatal(err)
		}
		if err := image.Push(t.Context(), builts, true); err != nil {
			t.Fatalf("pushing %s to the lab registry: %v", m.Version, err)
		}
		for _, b := range builts {
			t.Logf("pushed %s %s", b.Ref, b.Digest)
		}
		tags = append(tags, m.Version)
	}
	return labOpts.Registry(), tags
}
