package main

import (
	"testing"

	"github.com/snug-dev/snug/internal/depcheck"
)

const self = "github.com/snug-dev/snug/cmd/snug-controller"

// TestDeps: what the controller links is its allow-list, depaware.txt.
func TestDeps(t *testing.T) {
	depcheck.Allowed(t, self, "depaware.txt")
}

// TestNoCLI keeps the user's CLI out of the controller whatever the
// allow-list says.
func TestNoCLI(t *testing.T) {
	depcheck.Check(t, self,
		depcheck.Forbidden{Path: "github.com/snug-dev/snug/internal/cli", Tree: true, Why: "the user's CLI"},
		depcheck.Forbidden{Path: "github.com/snug-dev/snug/internal/agent/agenttest", Tree: true, Why: "the agent's test fixtures"},
	)
}
