package loadgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReadControl(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(pod string) string {
		t.Helper()
		f, err := readControl(dir, pod)
		if err != nil {
			t.Fatalf("readControl(%q): %v", pod, err)
		}
		return f.name + ":" + string(f.data)
	}
	if got := read("p1"); got != ":" {
		t.Errorf("empty dir: %q", got)
	}
	if f, err := readControl(filepath.Join(dir, "missing"), "p1"); err != nil || f.name != "" {
		t.Errorf("missing dir: %+v, %v", f, err)
	}
	write("all", "cpu=1")
	write("p2", "cpu=2")
	tests := []struct{ pod, want string }{
		{"p1", "all:cpu=1"},
		{"p2", "p2:cpu=2"},
		{"", "all:cpu=1"},
		{"../p2", "all:cpu=1"},
		{"all", "all:cpu=1"},
	}
	for _, tt := range tests {
		if got := read(tt.pod); got != tt.want {
			t.Errorf("pod %q: got %q, want %q", tt.pod, got, tt.want)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "p3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := readControl(dir, "p3"); err == nil || !strings.Contains(err.Error(), "reading control file") {
		t.Errorf("directory as control file: %v", err)
	}
}

func TestControlWatcher(t *testing.T) {
	t0 := time.Unix(1000, 0)
	t1 := t0.Add(time.Second)
	file := func(name string, mod time.Time, data string) controlFile {
		return controlFile{name: name, modTime: mod, data: []byte(data)}
	}
	type step struct {
		read    controlFile
		want    string // the targets applied on top of cpu=0 memory=0, or "" for none
		wantErr string
	}
	steps := []step{
		{controlFile{}, "", ""},
		{file("all", t0, "cpu=30"), "", ""},   // half-written: not yet stable
		{file("all", t0, "cpu=300m"), "", ""}, // changed since last read
		{file("all", t0, "cpu=300m"), "cpu=300m memory=0", ""},
		{file("all", t0, "cpu=300m"), "", ""}, // already applied
		{controlFile{}, "", ""},               // removed: targets stay
		{file("all", t0, "cpu=300m"), "", ""}, // back, but it is what was applied
		{file("all", t0, "cpu=300m"), "", ""},
		{file("all", t1, "cpu=300m"), "", ""}, // rewritten with the same content
		{file("all", t1, "cpu=300m"), "cpu=300m memory=0", ""},
		{file("p1", t1, "memory=1Mi"), "", ""}, // the pod's own file appears
		{file("p1", t1, "memory=1Mi"), "cpu=0 memory=1Mi", ""},
		{file("p1", t0, "cpu=x"), "", ""},
		{file("p1", t0, "cpu=x"), "", `control file p1: parsing cpu "x"`},
		{file("p1", t0, "cpu=x"), "", ""}, // reported once
		{file("p1", t1, "# nothing"), "", ""},
		{file("p1", t1, "# nothing"), "", ""}, // empty update: nothing to apply
	}
	var w controlWatcher
	for i, s := range steps {
		u, ok, err := w.observe(s.read)
		if s.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), s.wantErr) {
				t.Fatalf("step %d: error %v, want %q", i, err, s.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got := ""
		if ok {
			got = u.Apply(Targets{}).String()
		}
		if d := cmp.Diff(s.want, got); d != "" {
			t.Errorf("step %d (%s %q): (-want +got):\n%s", i, s.read.name, s.read.data, d)
		}
	}
}
