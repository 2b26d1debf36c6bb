package image

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// The lab's image names. The kubelet and containerd look them up verbatim.
const (
	BusyboxName  = "docker.io/library/busybox:1.36"
	PauseName    = "registry.k8s.io/pause:3.10"
	SnugLoadName = "snug.dev/snug-load:latest"
)

// pathEnv is the PATH every lab image sets, the one Docker images use.
const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// LabImages returns the lab's images: busybox (Cmd sh), the pod sandbox image
// (snug-load in pause mode, at /pause) and snug-load on busybox (Entrypoint
// /snug-load). busyboxPath is Debian's busybox-static binary; snugLoadPath a
// snug-load built with CGO_ENABLED=0. Both must be static, since the images
// have no C library.
func LabImages(busyboxPath, snugLoadPath string) ([]Image, error) {
	bb, err := BusyboxFiles(busyboxPath)
	if err != nil {
		return nil, err
	}
	load, err := os.ReadFile(snugLoadPath)
	if err != nil {
		return nil, fmt.Errorf("reading snug-load: %w", err)
	}
	if err := checkStatic(bytes.NewReader(load)); err != nil {
		if errors.Is(err, errDynamic) {
			return nil, fmt.Errorf("snug-load at %s is dynamically linked; build it with CGO_ENABLED=0", snugLoadPath)
		}
		return nil, fmt.Errorf("snug-load at %s: %w", snugLoadPath, err)
	}
	loadFile := File{Path: "/snug-load", Mode: 0o755, Data: load}
	return []Image{
		{
			Name:  BusyboxName,
			Files: bb,
			Env:   []string{pathEnv},
			Cmd:   []string{"sh"},
		},
		{
			// The sandbox runs snug-load as /pause, so that the host's
			// process list names it pause and a `pkill snug-load` aimed
			// at the workload cannot end every pod's sandbox.
			Name:       PauseName,
			Files:      append(baseFiles(), File{Path: "/pause", Mode: 0o755, Data: load}),
			Env:        []string{pathEnv},
			Entrypoint: []string{"/pause", "pause"},
		},
		{
			Name:       SnugLoadName,
			Files:      slices.Concat(bb, []File{loadFile}),
			Env:        []string{pathEnv},
			Entrypoint: []string{"/snug-load"},
		},
	}, nil
}

// BusyboxFiles returns a minimal root filesystem around the static busybox
// at busyboxPath: /bin/busybox, a /bin/<applet> symlink for each applet that
// `busybox --list` names, /tmp, /etc/passwd and /etc/group (root and
// nobody), and empty /proc, /sys, /dev and /root.
func BusyboxFiles(busyboxPath string) ([]File, error) {
	bin, err := os.ReadFile(busyboxPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("busybox not found at %s: install the Debian package busybox-static (apt-get install busybox-static)", busyboxPath)
	}
	if err != nil {
		return nil, fmt.Errorf("reading busybox: %w", err)
	}
	if err := checkStatic(bytes.NewReader(bin)); err != nil {
		return nil, fmt.Errorf("busybox at %s: %w; install the Debian package busybox-static, not busybox", busyboxPath, err)
	}
	out, err := exec.Command(busyboxPath, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("listing busybox applets: %w", err)
	}
	applets, err := parseApplets(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("listing busybox applets: %w", err)
	}
	return busyboxLayout(bin, applets), nil
}

// busyboxLayout is BusyboxFiles once the binary and its applets are known.
func busyboxLayout(bin []byte, applets []string) []File {
	files := append(baseFiles(), File{Path: "/bin/busybox", Mode: 0o755, Data: bin})
	for _, a := range applets {
		files = append(files, File{Path: "/bin/" + a, Link: "busybox"})
	}
	return files
}

// parseApplets reads `busybox --list` output: one applet name a line. It
// skips busybox itself and refuses names that are not plain file names.
func parseApplets(r io.Reader) ([]string, error) {
	var applets []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name := strings.TrimSpace(sc.Text())
		if name == "" || name == "busybox" || seen[name] {
			continue
		}
		if strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
			return nil, fmt.Errorf("bad applet name %q", name)
		}
		seen[name] = true
		applets = append(applets, name)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(applets) == 0 {
		return nil, errors.New("no applets listed")
	}
	return applets, nil
}

// baseFiles is the skeleton every lab image has: mount points runc would
// otherwise create, a world-writable /tmp and the root and nobody accounts.
func baseFiles() []File {
	return []File{
		{Path: "/dev", Mode: os.ModeDir | 0o755},
		{Path: "/proc", Mode: os.ModeDir | 0o555},
		{Path: "/sys", Mode: os.ModeDir | 0o555},
		{Path: "/root", Mode: os.ModeDir | 0o700},
		{Path: "/tmp", Mode: os.ModeDir | os.ModeSticky | 0o777},
		{Path: "/etc", Mode: os.ModeDir | 0o755},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(
			"root:x:0:0:root:/root:/bin/sh\n" +
				"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(
			"root:x:0:\n" +
				"nobody:x:65534:\n")},
	}
}

// errDynamic says an ELF file asks for a program interpreter (ld.so).
var errDynamic = errors.New("dynamically linked")

// checkStatic returns errDynamic if the ELF executable r has a PT_INTERP
// program header, and an error if r is not an ELF executable.
func checkStatic(r io.ReaderAt) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("not an ELF executable (type %v)", f.Type)
	}
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("built for %v, not x86-64", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errDynamic
		}
	}
	return nil
}
