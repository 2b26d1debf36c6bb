package main

import (
	"testing"

	"github.com/snug-dev/snug/internal/depcheck"
)

// TestDeps: what the user's CLI links is its allow-list, depaware.txt.
func TestDeps(t *testing.T) {
	depcheck.Allowed(t, "github.com/snug-dev/snug/cmd/snug", "depaware.txt")
}
