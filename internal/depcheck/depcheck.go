// Package depcheck is for dependency tests (like tailscale's depaware.txt
// and deps_test.go): a test of a binary's main package lists what the
// package links, with `go list -deps`, and fails on any package that is not
// on the binary's checked-in allow-list (Allowed) or that a rule forbids
// outright (Check), naming who imports it. It runs the go tool, so it is
// for tests only.
package depcheck

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Forbidden is one rule: Path alone forbids exactly that package; Path
// with Tree also forbids every package under it.
type Forbidden struct {
	Path string
	Tree bool
	// Why is said when the rule is broken.
	Why string
}

func (f Forbidden) matches(pkg string) bool {
	return pkg == f.Path || f.Tree && strings.HasPrefix(pkg, f.Path+"/")
}

// goTool is the go command: the one on PATH, else the one of the
// toolchain that built the test.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// Deps returns every package pkg links (pkg included), each with the
// packages it imports directly. Test files do not count.
func Deps(t testing.TB, pkg string) map[string][]string {
	t.Helper()
	deps, _ := goListDeps(t, pkg, nil)
	return deps
}

// goListDeps runs `go list -deps` on pkg with env added to the
// environment, and returns every package linked with the packages it
// imports directly, and which of them are the standard library's.
func goListDeps(t testing.TB, pkg string, env []string) (deps map[string][]string, std map[string]bool) {
	t.Helper()
	cmd := exec.Command(goTool(), "list", "-deps", "-f", `{{.ImportPath}} {{.Standard}} {{join .Imports " "}}`, pkg)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	deps, std = map[string][]string{}, map[string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		deps[fields[0]] = fields[2:]
		std[fields[0]] = fields[1] == "true"
	}
	return deps, std
}

// Check fails t once per package in pkg's dependencies that a rule
// forbids, naming the rule, the package and the packages that import it.
func Check(t testing.TB, pkg string, rules ...Forbidden) {
	t.Helper()
	deps := Deps(t, pkg)
	var bad []string
	for dep := range deps {
		for _, r := range rules {
			if r.matches(dep) {
				bad = append(bad, fmt.Sprintf("%s links %s (%s), imported by %s", pkg, dep, r.Why, strings.Join(importers(deps, dep), ", ")))
				break
			}
		}
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// importers are the packages among deps that import dep directly.
func importers(deps map[string][]string, dep string) []string {
	var out []string
	for p, imports := range deps {
		if slices.Contains(imports, dep) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
