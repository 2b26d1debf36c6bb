package main

import (
	"testing"

	"github.com/snug-dev/snug/internal/depcheck"
)

const self = "github.com/snug-dev/snug/cmd/snug-agent"

// TestDeps: what the agent, the privileged DaemonSet on every node, links
// is its allow-list, depaware.txt.
func TestDeps(t *testing.T) {
	depcheck.Allowed(t, self, "depaware.txt")
}

// TestNoCLI keeps the user's CLI, client-go's informer factory and the
// agent's test fixtures out of the agent whatever the allow-list says.
// (cobra is no longer banned: component-base's logging flags, which every
// Kubernetes component takes, link it through component-base/cli/flag.)
func TestNoCLI(t *testing.T) {
	depcheck.Check(t, self,
		depcheck.Forbidden{Path: "github.com/snug-dev/snug/internal/cli", Tree: true, Why: "the user's CLI"},
		depcheck.Forbidden{Path: "k8s.io/client-go/informers", Why: "the informer factory of every API group; build informers from cache.ListWatch"},
		depcheck.Forbidden{Path: "github.com/snug-dev/snug/internal/agent/agenttest", Tree: true, Why: "the agent's test fixtures"},
	)
}

// TestAgentUsesNoUmbrellaClient keeps client-go's clientset of every API
// group out of the agent, and its typed clients and their scheme too: it
// talks core/v1 through internal/kube (a scheme of core/v1 only) and the
// SnugPolicy client. The reason is the agent's RSS, which every node
// pays: kubernetes/scheme's package init registers every API group's
// types, and a binary that links the typed core/v1 client (which imports
// it) has 18.3 MiB of VmRSS against 5.1 MiB for net/http alone
// (docs/agent.md, "Memory against the 30 MiB target").
func TestAgentUsesNoUmbrellaClient(t *testing.T) {
	depcheck.Check(t, self,
		depcheck.Forbidden{Path: "k8s.io/client-go/kubernetes", Why: "the clientset of every API group; use internal/kube"},
		depcheck.Forbidden{Path: "k8s.io/client-go/kubernetes/scheme", Why: "a scheme of every API group (agent RSS); use internal/kube's core/v1 scheme"},
		depcheck.Forbidden{Path: "k8s.io/client-go/kubernetes/typed/core/v1", Why: "the typed core/v1 client imports kubernetes/scheme (agent RSS); use internal/kube"},
	)
}
