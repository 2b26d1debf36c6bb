package main

import (
	"testing"

	"github.com/snug-dev/snug/internal/depcheck"
)

const self = "github.com/snug-dev/snug/cmd/snug-agent"

// TestDeps keeps the lab, its experiments, the bench fixtures, the user's
// CLI, cobra and client-go's informer factory out of the agent, the
// privileged DaemonSet on every node.
//
// k8s.io/client-go/kubernetes/scheme (every API group's types in one
// scheme) is not a rule: the typed core/v1 client imports it for its
// codecs. The agent's own scheme (its event recorder's) registers core/v1
// only.
func TestDeps(t *testing.T) {
	depcheck.Check(t, self, append(depcheck.NotTheLab,
		depcheck.Forbidden{Path: "github.com/snug-dev/snug/internal/cli", Tree: true, Why: "the user's CLI"},
		depcheck.Forbidden{Path: "github.com/spf13/cobra", Tree: true, Why: "the agent parses its flags with pflag"},
		depcheck.Forbidden{Path: "k8s.io/client-go/informers", Why: "the informer factory of every API group; build informers from cache.ListWatch"},
	)...)
}

// TestAgentUsesNoUmbrellaClient keeps client-go's clientset of every API
// group out of the agent: it takes the typed core/v1 client and the
// SnugPolicy client.
func TestAgentUsesNoUmbrellaClient(t *testing.T) {
	depcheck.Check(t, self,
		depcheck.Forbidden{Path: "k8s.io/client-go/kubernetes", Why: "the clientset of every API group; use k8s.io/client-go/kubernetes/typed/core/v1"})
}
