// Package charttest checks charts/snug with the helm CLI the lab builds:
// lint, rendering, values and the embedded copy. It lives in the lab module
// because it needs that helm, which the product module does not carry.
package charttest

import (
	"fmt"
	"os"
	"testing"
)

// chartDir is charts/snug of the product module; the tests run there, as
// helm does, so that relative paths (testdata, files, ../../config) hold.
const chartDir = "../../../charts/snug"

func TestMain(m *testing.M) {
	if err := os.Chdir(chartDir); err != nil {
		fmt.Fprintf(os.Stderr, "charttest: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
