package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseApplets(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{"plain", "[\n[[\nash\nbusybox\nsh\n", []string{"[", "[[", "ash", "sh"}, false},
		{"blank lines and dupes", "\nls\n\n  ls \ncat\n", []string{"ls", "cat"}, false},
		{"slash", "sh\n../evil\n", nil, true},
		{"dotdot", "..\n", nil, true},
		{"empty", "\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseApplets(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseApplets() error = %v, wantErr %v", err, tt.wantErr)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("parseApplets() (-want +got):\n%s", d)
			}
		})
	}
}

func TestBusyboxLayout(t *testing.T) {
	img := Image{Name: BusyboxName, Files: busyboxLayout([]byte("ELF"), []string{"sh", "ls"})}
	got := inspect(t, mustBuild(t, img), epoch).entries
	want := []entry{
		{"bin/", tar.TypeDir, 0o755, "", ""},
		{"bin/busybox", tar.TypeReg, 0o755, "", "ELF"},
		{"bin/ls", tar.TypeSymlink, 0o777, "busybox", ""},
		{"bin/sh", tar.TypeSymlink, 0o777, "busybox", ""},
		{"dev/", tar.TypeDir, 0o755, "", ""},
		{"etc/", tar.TypeDir, 0o755, "", ""},
		{"etc/group", tar.TypeReg, 0o644, "", "root:x:0:\nnobody:x:65534:\n"},
		{"etc/passwd", tar.TypeReg, 0o644, "", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"},
		{"proc/", tar.TypeDir, 0o555, "", ""},
		{"root/", tar.TypeDir, 0o700, "", ""},
		{"sys/", tar.TypeDir, 0o555, "", ""},
		{"tmp/", tar.TypeDir, 0o1777, "", ""},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("layer (-want +got):\n%s", d)
	}
}

func TestBusyboxFilesMissing(t *testing.T) {
	_, err := BusyboxFiles(filepath.Join(t.TempDir(), "busybox"))
	if err == nil || !strings.Contains(err.Error(), "busybox-static") {
		t.Errorf("BusyboxFiles() error = %v, want one naming busybox-static", err)
	}
}

// staticBusybox returns Debian's busybox-static binary, or skips.
func staticBusybox(t *testing.T) string {
	t.Helper()
	const p = "/bin/busybox"
	f, err := os.Open(p)
	if err != nil {
		t.Skipf("no %s (apt-get install busybox-static)", p)
	}
	defer f.Close()
	if err := checkStatic(f); err != nil {
		t.Skipf("%s: %v", p, err)
	}
	return p
}

func TestBusyboxFiles(t *testing.T) {
	files, err := BusyboxFiles(staticBusybox(t))
	if err != nil {
		t.Fatalf("BusyboxFiles: %v", err)
	}
	links := map[string]string{}
	for _, f := range files {
		if f.Link != "" {
			links[f.Path] = f.Link
		}
	}
	for _, p := range []string{"/bin/sh", "/bin/ls", "/bin/sleep", "/bin/cat"} {
		if links[p] != "busybox" {
			t.Errorf("%s -> %q, want busybox", p, links[p])
		}
	}
	if len(links) < 100 {
		t.Errorf("only %d applet links", len(links))
	}
}

func TestCheckStatic(t *testing.T) {
	if err := checkStatic(bytes.NewReader([]byte("#!/bin/sh\n"))); err == nil || errors.Is(err, errDynamic) {
		t.Errorf("checkStatic(script) = %v, want not-ELF error", err)
	}
	if err := checkStatic(bytes.NewReader(mustRead(t, staticBusybox(t)))); err != nil {
		t.Errorf("checkStatic(busybox) = %v", err)
	}
	for _, p := range []string{"/bin/ls", "/usr/bin/env"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if err := checkStatic(bytes.NewReader(b)); !errors.Is(err, errDynamic) {
			t.Errorf("checkStatic(%s) = %v, want errDynamic", p, err)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLabImagesRejectsDynamic(t *testing.T) {
	bb := staticBusybox(t)
	if _, err := os.Stat("/bin/ls"); err != nil {
		t.Skip("no dynamic /bin/ls to try")
	}
	_, err := LabImages(bb, "/bin/ls")
	want := "snug-load at /bin/ls is dynamically linked; build it with CGO_ENABLED=0"
	if err == nil || err.Error() != want {
		t.Errorf("LabImages() error = %v, want %q", err, want)
	}
}

func TestLabImages(t *testing.T) {
	bb := staticBusybox(t)
	// Any static x86-64 executable stands in for snug-load here.
	imgs, err := LabImages(bb, bb)
	if err != nil {
		t.Fatalf("LabImages: %v", err)
	}
	type summary struct {
		Name                   string
		Entrypoint, Cmd        []string
		HasBusybox, HasLoad    bool
		HasShell, HasTmp       bool
		HasPasswd, SandboxOnly bool
	}
	var got []summary
	for _, desc := range imgs {
		img := inspect(t, mustBuild(t, desc), epoch)
		s := summary{
			Name:       desc.Name,
			Entrypoint: img.config.Config.Entrypoint,
			Cmd:        img.config.Config.Cmd,
		}
		for _, e := range img.entries {
			switch e.Name {
			case "bin/busybox":
				s.HasBusybox = true
			case "snug-load", "pause":
				s.HasLoad = e.Mode == 0o755 && e.Type == tar.TypeReg
			case "bin/sh":
				s.HasShell = true
			case "tmp/":
				s.HasTmp = e.Mode == 0o1777
			case "etc/passwd":
				s.HasPasswd = true
			}
		}
		s.SandboxOnly = len(img.entries) < 12
		got = append(got, s)
	}
	want := []summary{
		{BusyboxName, nil, []string{"sh"}, true, false, true, true, true, false},
		{PauseName, []string{"/pause", "pause"}, nil, false, true, false, true, true, true},
		{SnugLoadName, []string{"/snug-load"}, nil, true, true, true, true, true, false},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("lab images (-want +got):\n%s", d)
	}
}
