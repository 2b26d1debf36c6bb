package lab

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// The cgroup-v2 node is a User-Mode Linux guest: a Linux kernel that runs
// as an ordinary process (this machine's KVM cannot run a stock kernel),
// with a Debian 12 root filesystem made by debootstrap. Both are built once
// and cached under CacheDir/uml; what changes from one start to the next
// (addresses, certificates, the Kubernetes binaries) reaches the guest
// through a hostfs share (node2.go).

// kernelSource is Debian's linux-source-6.1, the source of the UML kernel.
const kernelSource = "/usr/src/linux-source-6.1.tar.xz"

// kernelFragment is merged into ARCH=um's defconfig: what the node needs
// that Debian's own UML kernel (user-mode-linux) leaves out is PSI.
//
//go:embed uml/kernel.config
var kernelFragment string

// xstatePatch lets the guest run on a host whose XSAVE area is larger
// than the 2696 bytes (AVX-512) UML 6.1 assumes: on a host with AMX
// (11008 bytes) the host's PTRACE_SETREGSET refuses UML's buffer with
// EFAULT and init dies at once ("ptrace set fp regs failed, errno = 14");
// Debian's own UML kernel does the same on this machine. The patch sizes
// the buffer for 16 KiB and reads the host's size from CPUID; the
// fragment gives the kernel stacks, which hold a copy of that buffer,
// room for it (CONFIG_KERNEL_STACK_ORDER).
//
//go:embed uml/xstate.patch
var xstatePatch string

// vmallocPatch keeps the guest from stalling: Linux frees a BPF program
// (runc attaches one per container, cgroup v2's device filter) with
// VM_FLUSH_RESET_PERMS, whose flush spans from the freed pages' direct
// map to the vmalloc area; UML's flush_tlb_kernel_range walks that range
// and remaps every changed page with a host munmap and mmap. The guest's
// kernel was caught there (gdb, state/kallsyms) in each of the hangs it
// had while pods started (2026-12-06, 1.36.3 and 1.37.2): kworker,
// bpf_prog_free_deferred, vfree, __purge_vmap_area_lazy,
// flush_tlb_kernel_range, munmap. UML cannot change a mapping's
// permissions (no ARCH_HAS_SET_MEMORY or ARCH_HAS_SET_DIRECT_MAP), so
// there is nothing to reset: the patch returns before that flush where
// neither is there, and the area is purged lazily as any vfree's.
//
//go:embed uml/vmalloc.patch
var vmallocPatch string

// kernelPatches are applied to the source in this order.
var kernelPatches = []struct{ name, text string }{
	{"xstate.patch", xstatePatch},
	{"vmalloc.patch", vmallocPatch},
}

// v2Requirements are the Debian packages the cgroup-v2 node needs on this
// machine: the kernel's source and tools to build it, debootstrap and
// mkfs.ext4 for its root filesystem.
var v2Requirements = []requirement{
	{kernelSource, "linux-source-6.1"},
	{"/usr/bin/make", "make"},
	{"/usr/bin/patch", "patch"},
	{"/usr/bin/gcc", "gcc"},
	{"/usr/bin/flex", "flex"},
	{"/usr/bin/bison", "bison"},
	{"/usr/bin/bc", "bc"},
	{"/usr/bin/xz", "xz-utils"},
	{"/usr/bin/perl", "perl"},
	{"/usr/include/libelf.h", "libelf-dev"},
	{"/usr/sbin/debootstrap", "debootstrap"},
	{"/usr/sbin/mkfs.ext4", "e2fsprogs"},
}

// guestPackages are installed into the guest's root filesystem beside
// debootstrap's minbase: systemd as init (and D-Bus, which runc's systemd
// cgroup driver talks to), the container runtime, CNI plugins and what
// kube-proxy and the kubelet call.
var guestPackages = []string{
	"systemd-sysv", "dbus", "iproute2", "iptables", "conntrack", "util-linux", "mount", "procps",
	"containerd", "runc", "containernetworking-plugins",
}

// guestRelease is the Debian release debootstrap installs: this machine's.
const guestRelease = "bookworm"

func (o *Options) umlDir(elem ...string) string {
	return filepath.Join(append([]string{o.CacheDir, "uml"}, elem...)...)
}

func shortHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		io.WriteString(h, p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// KernelPath is the cached UML kernel for the current fragment; a change to
// the fragment builds a new one.
func (o *Options) KernelPath() string {
	parts := []string{kernelFragment}
	for _, p := range kernelPatches {
		parts = append(parts, p.text)
	}
	return o.umlDir("kernel-6.1-"+shortHash(parts...), "linux")
}

// RootfsPath is the cached root filesystem image for the current package
// list and guest files.
func (o *Options) RootfsPath() string {
	parts := append([]string{guestRelease}, guestPackages...)
	for _, f := range guestFiles() {
		parts = append(parts, f.path, f.content)
	}
	return o.umlDir("rootfs-" + guestRelease + "-" + shortHash(parts...) + ".img")
}

// EnsureV2Node makes sure the cgroup-v2 node's packages, kernel and root
// filesystem are there, building what is missing (the kernel takes minutes
// the first time, the root filesystem about a minute).
func EnsureV2Node(ctx context.Context, o *Options, log io.Writer) error {
	if err := ensureRequirements(ctx, v2Requirements, o.InstallPackages, log); err != nil {
		return err
	}
	if err := ensureKernel(ctx, o, log); err != nil {
		return err
	}
	return ensureRootfs(ctx, o, log)
}

// ensureKernel builds the UML kernel from Debian's source with
// kernelFragment merged into the defconfig, unless it is cached. Every
// option of the fragment must come out as asked (a dependency Kconfig
// refuses would otherwise pass unnoticed).
func ensureKernel(ctx context.Context, o *Options, log io.Writer) error {
	out := o.KernelPath()
	if _, err := os.Stat(out); err == nil {
		return nil
	}
	dir := filepath.Dir(out)
	build := filepath.Join(dir, "build")
	logPath := filepath.Join(dir, "build.log")
	lf, err := startBuild(build, logPath)
	if err != nil {
		return err
	}
	defer lf.Close()
	start := time.Now()
	fmt.Fprintf(log, "building the cgroup-v2 node's UML kernel from %s (several minutes the first time; log: %s)\n", kernelSource, logPath)
	fragment := filepath.Join(build, "snug.config")
	if err := os.WriteFile(fragment, []byte(kernelFragment), 0o644); err != nil {
		return err
	}
	src := filepath.Join(build, "linux-source-6.1")
	jobs := fmt.Sprintf("-j%d", runtime.NumCPU())
	type step struct {
		dir  string
		argv []string
	}
	steps := []step{{build, []string{"tar", "xf", kernelSource}}}
	for _, p := range kernelPatches {
		path := filepath.Join(build, p.name)
		if err := os.WriteFile(path, []byte(p.text), 0o644); err != nil {
			return err
		}
		steps = append(steps, step{src, []string{"patch", "-p1", "-i", path}})
	}
	steps = append(steps, []step{
		{src, []string{"make", "ARCH=um", "defconfig"}},
		{src, []string{"scripts/kconfig/merge_config.sh", "-m", ".config", fragment}},
		{src, []string{"make", "ARCH=um", "olddefconfig"}},
	}...)
	for _, s := range steps {
		if err := runLogged(ctx, lf, s.dir, s.argv...); err != nil {
			return fmt.Errorf("building the UML kernel: %w; last lines of %s:\n%s", err, logPath, Tail(logPath, 15))
		}
	}
	cfg, err := os.ReadFile(filepath.Join(src, ".config"))
	if err != nil {
		return err
	}
	if bad := unmetOptions(kernelFragment, string(cfg)); len(bad) > 0 {
		return fmt.Errorf("building the UML kernel: Kconfig did not take %s (see %s)", strings.Join(bad, ", "), logPath)
	}
	fmt.Fprintf(log, "  compiling (make ARCH=um %s linux)\n", jobs)
	if err := runLogged(ctx, lf, src, "nice", "-n", "10", "make", "ARCH=um", jobs, "linux"); err != nil {
		return fmt.Errorf("building the UML kernel: %w; last lines of %s:\n%s", err, logPath, Tail(logPath, 15))
	}
	if err := runLogged(ctx, lf, src, "strip", "-o", out+".tmp", "linux"); err != nil {
		return fmt.Errorf("stripping the UML kernel: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config"), cfg, 0o644); err != nil {
		return err
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		return err
	}
	fmt.Fprintf(log, "  UML kernel built in %s: %s\n", time.Since(start).Round(time.Second), out)
	removeStale(o.umlDir("kernel-6.1-*"), dir)
	return os.RemoveAll(build)
}

// startBuild empties work, a build's scratch directory (what an
// interrupted build left goes), and creates the build's log at logPath.
func startBuild(work, logPath string) (*os.File, error) {
	if err := os.RemoveAll(work); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	return os.Create(logPath)
}

// removeStale deletes what pattern matches in the cache but keep: kernels
// and root filesystems of an earlier fragment or package list.
func removeStale(pattern, keep string) {
	old, _ := filepath.Glob(pattern)
	for _, p := range old {
		if p != keep {
			_ = os.RemoveAll(p)
		}
	}
}

// unmetOptions lists the CONFIG_X=y and CONFIG_X=n lines of fragment that
// config does not have as asked.
func unmetOptions(fragment, config string) []string {
	have := map[string]string{}
	for _, line := range strings.Split(config, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "CONFIG_") {
			have[k] = v
		}
	}
	var bad []string
	for _, line := range strings.Split(fragment, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || !strings.HasPrefix(k, "CONFIG_") {
			continue
		}
		got, set := have[k]
		if (v == "n" && set && got != "n") || (v != "n" && got != v) {
			bad = append(bad, k+"="+v)
		}
	}
	sort.Strings(bad)
	return bad
}

// guestFile is a file written into the root filesystem before the image
// is made.
type guestFile struct {
	path, content string
	mode          os.FileMode
}

// guestFiles: the unit that mounts the host's share and runs the boot
// script the lab writes there for each start, an fstab for the UML block
// device, and units masked that a node does not need (consoles, timers).
func guestFiles() []guestFile {
	files := []guestFile{
		{"/etc/fstab", "/dev/ubda / ext4 rw,noatime 0 1\n", 0o644},
		{"/etc/hostname", "snug-lab-node\n", 0o644},
		{"/etc/resolv.conf", "", 0o644},
		{"/etc/systemd/system/snug-node.service", `[Unit]
Description=snug lab node: configuration and services from the host's share
After=local-fs.target dbus.service
Wants=dbus.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/snug-node

[Install]
WantedBy=multi-user.target
`, 0o644},
		{"/usr/local/sbin/snug-node", `#!/bin/sh
# Mounts the host directory named by snug.share= on the kernel command line
# at /snug (hostfs) and runs the boot script the lab wrote there.
set -eu
share=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^snug\.share=//p')
[ -n "$share" ] || { echo "snug-node: no snug.share= on the kernel command line" >&2; exit 1; }
mkdir -p /snug
mountpoint -q /snug || mount -t hostfs -o "$share" none /snug
exec /bin/sh /snug/boot.sh
`, 0o755},
		{"/etc/systemd/system/multi-user.target.wants/snug-node.service", "@/etc/systemd/system/snug-node.service", 0},
		// containerd starts from the boot script, with the lab's config.
		{"/etc/systemd/system/multi-user.target.wants/containerd.service", "-", 0},
	}
	for _, u := range []string{"getty@tty1.service", "console-getty.service", "serial-getty@ttyS0.service",
		"apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "fstrim.timer", "systemd-tmpfiles-clean.timer",
		"dpkg-db-backup.timer", "systemd-networkd-wait-online.service"} {
		files = append(files, guestFile{"/etc/systemd/system/" + u, "@/dev/null", 0})
	}
	return files
}

// writeGuestFiles writes files into root: content "@target" makes a
// symlink to target, "-" removes the path.
func writeGuestFiles(root string, files []guestFile) error {
	for _, f := range files {
		p := filepath.Join(root, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		_ = os.Remove(p)
		switch {
		case f.content == "-":
			continue
		case strings.HasPrefix(f.content, "@"):
			if err := os.Symlink(f.content[1:], p); err != nil {
				return err
			}
		default:
			if err := os.WriteFile(p, []byte(f.content), f.mode); err != nil {
				return err
			}
			if err := os.Chmod(p, f.mode); err != nil {
				return err
			}
		}
	}
	return nil
}

// rootfsSize is the image's size; the file is sparse, and the guest writes
// to a copy-on-write file beside the lab, never to the cached image.
const rootfsSize = "8G"

// ensureRootfs makes the guest's root filesystem image with debootstrap
// from this machine's Debian mirror, unless it is cached.
func ensureRootfs(ctx context.Context, o *Options, log io.Writer) error {
	out := o.RootfsPath()
	if _, err := os.Stat(out); err == nil {
		return nil
	}
	mirror, err := debianMirror()
	if err != nil {
		return err
	}
	dir := o.umlDir()
	tree := filepath.Join(dir, "rootfs-build")
	logPath := filepath.Join(dir, "rootfs.log")
	lf, err := startBuild(tree, logPath)
	if err != nil {
		return err
	}
	defer lf.Close()
	start := time.Now()
	fmt.Fprintf(log, "making the cgroup-v2 node's root filesystem (debootstrap %s; log: %s)\n", guestRelease, logPath)
	if err := runLogged(ctx, lf, dir, "debootstrap", "--variant=minbase", "--include="+strings.Join(guestPackages, ","),
		guestRelease, tree, mirror); err != nil {
		return fmt.Errorf("debootstrap: %w; last lines of %s:\n%s", err, logPath, Tail(logPath, 15))
	}
	if err := writeGuestFiles(tree, guestFiles()); err != nil {
		return fmt.Errorf("writing the guest's files: %w", err)
	}
	// The apt lists and the package cache are of no use in the guest.
	for _, d := range []string{"var/cache/apt/archives", "var/lib/apt/lists"} {
		entries, _ := os.ReadDir(filepath.Join(tree, d))
		for _, e := range entries {
			if !e.IsDir() {
				_ = os.Remove(filepath.Join(tree, d, e.Name()))
			}
		}
	}
	if err := runLogged(ctx, lf, dir, "mkfs.ext4", "-q", "-F", "-L", "snug-node", "-d", tree, out+".tmp", rootfsSize); err != nil {
		return fmt.Errorf("mkfs.ext4: %w; last lines of %s:\n%s", err, logPath, Tail(logPath, 15))
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		return err
	}
	fmt.Fprintf(log, "  root filesystem made in %s: %s\n", time.Since(start).Round(time.Second), out)
	removeStale(o.umlDir("rootfs-*.img"), out)
	return os.RemoveAll(tree)
}

// debianMirror is the first Debian archive this machine's apt sources
// name for the guest's release (deb822 .sources files or sources.list).
func debianMirror() (string, error) {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil {
			if m := mirrorFromDeb822(string(data), guestRelease); m != "" {
				return m, nil
			}
		}
	}
	lists, _ := filepath.Glob("/etc/apt/sources.list.d/*.list")
	for _, f := range append([]string{"/etc/apt/sources.list"}, lists...) {
		data, err := os.ReadFile(f)
		if err == nil {
			if m := mirrorFromList(string(data), guestRelease); m != "" {
				return m, nil
			}
		}
	}
	return "", fmt.Errorf("no apt source on this machine serves Debian %s main (looked in /etc/apt)", guestRelease)
}

// mirrorFromDeb822 returns the first URI of a stanza of type deb whose
// suites include suite and whose components include main.
func mirrorFromDeb822(data, suite string) string {
	for _, stanza := range strings.Split(data, "\n\n") {
		fields := map[string][]string{}
		sc := bufio.NewScanner(strings.NewReader(stanza))
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, " ") {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.Fields(v)
			}
		}
		if enabled := fields["enabled"]; len(enabled) > 0 && enabled[0] == "no" {
			continue
		}
		if contains(fields["types"], "deb") && contains(fields["suites"], suite) && contains(fields["components"], "main") && len(fields["uris"]) > 0 {
			return fields["uris"][0]
		}
	}
	return ""
}

// mirrorFromList does the same for one-line "deb URI suite components"
// entries (options in brackets allowed).
func mirrorFromList(data, suite string) string {
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != "deb" {
			continue
		}
		rest := f[1:]
		if strings.HasPrefix(rest[0], "[") {
			for len(rest) > 0 && !strings.HasSuffix(rest[0], "]") {
				rest = rest[1:]
			}
			if len(rest) > 0 {
				rest = rest[1:]
			}
		}
		if len(rest) >= 3 && rest[1] == suite && contains(rest[2:], "main") {
			return rest[0]
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// runLogged runs argv in dir with its output appended to lf.
func runLogged(ctx context.Context, lf io.Writer, dir string, argv ...string) error {
	fmt.Fprintf(lf, "$ %s\n", strings.Join(argv, " "))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return nil
}
