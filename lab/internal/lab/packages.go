package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// requirement is one file the lab runs, and the Debian package that ships it.
type requirement struct {
	path, pkg string
}

var requirements = []requirement{
	{"/usr/bin/containerd", "containerd"},
	{"/usr/bin/containerd-shim-runc-v2", "containerd"},
	{"/usr/bin/ctr", "containerd"},
	{"/usr/sbin/runc", "runc"},
	{"/usr/lib/cni/bridge", "containernetworking-plugins"},
	{"/usr/lib/cni/host-local", "containernetworking-plugins"},
	{"/usr/lib/cni/loopback", "containernetworking-plugins"},
	{"/bin/busybox", "busybox-static"},
	{"/usr/sbin/ip", "iproute2"},
	{"/usr/sbin/iptables", "iptables"},
	{"/usr/bin/nsenter", "util-linux"},
	{"/usr/bin/docker-registry", "docker-registry"},
	// The lab's Prometheus (internal/lab/prom, started on demand).
	{"/usr/bin/prometheus", "prometheus"},
}

// missingPackages returns the Debian packages whose files are absent.
func missingPackages(reqs []requirement) []string {
	seen := map[string]bool{}
	for _, r := range reqs {
		if _, err := os.Stat(r.path); err != nil {
			seen[r.pkg] = true
		}
	}
	pkgs := make([]string, 0, len(seen))
	for p := range seen {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	return pkgs
}

// EnsurePackages installs the Debian packages the lab needs, if any is
// missing. With install false it only reports what is missing.
func EnsurePackages(ctx context.Context, install bool, log io.Writer) error {
	return ensureRequirements(ctx, requirements, install, log)
}

// ensureRequirements installs the packages of reqs whose files are absent.
func ensureRequirements(ctx context.Context, reqs []requirement, install bool, log io.Writer) error {
	missing := missingPackages(reqs)
	if len(missing) == 0 {
		return nil
	}
	if !install {
		return fmt.Errorf("missing Debian packages: %s (apt-get install %s)", strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	fmt.Fprintf(log, "installing Debian packages: %s\n", strings.Join(missing, " "))
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{
		{"update", "-qq"},
		append([]string{"install", "-y", "-qq", "--no-install-recommends"}, missing...),
	} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w\n%s", args[0], err, lastLines(string(out), 10))
		}
	}
	if still := missingPackages(reqs); len(still) > 0 {
		return fmt.Errorf("still missing after apt-get install: %s", strings.Join(still, ", "))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
