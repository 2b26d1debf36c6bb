package image

import (
	"archive/tar"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

var testMeta = Meta{
	Version:  "v0.1.0-3-gabcdef012345",
	Revision: "abcdef0123456789abcdef0123456789abcdef01",
	Created:  time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC),
}

// productDigest builds product's image from binary and returns its digest.
func productDigest(t *testing.T, binary []byte, m Meta) v1.Hash {
	t.Helper()
	desc, err := ProductImage("10.213.0.2:5000", "snug-agent", binary, m)
	if err != nil {
		t.Fatalf("ProductImage: %v", err)
	}
	d, err := mustBuild(t, desc).Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestProductImage(t *testing.T) {
	bin := mustRead(t, staticBusybox(t)) // any static executable
	desc, err := ProductImage("10.213.0.2:5000", "snug-agent", bin, testMeta)
	if err != nil {
		t.Fatalf("ProductImage: %v", err)
	}
	if desc.Name != "10.213.0.2:5000/snug-dev/snug-agent:v0.1.0-3-gabcdef012345" {
		t.Errorf("name %s", desc.Name)
	}
	got := inspect(t, mustBuild(t, desc), testMeta.Created)
	want := v1.Config{
		Entrypoint: []string{"/snug-agent"},
		User:       "65532:65532",
		Labels: map[string]string{
			"org.opencontainers.image.source":   "https://github.com/snug-dev/snug",
			"org.opencontainers.image.revision": testMeta.Revision,
			"org.opencontainers.image.version":  testMeta.Version,
			"org.opencontainers.image.created":  "2026-12-01T10:30:00Z",
			"org.opencontainers.image.title":    "snug-agent",
			"org.opencontainers.image.licenses": "Apache-2.0",
		},
	}
	if d := cmp.Diff(want, got.config.Config); d != "" {
		t.Errorf("config (-want +got):\n%s", d)
	}
	if !got.config.Created.Time.Equal(testMeta.Created) {
		t.Errorf("created %v, want the commit time %v", got.config.Created, testMeta.Created)
	}
	// The binary and nothing else: no shell, no /etc, no certificates.
	if len(got.entries) != 1 {
		t.Fatalf("layer has %d entries, want only snug-agent", len(got.entries))
	}
	if e := got.entries[0]; e.Name != "snug-agent" || e.Type != tar.TypeReg || e.Mode != 0o755 || e.Data != string(bin) {
		t.Errorf("layer entry %s type %c mode %o (%d bytes), want snug-agent 0755 holding the binary", e.Name, e.Type, e.Mode, len(e.Data))
	}
}

// TestProductImageReproducible is the reproducibility claim: the same
// binary bytes and commit give the same digest, another binary or another
// commit another digest.
func TestProductImageReproducible(t *testing.T) {
	bin := mustRead(t, staticBusybox(t))
	first := productDigest(t, bin, testMeta)
	if second := productDigest(t, append([]byte(nil), bin...), testMeta); second != first {
		t.Errorf("two builds from the same binary: %v and %v", first, second)
	}
	other := append(append([]byte(nil), bin...), 0) // still a static ELF file
	if d := productDigest(t, other, testMeta); d == first {
		t.Errorf("a different binary gave the same digest %v", d)
	}
	later := testMeta
	later.Created = later.Created.Add(time.Minute)
	if d := productDigest(t, bin, later); d == first {
		t.Errorf("a different commit time gave the same digest %v", d)
	}
}

func TestProductImageErrors(t *testing.T) {
	bin := mustRead(t, staticBusybox(t))
	if _, err := os.Stat("/bin/ls"); err == nil {
		_, err := ProductImage("r.io", "snug-agent", mustRead(t, "/bin/ls"), testMeta)
		if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
			t.Errorf("dynamic binary: %v, want an error naming CGO_ENABLED=0", err)
		}
	}
	if _, err := ProductImage("r.io", "snug-agent", []byte("#!/bin/sh\n"), testMeta); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("script: %v, want not an ELF executable", err)
	}
	for what, m := range map[string]Meta{
		"bad version": {Version: "v1+dirty", Revision: "x", Created: testMeta.Created},
		"no revision": {Version: "v1", Created: testMeta.Created},
		"no time":     {Version: "v1", Revision: "x"},
	} {
		if _, err := ProductImage("r.io", "snug-agent", bin, m); err == nil {
			t.Errorf("%s: no error", what)
		}
	}
}

// productBinDir holds static stand-ins for the product binaries.
func productBinDir(t *testing.T) string {
	t.Helper()
	bin := mustRead(t, staticBusybox(t))
	dir := t.TempDir()
	for i, p := range Products {
		if err := os.WriteFile(filepath.Join(dir, p), append(append([]byte(nil), bin...), byte(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestBuildProductsWriteLocal(t *testing.T) {
	builts, err := BuildProducts("", productBinDir(t), testMeta)
	if err != nil {
		t.Fatalf("BuildProducts: %v", err)
	}
	if len(builts) != 2 || builts[0].Ref != "ghcr.io/snug-dev/snug-agent:"+testMeta.Version ||
		builts[1].Ref != "ghcr.io/snug-dev/snug-controller:"+testMeta.Version || builts[0].Digest == builts[1].Digest {
		t.Fatalf("built %+v", builts)
	}
	out := t.TempDir()
	if err := WriteLocal(out, builts); err != nil {
		t.Fatalf("WriteLocal: %v", err)
	}
	idx, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	if err != nil {
		t.Fatalf("reading the layout: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("layout lists %d images, want 2", len(im.Manifests))
	}
	for i, b := range builts {
		m := im.Manifests[i]
		if m.Digest != b.Digest || m.Annotations["org.opencontainers.image.ref.name"] != b.Ref {
			t.Errorf("layout entry %d: %v %v, want %v %s", i, m.Digest, m.Annotations, b.Digest, b.Ref)
		}
		tag, _ := name.NewTag(b.Ref)
		img, err := tarball.ImageFromPath(filepath.Join(out, b.Product+".tar"), &tag)
		if err != nil {
			t.Fatalf("reading %s.tar: %v", b.Product, err)
		}
		if cfg, _ := img.ConfigName(); cfg != mustConfigName(t, b.Image) {
			t.Errorf("%s.tar holds config %v", b.Product, cfg)
		}
	}
	// A second write replaces the first: still two images.
	if err := WriteLocal(out, builts); err != nil {
		t.Fatal(err)
	}
	idx, _ = layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	if im, _ := idx.IndexManifest(); len(im.Manifests) != 2 {
		t.Errorf("after a second write the layout lists %d images", len(im.Manifests))
	}
	if _, err := BuildProducts("", t.TempDir(), testMeta); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("BuildProducts without binaries: %v", err)
	}
}

func mustConfigName(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestPush pushes to go-containerregistry's in-memory registry over plain
// HTTP and pulls the manifest back by tag.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	builts, err := BuildProducts(host, productBinDir(t), testMeta)
	if err != nil {
		t.Fatal(err)
	}
	if err := Push(context.Background(), builts, true); err != nil {
		t.Fatalf("Push: %v", err)
	}
	for _, b := range builts {
		ref, err := name.NewTag(b.Ref, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Head(ref)
		if err != nil {
			t.Fatalf("HEAD %s: %v", b.Ref, err)
		}
		if desc.Digest != b.Digest {
			t.Errorf("%s: registry has %v, built %v", b.Ref, desc.Digest, b.Digest)
		}
		if b.Size <= desc.Size {
			t.Errorf("%s: size %d is not more than the manifest's %d", b.Ref, b.Size, desc.Size)
		}
	}
}

func TestGitMeta(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE=2026-12-01T10:30:00Z", "GIT_AUTHOR_DATE=2026-12-01T10:30:00Z",
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "f")
	git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
	head := git("rev-parse", "HEAD")
	t.Setenv("SOURCE_DATE_EPOCH", "")
	m, err := GitMeta(context.Background(), dir)
	if err != nil {
		t.Fatalf("GitMeta: %v", err)
	}
	want := Meta{Version: head[:12], Revision: head, Created: time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)}
	if d := cmp.Diff(want, m); d != "" {
		t.Errorf("GitMeta (-want +got):\n%s", d)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1800000000")
	m, err = GitMeta(context.Background(), dir)
	if err != nil {
		t.Fatalf("GitMeta: %v", err)
	}
	if m.Version != head[:12]+"-dirty" || !m.Created.Equal(time.Unix(1800000000, 0)) {
		t.Errorf("dirty tree with SOURCE_DATE_EPOCH: %+v", m)
	}
	if _, err := GitMeta(context.Background(), t.TempDir()); err == nil {
		t.Error("GitMeta outside a work tree succeeded")
	}
}
