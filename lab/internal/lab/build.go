package lab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// kubeBinaries are built from k8s.io/kubernetes for every lab version.
var kubeBinaries = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl", "kube-proxy"}

// BuiltStamp marks a complete build of the binaries present next to it: a
// cache without it is rebuilt whole (an interrupted build may have left
// anything behind). For Kubernetes, one with it gets only the binaries it
// lacks (a cache made before kube-proxy was in kubeBinaries gets
// kube-proxy alone).
const BuiltStamp = ".complete"

// missingBinaries lists what EnsureBinaries has to build into bin: every
// binary without a stamp, else those of kubeBinaries that are absent.
func missingBinaries(bin string) []string {
	if _, err := os.Stat(filepath.Join(bin, BuiltStamp)); err != nil {
		return kubeBinaries
	}
	var missing []string
	for _, name := range kubeBinaries {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			missing = append(missing, name)
		}
	}
	return missing
}

// EnsureBinaries builds what the lab runs from the Go module proxy into
// the cache, unless complete builds are there: the Kubernetes binaries of
// o.KubernetesVersion and etcd (EtcdVersion).
func EnsureBinaries(ctx context.Context, o *Options, log io.Writer) error {
	if err := ensureKubernetes(ctx, o, log); err != nil {
		return err
	}
	return etcdModule().Ensure(ctx, o.CacheDir, log)
}

// ensureKubernetes builds the Kubernetes binaries of o.KubernetesVersion
// into o.BinDir(), unless a complete build is cached; a complete cache
// that lacks some of them gets only those built. The build happens in a
// throwaway module under the cache, never in snug's own go.mod. Progress
// goes to log; the build's own output to a log file.
func ensureKubernetes(ctx context.Context, o *Options, log io.Writer) error {
	bin := o.BinDir()
	missing := missingBinaries(bin)
	if len(missing) == 0 {
		return nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Errorf("building Kubernetes %s: the go command is not on PATH", o.KubernetesVersion)
	}
	src := filepath.Join(filepath.Dir(bin), "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return fmt.Errorf("building Kubernetes: %w", err)
	}
	logPath := filepath.Join(filepath.Dir(bin), "build.log")
	// Appended to: an incremental build keeps the log of the first one.
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("building Kubernetes: %w", err)
	}
	defer logFile.Close()
	fmt.Fprintf(log, "building Kubernetes v%s (%s) from the Go module proxy (a few minutes the first time; log: %s)\n",
		o.KubernetesVersion, strings.Join(missing, ", "), logPath)

	run := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = src
		cmd.Env = BuildEnv()
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = logFile
		fmt.Fprintf(logFile, "$ go %s\n", strings.Join(args, " "))
		err := cmd.Run()
		return out.Bytes(), err
	}
	gomod := fmt.Sprintf("module snuglabbuild\n\ngo 1.26\n\nrequire k8s.io/kubernetes v%s\n", o.KubernetesVersion)
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(gomod), 0o644); err != nil {
		return fmt.Errorf("building Kubernetes: %w", err)
	}
	out, err := run("mod", "download", "-json", "k8s.io/kubernetes@v"+o.KubernetesVersion)
	if err != nil {
		return fmt.Errorf("downloading k8s.io/kubernetes v%s: %w (see %s)", o.KubernetesVersion, err, logPath)
	}
	var mod struct{ GoMod string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.GoMod == "" {
		return fmt.Errorf("downloading k8s.io/kubernetes v%s: no go.mod in %q", o.KubernetesVersion, out)
	}
	staging, err := stagingModules(mod.GoMod)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(gomod + "\nreplace (\n")
	for _, m := range staging {
		fmt.Fprintf(&b, "\t%s => %s v0.%s\n", m, m, strings.TrimPrefix(o.KubernetesVersion, "1."))
	}
	b.WriteString(")\n")
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("building Kubernetes: %w", err)
	}
	ldflags := "-s -w"
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ldflags += fmt.Sprintf(" -X %[1]s.gitVersion=v%[2]s -X %[1]s.gitMajor=1 -X %[1]s.gitMinor=%[3]s -X %[1]s.gitTreeState=clean", p, o.KubernetesVersion, o.minor())
	}
	var pkgs []string
	for _, name := range missing {
		pkgs = append(pkgs, "k8s.io/kubernetes/cmd/"+name)
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return fmt.Errorf("building Kubernetes: %w", err)
	}
	build := GoBuild{
		What: "Kubernetes v" + o.KubernetesVersion, Dir: src, Env: BuildEnv(),
		Args: append([]string{"-trimpath", "-ldflags", ldflags, "-o", bin + "/"}, pkgs...), Packages: pkgs,
		Log: logFile, Progress: log,
	}
	fmt.Fprintf(logFile, "$ go build -v %s\n", strings.Join(build.Args, " "))
	if err := build.Run(ctx); err != nil {
		return fmt.Errorf("building Kubernetes v%s failed: %w; last lines of %s:\n%s", o.KubernetesVersion, err, logPath, Tail(logPath, 15))
	}
	return os.WriteFile(filepath.Join(bin, BuiltStamp), []byte(o.KubernetesVersion+"\n"), 0o644)
}

// stagingModules lists the k8s.io modules that k8s.io/kubernetes's go.mod
// replaces with its ./staging tree; they are published under v0.<minor>.
func stagingModules(goModPath string) ([]string, error) {
	f, err := os.Open(goModPath)
	if err != nil {
		return nil, fmt.Errorf("reading kubernetes go.mod: %w", err)
	}
	defer f.Close()
	var mods []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[1] == "=>" && strings.HasPrefix(fields[2], "./staging/") {
			mods = append(mods, fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading kubernetes go.mod: %w", err)
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("reading kubernetes go.mod %s: no staging replacements found", goModPath)
	}
	return mods, nil
}

// Tail returns the last n lines of a file, for error messages; "" when it
// cannot be read.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return lastLines(string(data), n)
}
