package depcheck

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// UpdateEnv names the environment variable that makes Allowed rewrite the
// allow-list instead of comparing with it (make depaware).
const UpdateEnv = "SNUG_UPDATE_DEPS"

// target is the platform the allow-lists are of: the images' (static
// linux/amd64), so that the list is the same on every machine.
var target = []string{"GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0"}

// Linked returns what pkg links on the images' platform, sorted: every
// package but the standard library's internal and vendored ones (they
// follow the Go release, not our imports); and, as Deps does, every
// package linked with the packages it imports directly.
func Linked(t testing.TB, pkg string) (list []string, deps map[string][]string) {
	t.Helper()
	deps, std := goListDeps(t, pkg, target)
	for p := range deps {
		if !(std[p] && stdHidden(p)) {
			list = append(list, p)
		}
	}
	slices.Sort(list)
	return list, deps
}

func stdHidden(p string) bool {
	return p == "internal" || strings.HasPrefix(p, "internal/") || strings.Contains(p, "/internal/") ||
		strings.HasSuffix(p, "/internal") || strings.HasPrefix(p, "vendor/")
}

// Allowed fails t unless what pkg links is exactly the allow-list in the
// file golden: one import path per line, '#' comments. A package linked
// but not listed is named with its importers; one listed but no longer
// linked is named too, so that the list stays the truth. With
// SNUG_UPDATE_DEPS=1 in the environment it writes the file instead.
func Allowed(t testing.TB, pkg, golden string) {
	t.Helper()
	list, deps := Linked(t, pkg)
	header := fmt.Sprintf("# What %s links (go list -deps, %s; the standard\n# library's internal packages left out). A test fails when this differs:\n# a new dependency is reviewed here. Rewrite it with `make depaware`.\n",
		pkg, strings.Join(target, " "))
	if os.Getenv(UpdateEnv) == "1" {
		if err := os.WriteFile(golden, []byte(header+strings.Join(list, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d packages)", golden, len(list))
		return
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading the allow-list: %v (write it with %s=1 go test)", err, UpdateEnv)
	}
	allowed := map[string]bool{}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		allowed[line] = true
	}
	for _, p := range list {
		if !allowed[p] {
			t.Errorf("%s links %s, which is not on its allow-list %s (imported by %s); if it is meant, review it and run make depaware",
				pkg, p, golden, strings.Join(importers(deps, p), ", "))
		}
		delete(allowed, p)
	}
	for _, p := range slices.Sorted(maps.Keys(allowed)) {
		t.Errorf("%s no longer links %s: take it off %s (make depaware)", pkg, p, golden)
	}
}
