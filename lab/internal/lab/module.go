package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Module is one Go module of another project (etcd, VPA, metrics-server,
// helm, kwok) built from the Go module proxy into the lab's cache
// directory, in a throwaway module that requires only that module, so that
// snug's go.mod never sees it. A build is kept (marked complete) and reused
// until the cache is removed (BuiltStamp marks a complete build). Its main
// packages become binaries named after their last path element (the one
// before a major-version suffix: go.etcd.io/etcd/server/v3 becomes
// "server"), and files are copied out of the module (manifests) next to
// them.
type Module struct {
	// CacheName is the directory under the cache, e.g. "vpa".
	CacheName string
	// Path is the module path, e.g. helm.sh/helm/v3.
	Path string
	// Version is the module version without the v, e.g. 1.8.1.
	Version  string
	Packages []string
	// Files are paths inside the module, copied into Dir()/manifests.
	Files []string
	// VersionVars are the -X variables (package.name) set to v<Version>.
	VersionVars []string
	// Ldflags are further -X package.name=value flags.
	Ldflags []string
}

// Dir is the version's directory under the cache.
func (u Module) Dir(cache string) string {
	return filepath.Join(cache, u.CacheName, "v"+u.Version)
}

// BinDir holds the built binaries.
func (u Module) BinDir(cache string) string { return filepath.Join(u.Dir(cache), "bin") }

// File is where Ensure copied the module's file (a path inside it).
func (u Module) File(cache, file string) string {
	return filepath.Join(u.Dir(cache), "manifests", filepath.Base(file))
}

// Ensure builds u into its cache directory unless a complete build is
// there. The build runs in a throwaway module that requires only u.Path,
// so the versions are the ones u's own go.mod asks for. Progress goes to
// log, the go command's output to build.log next to the binaries.
func (u Module) Ensure(ctx context.Context, cache string, log io.Writer) error {
	bin := u.BinDir(cache)
	if _, err := os.Stat(filepath.Join(bin, BuiltStamp)); err == nil {
		return nil
	}
	what := fmt.Sprintf("%s v%s", u.Path, u.Version)
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Errorf("building %s: the go command is not on PATH", what)
	}
	src := filepath.Join(u.Dir(cache), "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return fmt.Errorf("building %s: %w", what, err)
	}
	logPath := filepath.Join(u.Dir(cache), "build.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("building %s: %w", what, err)
	}
	defer logFile.Close()
	fmt.Fprintf(log, "building %s from the Go module proxy (a few minutes the first time; log: %s)\n", what, logPath)
	start := time.Now()

	run := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "nice", append([]string{"go"}, args...)...)
		cmd.Dir = src
		cmd.Env = BuildEnv()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, logFile
		fmt.Fprintf(logFile, "$ go %s\n", strings.Join(args, " "))
		err := cmd.Run()
		return out.Bytes(), err
	}
	gomod := fmt.Sprintf("module snuglabbuild\n\ngo 1.26\n\nrequire %s v%s\n", u.Path, u.Version)
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(gomod), 0o644); err != nil {
		return fmt.Errorf("building %s: %w", what, err)
	}
	out, err := run("mod", "download", "-json", u.Path+"@v"+u.Version)
	if err != nil {
		return fmt.Errorf("downloading %s: %w (see %s)", what, err, logPath)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("downloading %s: no module directory in %q", what, out)
	}
	ldflags := "-s -w"
	for _, v := range u.VersionVars {
		ldflags += fmt.Sprintf(" -X %s=v%s", v, u.Version)
	}
	for _, x := range u.Ldflags {
		ldflags += " -X " + x
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return fmt.Errorf("building %s: %w", what, err)
	}
	build := GoBuild{
		What: what, Dir: src, Env: BuildEnv(),
		Args:     append([]string{"-trimpath", "-ldflags", ldflags, "-o", bin + "/"}, u.Packages...),
		Packages: u.Packages, Log: logFile, Progress: log,
	}
	fmt.Fprintf(logFile, "$ go build -v %s\n", strings.Join(build.Args, " "))
	if err := build.Run(ctx); err != nil {
		return fmt.Errorf("building %s failed: %w; last lines of %s:\n%s", what, err, logPath, Tail(logPath, 15))
	}
	for _, f := range u.Files {
		data, err := os.ReadFile(filepath.Join(mod.Dir, f))
		if err != nil {
			return fmt.Errorf("copying %s from %s: %w", f, what, err)
		}
		dst := u.File(cache, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("copying %s from %s: %w", f, what, err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return fmt.Errorf("copying %s from %s: %w", f, what, err)
		}
	}
	fmt.Fprintf(log, "built %s in %.0fs\n", what, time.Since(start).Seconds())
	return os.WriteFile(filepath.Join(bin, BuiltStamp), []byte(u.Version+"\n"), 0o644)
}
