//go:build e2e

// Package e2e runs the field report's experiments, and snug's own
// scenarios, against a real lab cluster that TestMain brings up and takes
// down. Select the Kubernetes version with SNUG_KUBERNETES_VERSION; set
// SNUG_E2E_REUSE=1 to run against a lab that is already up (and leave it up),
// and the tier with SNUG_E2E_TIER (api, core, smoke, full or all; tier_test.go
// and lab/docs/testing.md): a -run flag given by hand wins over it.
package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/internal/kube"
	"github.com/snug-dev/snug/lab/internal/lab"
)

var (
	labOpts *lab.Options
	client  *kubernetes.Clientset
	// core is the core/v1 client the agent and actuate use (internal/kube).
	core *kube.Client
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if err := selectTier(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 2
	}
	labOpts = lab.NewOptions()
	if v := os.Getenv("SNUG_KUBERNETES_VERSION"); v != "" {
		labOpts.KubernetesVersion = v
	}
	bin := os.Getenv("SNUG_BIN")
	if bin == "" {
		bin, _ = filepath.Abs("../../bin")
	}
	labOpts.LoadBinary = filepath.Join(bin, "snug-load")
	ctx := context.Background()
	// One e2e run per lab: a second one would take the first one's lab
	// down under its tests (lab.Lock).
	release, err := lab.Lock(labOpts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer release()
	reuse := os.Getenv("SNUG_E2E_REUSE") == "1"
	if !reuse {
		if err := lab.Down(ctx, labOpts, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: cleaning a previous lab: %v\n", err)
			return 1
		}
	}
	start := time.Now()
	err = lab.Up(ctx, labOpts, os.Stdout)
	switch {
	case errors.Is(err, lab.ErrAlreadyUp) && reuse:
		fmt.Println("e2e: reusing the lab that is up")
	case err != nil:
		fmt.Fprintf(os.Stderr, "e2e: lab up: %v\n", err)
		return 1
	default:
		fmt.Printf("e2e: lab up (Kubernetes %s) in %.1fs\n", labOpts.KubernetesVersion, time.Since(start).Seconds())
	}
	if !reuse {
		defer func() {
			if err := lab.Down(context.Background(), labOpts, os.Stdout); err != nil {
				fmt.Fprintf(os.Stderr, "e2e: lab down: %v\n", err)
			}
		}()
	}
	client, err = labOpts.Client()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	core, err = coreClient(0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	return m.Run()
}

// selectTier sets -run to the tests of SNUG_E2E_TIER, unless -run was
// given.
func selectTier() error {
	flag.Parse()
	e2eTier = os.Getenv("SNUG_E2E_TIER")
	names, err := testsOfTier(e2eTier)
	if err != nil {
		return err
	}
	run := flag.Lookup("test.run")
	if run.Value.String() != "" {
		if e2eTier != "" {
			fmt.Printf("e2e: -run %q given: it selects the tests, not SNUG_E2E_TIER=%s\n", run.Value.String(), e2eTier)
		}
		return nil
	}
	if e2eTier == "" || e2eTier == "all" {
		return nil
	}
	fmt.Printf("e2e: tier %s: %d tests\n", e2eTier, len(names))
	return run.Value.Set(runPattern(names))
}
