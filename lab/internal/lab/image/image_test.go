package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is one layer tar entry, in a comparable form.
type entry struct {
	Name string
	Type byte
	Mode int64
	Link string
	Data string
}

// built is an image taken apart: its config and its layer's entries.
type built struct {
	digest  v1.Hash
	config  *v1.ConfigFile
	entries []entry
}

// inspect builds img and reads it back, checking media types, that the
// config's diff_id is the layer's, and that every entry is root's and
// modified at mtime.
func inspect(t *testing.T, img v1.Image, mtime time.Time) built {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
		t.Fatalf("manifest %+v, want an OCI manifest with one gzip layer", m)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %v, %d", err, len(layers))
	}
	diffID, err := layers[0].DiffID()
	if err != nil || !cmp.Equal(cfg.RootFS.DiffIDs, []v1.Hash{diffID}) {
		t.Errorf("rootfs %+v, want diff_ids [%v] (%v)", cfg.RootFS, diffID, err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatalf("layer: %v", err)
	}
	defer rc.Close()
	var out []entry
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading layer: %v", err)
		}
		if hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(mtime) {
			t.Errorf("%s: uid %d gid %d mtime %v, want 0 0 %v", hdr.Name, hdr.Uid, hdr.Gid, hdr.ModTime, mtime)
		}
		b, _ := io.ReadAll(tr)
		out = append(out, entry{hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Linkname, string(b)})
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return built{d, cfg, out}
}

func mustBuild(t *testing.T, img Image) v1.Image {
	t.Helper()
	b, err := Build(img)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

func testImage() Image {
	return Image{
		Name: "docker.io/library/test:1.0",
		Files: []File{
			{Path: "/bin/tool", Mode: 0o755, Data: []byte("#!/bin/sh\n")},
			{Path: "/bin/alias", Link: "tool"},
			{Path: "/tmp", Mode: os.ModeDir | os.ModeSticky | 0o777},
			{Path: "/etc/deep/conf", Mode: 0o600, Data: []byte("x=1")},
			{Path: "/usr/bin/su", Mode: os.ModeSetuid | 0o755},
		},
		Entrypoint: []string{"/bin/tool"},
		Cmd:        []string{"-v"},
		Env:        []string{"PATH=/bin"},
		WorkingDir: "/tmp",
		User:       "65532:65532",
		Labels:     map[string]string{"org.opencontainers.image.title": "test"},
		Created:    time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
	}
}

func TestBuild(t *testing.T) {
	img := testImage()
	got := inspect(t, mustBuild(t, img), img.Created)
	if got.config.Architecture != "amd64" || got.config.OS != "linux" || !got.config.Created.Time.Equal(img.Created) {
		t.Errorf("config platform %s/%s created %v", got.config.OS, got.config.Architecture, got.config.Created)
	}
	wantCfg := v1.Config{Env: img.Env, Entrypoint: img.Entrypoint, Cmd: img.Cmd, WorkingDir: "/tmp",
		User: "65532:65532", Labels: img.Labels}
	if d := cmp.Diff(wantCfg, got.config.Config); d != "" {
		t.Errorf("config (-want +got):\n%s", d)
	}
	if len(got.config.History) != 1 || !got.config.History[0].Created.Time.Equal(img.Created) {
		t.Errorf("history %+v, want one entry created %v", got.config.History, img.Created)
	}
	want := []entry{
		{"bin/", tar.TypeDir, 0o755, "", ""},
		{"bin/alias", tar.TypeSymlink, 0o777, "tool", ""},
		{"bin/tool", tar.TypeReg, 0o755, "", "#!/bin/sh\n"},
		{"etc/", tar.TypeDir, 0o755, "", ""},
		{"etc/deep/", tar.TypeDir, 0o755, "", ""},
		{"etc/deep/conf", tar.TypeReg, 0o600, "", "x=1"},
		{"tmp/", tar.TypeDir, 0o1777, "", ""},
		{"usr/", tar.TypeDir, 0o755, "", ""},
		{"usr/bin/", tar.TypeDir, 0o755, "", ""},
		{"usr/bin/su", tar.TypeReg, 0o4755, "", ""},
	}
	if d := cmp.Diff(want, got.entries); d != "" {
		t.Errorf("layer entries (-want +got):\n%s", d)
	}
}

func TestBuildZeroCreatedIsEpoch(t *testing.T) {
	img := testImage()
	img.Created = time.Time{}
	got := inspect(t, mustBuild(t, img), epoch)
	if !got.config.Created.Time.Equal(epoch) {
		t.Errorf("created %v, want %v", got.config.Created, epoch)
	}
}

func TestBuildDeterministic(t *testing.T) {
	digest := func(img Image) v1.Hash {
		d, err := mustBuild(t, img).Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := digest(testImage())
	if again := digest(testImage()); again != base {
		t.Errorf("two builds of one image: %v and %v", base, again)
	}
	// Order of Files does not matter.
	rev := testImage()
	for i, j := 0, len(rev.Files)-1; i < j; i, j = i+1, j-1 {
		rev.Files[i], rev.Files[j] = rev.Files[j], rev.Files[i]
	}
	if d := digest(rev); d != base {
		t.Errorf("reordering files changed the digest: %v, want %v", d, base)
	}
	for what, change := range map[string]func(*Image){
		"created":   func(i *Image) { i.Created = i.Created.Add(time.Second) },
		"file data": func(i *Image) { i.Files[0].Data = []byte("#!/bin/sh -e\n") },
		"label":     func(i *Image) { i.Labels = map[string]string{"org.opencontainers.image.title": "other"} },
		"user":      func(i *Image) { i.User = "" },
	} {
		img := testImage()
		change(&img)
		if d := digest(img); d == base {
			t.Errorf("changing the %s kept the digest %v", what, d)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name  string
		img   Image
		wantS string
	}{
		{"short name", Image{Name: "busybox:1.36"}, "not a full reference"},
		{"no registry", Image{Name: "library/busybox:1.36"}, "not a full reference"},
		{"no tag", Image{Name: "docker.io/library/busybox"}, "not a full reference"},
		{"port no tag", Image{Name: "localhost:5000/busybox"}, "not a full reference"},
		{"digest", Image{Name: "docker.io/library/busybox@sha256:00"}, "not a full reference"},
		{"upper", Image{Name: "docker.io/library/BusyBox:1"}, "not a full reference"},
		{"bad tag", Image{Name: "docker.io/library/busybox:-x"}, "not a full reference"},
		{"relative", Image{Name: "a.io/b:c", Files: []File{{Path: "bin/x"}}}, "must be absolute"},
		{"dotdot", Image{Name: "a.io/b:c", Files: []File{{Path: "/bin/../x"}}}, "must be absolute"},
		{"root", Image{Name: "a.io/b:c", Files: []File{{Path: "/"}}}, "not the root"},
		{"duplicate", Image{Name: "a.io/b:c", Files: []File{{Path: "/x"}, {Path: "/x"}}}, "duplicate path /x"},
		{"under file", Image{Name: "a.io/b:c", Files: []File{{Path: "/x"}, {Path: "/x/y"}}}, "not a directory"},
		{"dir data", Image{Name: "a.io/b:c", Files: []File{{Path: "/d", Mode: os.ModeDir, Data: []byte("x")}}}, "must not have data"},
		{"link data", Image{Name: "a.io/b:c", Files: []File{{Path: "/l", Link: "x", Data: []byte("x")}}}, "neither data"},
		{"device", Image{Name: "a.io/b:c", Files: []File{{Path: "/dev/null", Mode: os.ModeDevice}}}, "unsupported file type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(tt.img)
			if err == nil || !strings.Contains(err.Error(), tt.wantS) {
				t.Errorf("Build() error = %v, want one containing %q", err, tt.wantS)
			}
		})
	}
}

// archiveManifest is one entry of a docker-save manifest.json.
type archiveManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// readArchive returns an archive's manifest.json and the names of its
// entries.
func readArchive(t *testing.T, data []byte) ([]archiveManifest, []string) {
	t.Helper()
	var names []string
	var mf []archiveManifest
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading archive: %v", err)
		}
		names = append(names, hdr.Name)
		if hdr.Name == "manifest.json" {
			if err := json.NewDecoder(tr).Decode(&mf); err != nil {
				t.Fatalf("manifest.json: %v", err)
			}
		}
	}
	return mf, names
}

func writeArchive(t *testing.T, imgs ...Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteArchive(&buf, imgs); err != nil {
		t.Fatalf("WriteArchive: %v", err)
	}
	return buf.Bytes()
}

func TestWriteArchive(t *testing.T) {
	a1 := testImage()
	a2 := testImage()
	a2.Name = "snug.dev/other:latest"
	b := testImage()
	b.Name = "localhost:5000/x/y:v2"
	b.Cmd = []string{"other"}
	data := writeArchive(t, a1, a2, b)
	mf, names := readArchive(t, data)
	var tags []string
	layers, configs := map[string]bool{}, map[string]bool{}
	for _, m := range mf {
		tags = append(tags, m.RepoTags...)
		configs[m.Config] = true
		for _, l := range m.Layers {
			layers[l] = true
		}
	}
	// Three names, two images (a1 and a2 are one), one layer.
	want := []string{"docker.io/library/test:1.0", "localhost:5000/x/y:v2", "snug.dev/other:latest"}
	if d := cmp.Diff(want, tags, cmpopts.SortSlices(func(a, b string) bool { return a < b })); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	if len(configs) != 2 || len(layers) != 1 {
		t.Errorf("%d configs and %d layers, want 2 and 1; entries %v", len(configs), len(layers), names)
	}
	// Each name reads back as the image Build makes.
	for _, img := range []Image{a1, a2, b} {
		tag, err := name.NewTag(img.Name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tarball.Image(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, &tag)
		if err != nil {
			t.Fatalf("reading %s back: %v", img.Name, err)
		}
		gotCfg, err := got.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		wantCfg, err := mustBuild(t, img).ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		if gotCfg != wantCfg {
			t.Errorf("%s: config %v, want %v", img.Name, gotCfg, wantCfg)
		}
	}
	// The archive's manifest.json lists images in map order (tarball's
	// MultiRefWrite), so two archives may differ byte for byte; the images
	// in them do not, which is what the checks above compare.
}

func TestWriteArchiveErrors(t *testing.T) {
	if err := WriteArchive(io.Discard, nil); err == nil {
		t.Error("WriteArchive(nil) succeeded")
	}
	if err := WriteArchive(io.Discard, []Image{testImage(), testImage()}); err == nil || !strings.Contains(err.Error(), "named twice") {
		t.Errorf("WriteArchive(same name twice) = %v, want named twice", err)
	}
	if err := WriteArchive(failWriter{}, []Image{testImage()}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteArchive() error = %v, want disk full", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
