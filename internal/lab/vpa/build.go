package vpa

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

	"github.com/snug-dev/snug/internal/lab"
)

// builtStamp marks a complete build: a directory without it is rebuilt.
const builtStamp = ".complete"

// upstream is one Go module built from the module proxy: its main packages
// become binaries named after their last path element, and files are
// copied out of the module (manifests) next to them.
type upstream struct {
	// cacheName is the directory under the cache, e.g. "vpa".
	cacheName string
	module    string
	// version is the module version without the v, e.g. 1.8.1.
	version  string
	packages []string
	// files are paths inside the module, copied into Dir()/manifests.
	files []string
	// versionVars are the -X variables (package.name) set to v<version>.
	versionVars []string
}

func vpaModule(version string) upstream {
	const m = "k8s.io/autoscaler/vertical-pod-autoscaler"
	return upstream{
		cacheName: "vpa", module: m, version: version,
		packages: []string{m + "/pkg/recommender", m + "/pkg/updater", m + "/pkg/admission-controller"},
		files:    []string{crdManifest},
	}
}

func metricsServerModule(version string) upstream {
	const m = "sigs.k8s.io/metrics-server"
	return upstream{
		cacheName: "metrics-server", module: m, version: version,
		packages:    []string{m + "/cmd/metrics-server"},
		versionVars: []string{"k8s.io/client-go/pkg/version.gitVersion"},
	}
}

// crdManifest is VPA's CRD manifest inside its module.
const crdManifest = "deploy/vpa-v1-crd-gen.yaml"

// Dir is the version's directory under the cache.
func (u upstream) dir(cache string) string {
	return filepath.Join(cache, u.cacheName, "v"+u.version)
}

func (u upstream) binDir(cache string) string { return filepath.Join(u.dir(cache), "bin") }

func (u upstream) manifest(cache, file string) string {
	return filepath.Join(u.dir(cache), "manifests", filepath.Base(file))
}

// ensure builds u into its cache directory unless a complete build is
// there. The build runs in a throwaway module that requires only u.module,
// so the versions are the ones u's own go.mod asks for. Progress goes to
// log, the go command's output to build.log next to the binaries.
func (u upstream) ensure(ctx context.Context, cache string, log io.Writer) error {
	bin := u.binDir(cache)
	if _, err := os.Stat(filepath.Join(bin, builtStamp)); err == nil {
		return nil
	}
	what := fmt.Sprintf("%s v%s", u.module, u.version)
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Errorf("building %s: the go command is not on PATH", what)
	}
	src := filepath.Join(u.dir(cache), "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return fmt.Errorf("building %s: %w", what, err)
	}
	logPath := filepath.Join(u.dir(cache), "build.log")
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
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, logFile
		fmt.Fprintf(logFile, "$ go %s\n", strings.Join(args, " "))
		err := cmd.Run()
		return out.Bytes(), err
	}
	gomod := fmt.Sprintf("module snuglabbuild\n\ngo 1.26\n\nrequire %s v%s\n", u.module, u.version)
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(gomod), 0o644); err != nil {
		return fmt.Errorf("building %s: %w", what, err)
	}
	out, err := run("mod", "download", "-json", u.module+"@v"+u.version)
	if err != nil {
		return fmt.Errorf("downloading %s: %w (see %s)", what, err, logPath)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("downloading %s: no module directory in %q", what, out)
	}
	ldflags := "-s -w"
	for _, v := range u.versionVars {
		ldflags += fmt.Sprintf(" -X %s=v%s", v, u.version)
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return fmt.Errorf("building %s: %w", what, err)
	}
	args := append([]string{"build", "-trimpath", "-ldflags", ldflags, "-o", bin + "/"}, u.packages...)
	if _, err := run(args...); err != nil {
		return fmt.Errorf("building %s failed: %w; last lines of %s:\n%s", what, err, logPath, lab.Tail(logPath, 15))
	}
	for _, f := range u.files {
		data, err := os.ReadFile(filepath.Join(mod.Dir, f))
		if err != nil {
			return fmt.Errorf("copying %s from %s: %w", f, what, err)
		}
		dst := u.manifest(cache, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("copying %s from %s: %w", f, what, err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return fmt.Errorf("copying %s from %s: %w", f, what, err)
		}
	}
	fmt.Fprintf(log, "built %s in %.0fs\n", what, time.Since(start).Seconds())
	return os.WriteFile(filepath.Join(bin, builtStamp), []byte(u.version+"\n"), 0o644)
}
