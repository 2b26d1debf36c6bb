package depcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps the errors instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Error(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheckFindsAForbiddenImport checks a package that does link the
// forbidden one (this package links os/exec), so that a Check that cannot
// fail would fail here.
func TestCheckFindsAForbiddenImport(t *testing.T) {
	r := &recorder{TB: t}
	Check(r, "github.com/snug-dev/snug/internal/depcheck", Forbidden{Path: "os/exec", Why: "a test rule"})
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "links os/exec (a test rule), imported by github.com/snug-dev/snug/internal/depcheck") {
		t.Errorf("errors %q, want one naming os/exec and its importer", r.errs)
	}
	r = &recorder{TB: t}
	Check(r, "github.com/snug-dev/snug/internal/depcheck", Forbidden{Path: "os", Why: "exact"}, Forbidden{Path: "internal", Tree: true, Why: "tree"})
	if len(r.errs) < 2 {
		t.Errorf("errors %q, want os and packages under internal/", r.errs)
	}
}

// TestAllowedNamesWhatDiffers: a list that lacks a linked package, and one
// that names a package no longer linked, both fail, each naming the
// package; the list as written by the update passes.
func TestAllowedNamesWhatDiffers(t *testing.T) {
	const self = "github.com/snug-dev/snug/internal/depcheck"
	dir := t.TempDir()
	golden := filepath.Join(dir, "depaware.txt")
	t.Setenv(UpdateEnv, "1")
	Allowed(t, self, golden)
	t.Setenv(UpdateEnv, "")
	r := &recorder{TB: t}
	Allowed(r, self, golden)
	if len(r.errs) != 0 {
		t.Fatalf("the written list fails: %q", r.errs)
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), "\nos/exec\n", "\nexample.com/gone\n", 1)
	if edited == string(data) {
		t.Fatalf("os/exec is not on the written list:\n%s", data)
	}
	if err := os.WriteFile(golden, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	r = &recorder{TB: t}
	Allowed(r, self, golden)
	joined := strings.Join(r.errs, "\n")
	if len(r.errs) != 2 || !strings.Contains(joined, "links os/exec, which is not on its allow-list") ||
		!strings.Contains(joined, "imported by "+self) || !strings.Contains(joined, "no longer links example.com/gone") {
		t.Errorf("errors %q, want os/exec (with its importer) and example.com/gone named", r.errs)
	}
}
