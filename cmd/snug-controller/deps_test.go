package main

import (
	"testing"

	"github.com/snug-dev/snug/internal/depcheck"
)

// TestDeps keeps the lab, its experiments, the bench fixtures and the
// user's CLI out of the controller.
func TestDeps(t *testing.T) {
	depcheck.Check(t, "github.com/snug-dev/snug/cmd/snug-controller", append(depcheck.NotTheLab,
		depcheck.Forbidden{Path: "github.com/snug-dev/snug/internal/cli", Tree: true, Why: "the user's CLI"})...)
}
