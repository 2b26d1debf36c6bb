package main

import (
	"testing"

	"github.com/snug-dev/snug/internal/depcheck"
)

// TestDeps keeps the lab, its experiments and the bench fixtures out of the
// user's CLI.
func TestDeps(t *testing.T) {
	depcheck.Check(t, "github.com/snug-dev/snug/cmd/snug", depcheck.NotTheLab...)
}
