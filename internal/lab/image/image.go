package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Media types and annotations of the OCI image spec and containerd.
const (
	MediaTypeIndex     = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest  = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig    = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer     = "application/vnd.oci.image.layer.v1.tar"
	MediaTypeLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip"

	// AnnotationImageName is the annotation containerd's importer names an
	// image after, verbatim; it takes precedence over AnnotationRefName.
	AnnotationImageName = "io.containerd.image.name"
	// AnnotationRefName is the OCI layout's reference name: the tag.
	AnnotationRefName = "org.opencontainers.image.ref.name"
)

// epoch is the modification time of every tar entry, so output is
// reproducible.
var epoch = time.Unix(0, 0).UTC()

// File is one entry of an image's filesystem.
//
// A File with Link set is a symbolic link to Link; one whose Mode has
// os.ModeDir is a directory; anything else is a regular file holding Data.
// Only the permission, setuid, setgid and sticky bits of Mode are kept. Every
// entry is owned by root. Parent directories that are not listed are added
// with mode 0755.
type File struct {
	Path string // absolute path inside the image, e.g. /bin/busybox
	Mode os.FileMode
	Data []byte
	Link string // symlink target, if a symlink
}

// Image is a single-layer linux/amd64 image.
type Image struct {
	// Name is the full reference, e.g. docker.io/library/busybox:1.36; the
	// kubelet looks images up by their normalized full name.
	Name       string
	Files      []File
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	// Gzip compresses the layer. Uncompressed layers import a little faster;
	// compressed archives are smaller.
	Gzip bool
}

// Write writes img to w as an OCI image-layout tar archive.
func Write(w io.Writer, img Image) error {
	return WriteAll(w, []Image{img})
}

// WriteAll writes imgs to w as one OCI image-layout tar archive whose index
// lists one manifest per image. Blobs shared by images are written once.
func WriteAll(w io.Writer, imgs []Image) error {
	if len(imgs) == 0 {
		return errors.New("no images to write")
	}
	var (
		blobs   []blob
		seen    = map[string]bool{}
		entries []descriptor
	)
	add := func(b blob) {
		if !seen[b.digest] {
			seen[b.digest] = true
			blobs = append(blobs, b)
		}
	}
	for _, img := range imgs {
		desc, bs, err := build(img)
		if err != nil {
			return fmt.Errorf("building image %s: %w", img.Name, err)
		}
		for _, b := range bs {
			add(b)
		}
		entries = append(entries, desc)
	}
	idx, err := json.Marshal(index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: entries})
	if err != nil {
		return fmt.Errorf("encoding index: %w", err)
	}
	tw := tar.NewWriter(w)
	if err := writeEntry(tw, "oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		hdr := &tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: epoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("writing archive: %w", err)
		}
	}
	for _, b := range blobs {
		if err := writeEntry(tw, "blobs/sha256/"+strings.TrimPrefix(b.digest, "sha256:"), b.data); err != nil {
			return err
		}
	}
	if err := writeEntry(tw, "index.json", idx); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing archive: %w", err)
	}
	return nil
}

func writeEntry(tw *tar.Writer, name string, data []byte) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: epoch}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("writing archive entry %s: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("writing archive entry %s: %w", name, err)
	}
	return nil
}

// blob is one content-addressed object of the layout.
type blob struct {
	digest string // sha256:<hex>
	data   []byte
}

func newBlob(data []byte) blob { return blob{digest: digestOf(data), data: data} }

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// build makes img's layer, config and manifest blobs and the index entry
// that names the manifest.
func build(img Image) (descriptor, []blob, error) {
	tag, err := tagOf(img.Name)
	if err != nil {
		return descriptor{}, nil, err
	}
	raw, err := layerTar(img.Files)
	if err != nil {
		return descriptor{}, nil, fmt.Errorf("making layer: %w", err)
	}
	layer, layerType := raw, MediaTypeLayer
	if img.Gzip {
		if layer, err = gzipped(raw); err != nil {
			return descriptor{}, nil, fmt.Errorf("compressing layer: %w", err)
		}
		layerType = MediaTypeLayerGzip
	}
	layerBlob := newBlob(layer)
	cfg, err := json.Marshal(config{
		Created:      epoch.Format(time.RFC3339),
		Architecture: "amd64",
		OS:           "linux",
		Config: execConfig{
			Env:        img.Env,
			Entrypoint: img.Entrypoint,
			Cmd:        img.Cmd,
			WorkingDir: img.WorkingDir,
		},
		RootFS: rootFS{Type: "layers", DiffIDs: []string{digestOf(raw)}},
	})
	if err != nil {
		return descriptor{}, nil, fmt.Errorf("encoding config: %w", err)
	}
	cfgBlob := newBlob(cfg)
	man, err := json.Marshal(manifest{
		SchemaVersion: 2,
		MediaType:     MediaTypeManifest,
		Config:        descriptor{MediaType: MediaTypeConfig, Digest: cfgBlob.digest, Size: int64(len(cfg))},
		Layers:        []descriptor{{MediaType: layerType, Digest: layerBlob.digest, Size: int64(len(layer))}},
	})
	if err != nil {
		return descriptor{}, nil, fmt.Errorf("encoding manifest: %w", err)
	}
	manBlob := newBlob(man)
	desc := descriptor{
		MediaType: MediaTypeManifest,
		Digest:    manBlob.digest,
		Size:      int64(len(man)),
		Platform:  &platform{Architecture: "amd64", OS: "linux"},
		Annotations: map[string]string{
			AnnotationImageName: img.Name,
			AnnotationRefName:   tag,
		},
	}
	return desc, []blob{layerBlob, cfgBlob, manBlob}, nil
}

func gzipped(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tagOf checks that name is a full reference (registry/path:tag, lowercase,
// no digest) and returns its tag. containerd stores the name verbatim, and
// the kubelet asks for the normalized full name, so a short name such as
// busybox:1.36 would import but never be found.
func tagOf(name string) (string, error) {
	slash := strings.Index(name, "/")
	if slash < 0 {
		return "", fmt.Errorf("image name %q is not a full reference (want e.g. docker.io/library/busybox:1.36)", name)
	}
	if strings.Contains(name, "@") {
		return "", fmt.Errorf("image name %q has a digest; only tags are supported", name)
	}
	if domain := name[:slash]; !strings.ContainsAny(domain, ".:") && domain != "localhost" {
		return "", fmt.Errorf("image name %q is not a full reference: %q is not a registry (want e.g. docker.io/library/busybox:1.36)", name, domain)
	}
	last := name[strings.LastIndex(name, "/")+1:]
	colon := strings.LastIndex(last, ":")
	if colon < 0 {
		return "", fmt.Errorf("image name %q has no tag", name)
	}
	repo, tag := name[:len(name)-len(last)+colon], last[colon+1:]
	if repo != strings.ToLower(repo) || strings.HasSuffix(repo, "/") || strings.Contains(repo, "//") {
		return "", fmt.Errorf("image name %q has an invalid repository %q", name, repo)
	}
	if tag == "" || len(tag) > 128 || strings.Trim(tag, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != "" ||
		tag[0] == '.' || tag[0] == '-' {
		return "", fmt.Errorf("image name %q has an invalid tag %q", name, tag)
	}
	return tag, nil
}

// The JSON documents of the OCI image spec, as far as the lab uses them.
type (
	descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Platform    *platform         `json:"platform,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	platform struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	}
	index struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}
	manifest struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}
	config struct {
		Created      string     `json:"created,omitempty"`
		Architecture string     `json:"architecture"`
		OS           string     `json:"os"`
		Config       execConfig `json:"config"`
		RootFS       rootFS     `json:"rootfs"`
	}
	execConfig struct {
		Env        []string `json:"Env,omitempty"`
		Entrypoint []string `json:"Entrypoint,omitempty"`
		Cmd        []string `json:"Cmd,omitempty"`
		WorkingDir string   `json:"WorkingDir,omitempty"`
	}
	rootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	}
)
