package lab

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	for _, c := range []struct {
		built, total int
		elapsed      time.Duration
		finished     bool
		want         string
	}{
		{0, 2000, 5 * time.Second, false, "0/2000 packages, 5s"},
		{100, 2000, 30 * time.Second, false, "100/2000 packages, 30s"},
		{500, 2000, 100 * time.Second, false, "500/2000 packages, 1m40s, about 5m0s left"},
		{2100, 2000, time.Minute, false, "2000/2000 packages, 1m0s"},
		{12, 0, 3 * time.Second, false, "12 packages built, 3s"},
		{40, 2000, 9 * time.Second, true, "done in 9s (40 packages built, the rest from the build cache)"},
	} {
		if got := progressLine(c.built, c.total, c.elapsed, c.finished); got != c.want {
			t.Errorf("progressLine(%d, %d, %v, %v) = %q, want %q", c.built, c.total, c.elapsed, c.finished, got, c.want)
		}
	}
}

func TestBuildCounterCountsPackageLines(t *testing.T) {
	out := "internal/goarch\nk8s.io/apimachinery/pkg/util/sets\n# k8s.io/foo\n./x.go:3:2: undefined: y\n\nnote: module requires Go 1.27\n"
	var c buildCounter
	var log bytes.Buffer
	c.consume(strings.NewReader(out), &log)
	if c.count() != 2 {
		t.Errorf("counted %d package lines, want 2", c.count())
	}
	if log.String() != out {
		t.Errorf("log got %q, want the output unchanged", log.String())
	}
}

// TestGoBuildRun builds a two-package module with the real go command and
// a fresh build cache: the progress ends with the count of packages built.
func TestGoBuildRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":     "module example.com/hello\n\ngo 1.26\n",
		"main.go":    "package main\n\nimport \"example.com/hello/greet\"\n\nfunc main() { println(greet.Hello()) }\n",
		"greet/g.go": "package greet\n\nfunc Hello() string { return \"hello\" }\n",
	}
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log, progress bytes.Buffer
	b := GoBuild{
		What: "hello", Dir: dir, Env: append(os.Environ(), "GOWORK=off"),
		Args: []string{"-o", filepath.Join(dir, "hello"), "."}, Packages: []string{"."},
		Log: &log, Progress: &progress, Every: 10 * time.Millisecond,
	}
	if err := b.Run(context.Background()); err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "hello")); err != nil {
		t.Fatalf("no binary: %v", err)
	}
	lines := strings.Split(strings.TrimRight(progress.String(), "\n"), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if !strings.HasPrefix(last, "hello: done in ") {
		t.Errorf("last progress line %q, want hello: done in ...", last)
	}
	if !strings.Contains(log.String(), "example.com/hello/greet") {
		t.Errorf("the build log does not name the packages built:\n%q", log.String())
	}
	// A failing build returns its error.
	if err := os.WriteFile(filepath.Join(dir, "greet/g.go"), []byte("package greet\n\nfunc Hello() string { return y }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	progress.Reset()
	if err := b.Run(context.Background()); err == nil {
		t.Error("a build with an undefined name succeeded")
	}
	if !strings.Contains(progress.String(), "hello: failed after ") {
		t.Errorf("progress of a failed build %q, want it to say it failed", progress.String())
	}
}
