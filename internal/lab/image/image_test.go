package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// archive is an OCI layout read back from a tar, checked for consistency.
type archive struct {
	names []string          // tar entry names in order
	blobs map[string][]byte // digest -> content
	index index
}

// readArchive parses data and checks that every blob is stored under its
// own digest and that the layout marker is right.
func readArchive(t *testing.T, data []byte) archive {
	t.Helper()
	a := archive{blobs: map[string][]byte{}}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading archive: %v", err)
		}
		a.names = append(a.names, hdr.Name)
		if !hdr.ModTime.Equal(epoch) {
			t.Errorf("%s: mtime %v, want %v", hdr.Name, hdr.ModTime, epoch)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %s: %v", hdr.Name, err)
		}
		files[hdr.Name] = b
		if hex, ok := strings.CutPrefix(hdr.Name, "blobs/sha256/"); ok {
			if got := digestOf(b); got != "sha256:"+hex {
				t.Errorf("blob %s has digest %s", hdr.Name, got)
			}
			a.blobs["sha256:"+hex] = b
		}
	}
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", got)
	}
	if err := json.Unmarshal(files["index.json"], &a.index); err != nil {
		t.Fatalf("decoding index.json: %v", err)
	}
	return a
}

// blob returns the blob desc points at, checking its size.
func (a archive) blob(t *testing.T, desc descriptor) []byte {
	t.Helper()
	b, ok := a.blobs[desc.Digest]
	if !ok {
		t.Fatalf("blob %s missing", desc.Digest)
	}
	if int64(len(b)) != desc.Size {
		t.Errorf("blob %s: descriptor size %d, blob size %d", desc.Digest, desc.Size, len(b))
	}
	return b
}

func decode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
}

// entry is one layer tar entry, in a comparable form.
type entry struct {
	Name string
	Type byte
	Mode int64
	Link string
	Data string
}

func layerEntries(t *testing.T, layer []byte) []entry {
	t.Helper()
	var out []entry
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading layer: %v", err)
		}
		if hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(epoch) {
			t.Errorf("%s: uid %d gid %d mtime %v", hdr.Name, hdr.Uid, hdr.Gid, hdr.ModTime)
		}
		b, _ := io.ReadAll(tr)
		out = append(out, entry{hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Linkname, string(b)})
	}
}

// image is the content of one image in an archive.
type image struct {
	annotations map[string]string
	platform    platform
	config      config
	layerType   string
	entries     []entry
}

// readImage follows index entry i down to its layer and checks digests,
// sizes and the config's diff_id.
func (a archive) readImage(t *testing.T, i int) image {
	t.Helper()
	desc := a.index.Manifests[i]
	if desc.MediaType != MediaTypeManifest || desc.Platform == nil {
		t.Fatalf("index entry %d: %+v", i, desc)
	}
	var m manifest
	decode(t, a.blob(t, desc), &m)
	if m.SchemaVersion != 2 || m.MediaType != MediaTypeManifest || m.Config.MediaType != MediaTypeConfig || len(m.Layers) != 1 {
		t.Fatalf("manifest: %+v", m)
	}
	var c config
	decode(t, a.blob(t, m.Config), &c)
	layer := a.blob(t, m.Layers[0])
	raw := layer
	if m.Layers[0].MediaType == MediaTypeLayerGzip {
		zr, err := gzip.NewReader(bytes.NewReader(layer))
		if err != nil {
			t.Fatalf("layer: %v", err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			t.Fatalf("layer: %v", err)
		}
	}
	if want := []string{digestOf(raw)}; !cmp.Equal(c.RootFS.DiffIDs, want) || c.RootFS.Type != "layers" {
		t.Errorf("rootfs %+v, want diff_ids %v", c.RootFS, want)
	}
	return image{desc.Annotations, *desc.Platform, c, m.Layers[0].MediaType, layerEntries(t, raw)}
}

func write(t *testing.T, imgs ...Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteAll(&buf, imgs); err != nil {
		t.Fatalf("WriteAll: %v", err)
	}
	return buf.Bytes()
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
	}
}

func TestWrite(t *testing.T) {
	for _, gz := range []bool{false, true} {
		img := testImage()
		img.Gzip = gz
		var buf bytes.Buffer
		if err := Write(&buf, img); err != nil {
			t.Fatalf("Write: %v", err)
		}
		a := readArchive(t, buf.Bytes())
		if len(a.index.Manifests) != 1 || a.index.SchemaVersion != 2 || a.index.MediaType != MediaTypeIndex {
			t.Fatalf("index: %+v", a.index)
		}
		if a.names[0] != "oci-layout" || a.names[len(a.names)-1] != "index.json" || len(a.blobs) != 3 {
			t.Errorf("archive entries %v", a.names)
		}
		got := a.readImage(t, 0)
		wantAnn := map[string]string{AnnotationImageName: "docker.io/library/test:1.0", AnnotationRefName: "1.0"}
		if d := cmp.Diff(wantAnn, got.annotations); d != "" {
			t.Errorf("annotations (-want +got):\n%s", d)
		}
		if got.platform != (platform{Architecture: "amd64", OS: "linux"}) {
			t.Errorf("platform %+v", got.platform)
		}
		wantCfg := execConfig{Env: img.Env, Entrypoint: img.Entrypoint, Cmd: img.Cmd, WorkingDir: "/tmp"}
		if d := cmp.Diff(wantCfg, got.config.Config); d != "" || got.config.Architecture != "amd64" || got.config.OS != "linux" {
			t.Errorf("config %+v (-want +got):\n%s", got.config, d)
		}
		wantType := map[bool]string{false: MediaTypeLayer, true: MediaTypeLayerGzip}[gz]
		if got.layerType != wantType {
			t.Errorf("layer media type %s, want %s", got.layerType, wantType)
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
			t.Errorf("gzip=%v layer entries (-want +got):\n%s", gz, d)
		}
	}
}

func TestWriteDeterministic(t *testing.T) {
	for _, gz := range []bool{false, true} {
		img := testImage()
		img.Gzip = gz
		if a, b := write(t, img), write(t, img); !bytes.Equal(a, b) {
			t.Errorf("gzip=%v: two writes of the same image differ", gz)
		}
	}
	// Order of Files does not matter either.
	img := testImage()
	rev := testImage()
	for i, j := 0, len(rev.Files)-1; i < j; i, j = i+1, j-1 {
		rev.Files[i], rev.Files[j] = rev.Files[j], rev.Files[i]
	}
	if !bytes.Equal(write(t, img), write(t, rev)) {
		t.Error("reordering files changed the archive")
	}
}

func TestWriteAllSharesBlobs(t *testing.T) {
	a1 := testImage()
	a2 := testImage()
	a2.Name = "snug.dev/other:latest"
	b := testImage()
	b.Name = "localhost:5000/x/y:v2"
	b.Cmd = []string{"other"}
	a := readArchive(t, write(t, a1, a2, b))
	if len(a.index.Manifests) != 3 {
		t.Fatalf("index has %d manifests", len(a.index.Manifests))
	}
	// One layer; two configs and manifests (a1 and a2 are the same image).
	if len(a.blobs) != 5 {
		t.Errorf("%d blobs, want 5", len(a.blobs))
	}
	var names []string
	for i := range a.index.Manifests {
		img := a.readImage(t, i)
		names = append(names, img.annotations[AnnotationImageName]+" "+img.annotations[AnnotationRefName])
	}
	want := []string{"docker.io/library/test:1.0 1.0", "snug.dev/other:latest latest", "localhost:5000/x/y:v2 v2"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
}

func TestWriteErrors(t *testing.T) {
	tests := []struct {
		name  string
		img   Image
		wantS string
	}{
		{"short name", Image{Name: "busybox:1.36"}, "not a full reference"},
		{"no registry", Image{Name: "library/busybox:1.36"}, "not a registry"},
		{"no tag", Image{Name: "docker.io/library/busybox"}, "no tag"},
		{"port no tag", Image{Name: "localhost:5000/busybox"}, "no tag"},
		{"digest", Image{Name: "docker.io/library/busybox@sha256:00"}, "digest"},
		{"upper", Image{Name: "docker.io/library/BusyBox:1"}, "invalid repository"},
		{"bad tag", Image{Name: "docker.io/library/busybox:-x"}, "invalid tag"},
		{"empty tag", Image{Name: "docker.io/library/busybox:"}, "invalid tag"},
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
			err := Write(io.Discard, tt.img)
			if err == nil || !strings.Contains(err.Error(), tt.wantS) {
				t.Errorf("Write() error = %v, want one containing %q", err, tt.wantS)
			}
		})
	}
	if err := WriteAll(io.Discard, nil); err == nil {
		t.Error("WriteAll(nil) succeeded")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWritePropagatesWriterError(t *testing.T) {
	if err := Write(failWriter{}, testImage()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Write() error = %v, want disk full", err)
	}
}
