package e2e

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The tiers of the e2e suite (lab/docs/testing.md). make test (the CI gate)
// runs the api tier on every version, core on one and smoke on the others;
// make test-full runs api, core and full on every version.
const (
	// tierAPI is about the API server's answers: CRD schema and CEL, RBAC,
	// convert, resize validation (the planner's property test), the CLIs'
	// bad input. It runs in the same full lab as the others: a few of its
	// tests start pods or install the chart (the property test's four
	// running pods, TestConvertVPA's conflict case, TestRBAC's grow).
	tierAPI = "api"
	// tierCore is snug's behaviour on a real kubelet: the field report's
	// experiments, the resize outcomes, the agent, the autoscaler, the
	// controller, admission, the chart.
	tierCore = "core"
	// tierSmoke is the short check of another version: chart install, one
	// grow, the resize outcomes (the 1.36+ 403 among them), admission.
	// Its tests are core tests, some of which do less in this tier.
	tierSmoke = "smoke"
	// tierFull is what only make test-full runs: the cgroup-v2 node's whole
	// run, chaos, upstream VPA, the demo, the benches' e2e, Prometheus.
	tierFull = "full"
)

// tiers says which tier each top-level test is in. A test in tierCore
// that is also a smoke test is listed in smokeTests. A test missing here
// fails TestEveryTestHasATier.
var tiers = map[string]string{
	// api
	"TestPolicyCRD":                       tierAPI,
	"TestConvertVPA":                      tierAPI,
	"TestRBAC":                            tierAPI,
	"TestPlannerPropertyAgainstAPIServer": tierAPI,
	"TestResizeCLIBadInput":               tierAPI,
	"TestTraceBadInput":                   tierAPI,
	"TestResizeDefaultsRequestToLimit":    tierAPI,
	"TestControllerStatusUnscheduled":     tierAPI,
	"TestLabAuditNamesPodDeleter":         tierAPI,

	// core
	"TestAdmission":                    tierCore,
	"TestAdmissionFallbacks":           tierCore,
	"TestAgent":                        tierCore,
	"TestAuth":                         tierCore,
	"TestAutoscale":                    tierCore,
	"TestAutoscaleDeferred":            tierCore,
	"TestCheckpoint":                   tierCore,
	"TestAgentConflict":                tierCore,
	"TestController":                   tierCore,
	"TestFieldReportCPUResize":         tierCore,
	"TestFieldReportMemoryRestart":     tierCore,
	"TestFieldReportDeferred":          tierCore,
	"TestFieldReportInfeasible":        tierCore,
	"TestFieldReportQoSChange":         tierCore,
	"TestFieldReportMemoryDecrease":    tierCore,
	"TestFieldReportMergePatch":        tierCore,
	"TestHelm":                         tierCore,
	"TestKubeProxyClusterIP":           tierCore,
	"TestRegistryPull":                 tierCore,
	"TestCgroupsReadableAsNonRoot":     tierCore,
	"TestAgentInCluster":               tierCore,
	"TestNamespaceQuota":               tierCore,
	"TestStartupBoost":                 tierCore,
	"TestRestartWindow":                tierCore,
	"TestPodLevelResources":            tierCore,
	"TestScaleSmoke":                   tierCore,
	"TestResizeApplied":                tierCore,
	"TestResizeDeferredTimeoutDeleted": tierCore,
	"TestResizeInfeasibleOrRejected":   tierCore,
	"TestResizeKubeletError":           tierCore,
	"TestResizeConflict":               tierCore,
	"TestResizeCLICapToNode":           tierCore,
	"TestStatusCLI":                    tierCore,
	"TestTraceCPUResize":               tierCore,
	"TestTraceDeferredCLI":             tierCore,
	"TestTraceSelectorFollowsPods":     tierCore,

	// full
	"TestV2Node":                          tierFull,
	"TestChaos":                           tierFull,
	"TestGrowLeavesRoomForHigherPriority": tierFull,
	"TestChaosMemorySpike":                tierFull,
	"TestUpstreamVPA":                     tierFull,
	"TestDemo":                            tierFull,
	"TestBenchReaction":                   tierFull,
	"TestBenchQoS":                        tierFull,
	"TestPrometheus":                      tierFull,
	"TestLabInstall":                      tierFull,
	"TestAgentWrites":                     tierFull,
	"TestKwokStages":                      tierFull,
}

// smokeTests are the core tests the smoke tier runs.
var smokeTests = []string{
	"TestHelm",
	"TestAutoscale", // the Deployment's grow only (smoke())
	"TestResizeApplied",
	"TestResizeDeferredTimeoutDeleted",
	"TestResizeInfeasibleOrRejected",
	"TestFieldReportInfeasible",
	"TestAdmission",
	"TestNamespaceQuota",
	"TestStartupBoost",
	"TestPodLevelResources",
}

// e2eTier is the tier this run selected (SNUG_E2E_TIER), "" for all.
var e2eTier string

// smoke reports whether this run is the smoke tier: a test that is also
// a smoke test does only its first, defining part then.
func smoke() bool { return e2eTier == tierSmoke }

// testsOfTier returns the tests a tier runs, sorted; "all" (or "") is
// every test.
func testsOfTier(tier string) ([]string, error) {
	var names []string
	switch tier {
	case "", "all":
		for n := range tiers {
			names = append(names, n)
		}
	case tierSmoke:
		names = slices.Clone(smokeTests)
	case tierAPI, tierCore, tierFull:
		for n, t := range tiers {
			if t == tier {
				names = append(names, n)
			}
		}
	default:
		return nil, fmt.Errorf("SNUG_E2E_TIER=%q: want one of %s, %s, %s, %s or all", tier, tierAPI, tierCore, tierSmoke, tierFull)
	}
	sort.Strings(names)
	return names, nil
}

// runPattern is the -run pattern of a tier's tests.
func runPattern(names []string) string {
	return "^(" + strings.Join(names, "|") + ")$"
}

// TestEveryTestHasATier parses this package's files: every top-level test
// has a tier, every listed test exists, and every smoke test is a core
// test. It runs without the e2e tag, with the lab module's unit tests.
func TestEveryTestHasATier(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if f == "tier_test.go" {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") || fd.Name.Name == "TestMain" {
				continue
			}
			found[fd.Name.Name] = true
			if _, ok := tiers[fd.Name.Name]; !ok {
				t.Errorf("%s (%s) has no tier: add it to tiers in tier_test.go", fd.Name.Name, f)
			}
		}
	}
	for n := range tiers {
		if !found[n] {
			t.Errorf("tiers lists %s, which is no test of this package", n)
		}
	}
	for _, n := range smokeTests {
		if tiers[n] != tierCore {
			t.Errorf("smoke test %s is in tier %q, want %q", n, tiers[n], tierCore)
		}
	}
	if len(found) < 40 {
		t.Errorf("found %d tests; the parse missed some (run from lab/e2e)", len(found))
	}
	for _, tier := range []string{tierAPI, tierCore, tierSmoke, tierFull, "all"} {
		names, err := testsOfTier(tier)
		if err != nil || len(names) == 0 {
			t.Errorf("tier %s: %v, %d tests", tier, err, len(names))
		}
	}
	if _, err := testsOfTier("nightly"); err == nil {
		t.Error("an unknown tier was taken")
	}
}
