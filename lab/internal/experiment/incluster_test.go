package experiment

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHelmArgs(t *testing.T) {
	o := InstallOptions{Chart: "/c", Kubeconfig: "/k", Registry: "10.213.0.2:5000", Tag: "abc123",
		AgentArgs: []string{"--cpu-half-life=10s"}, NoController: true, Set: []string{"crds.keep=false"}}
	args, err := o.helmArgs(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{
		"upgrade --install snug /c --namespace snug-system --create-namespace --kubeconfig /k --wait --timeout 1m0s",
		"--set image.registry=10.213.0.2:5000", "--set image.tag=abc123",
		`--set-json agent.extraArgs=["--cpu-half-life=10s"]`, "--set controller.enabled=false", "--set crds.keep=false",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("helm %s\nlacks %q", line, want)
		}
	}
	if slices.Contains(args, "agent.image.pullPolicy=Always") {
		t.Errorf("a clean tag pulls Always: %s", line)
	}
	o.Tag = "abc123-dirty"
	args, _ = o.helmArgs(time.Minute)
	if !slices.Contains(args, "agent.image.pullPolicy=Always") || !slices.Contains(args, "controller.image.pullPolicy=Always") {
		t.Errorf("a -dirty tag does not pull Always: %s", strings.Join(args, " "))
	}
}
