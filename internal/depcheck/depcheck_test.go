package depcheck

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps the errors instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Error(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }

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
