package image

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

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

// Image is a single-layer linux/amd64 OCI image, described by what goes in
// it. Build turns it into a go-containerregistry image.
type Image struct {
	// Name is the full reference, e.g. docker.io/library/busybox:1.36; the
	// kubelet looks images up by their normalized full name.
	Name       string
	Files      []File
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	// User is the config's user, e.g. 65532:65532; empty means root.
	User string
	// Labels are the config's labels (org.opencontainers.image.*).
	Labels map[string]string
	// Created is the config's creation time and every layer entry's
	// modification time; the zero value means the Unix epoch.
	Created time.Time
}

// epoch is the time of an Image whose Created is zero.
var epoch = time.Unix(0, 0).UTC()

func (img Image) created() time.Time {
	if img.Created.IsZero() {
		return epoch
	}
	return img.Created.UTC()
}

// Build returns img as an OCI image: empty.Image with img's config and one
// gzip layer. The same Image always gives the same digest.
func Build(img Image) (v1.Image, error) {
	if _, err := parseName(img.Name); err != nil {
		return nil, err
	}
	created := img.created()
	raw, err := layerTar(img.Files, created)
	if err != nil {
		return nil, fmt.Errorf("building image %s: making layer: %w", img.Name, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("building image %s: %w", img.Name, err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	withConfig, err := mutate.ConfigFile(base, &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			Env:        slices.Clone(img.Env),
			Entrypoint: slices.Clone(img.Entrypoint),
			Cmd:        slices.Clone(img.Cmd),
			WorkingDir: img.WorkingDir,
			User:       img.User,
			Labels:     maps.Clone(img.Labels),
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("building image %s: %w", img.Name, err)
	}
	out, err := mutate.Append(withConfig, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: "snug internal/lab/image"},
	})
	if err != nil {
		return nil, fmt.Errorf("building image %s: %w", img.Name, err)
	}
	return out, nil
}

// WriteArchive builds imgs and writes them to w as one image archive (the
// docker save format, go-containerregistry's tarball package) naming each
// image by its Name, which `ctr -n k8s.io images import` (containerd 1.6)
// imports under that name. Layers shared by images are written once. The
// images are reproducible; the archive's order of them is not.
func WriteArchive(w io.Writer, imgs []Image) error {
	if len(imgs) == 0 {
		return fmt.Errorf("writing image archive: no images")
	}
	refs := map[name.Reference]v1.Image{}
	for _, img := range imgs {
		tag, err := parseName(img.Name)
		if err != nil {
			return err
		}
		if _, dup := refs[tag]; dup {
			return fmt.Errorf("writing image archive: %s named twice", img.Name)
		}
		built, err := Build(img)
		if err != nil {
			return err
		}
		refs[tag] = built
	}
	if err := tarball.MultiRefWrite(refs, w); err != nil {
		return fmt.Errorf("writing image archive: %w", err)
	}
	return nil
}

// parseName checks that s is a full reference (registry/path:tag, no
// digest) and parses it. containerd stores the name verbatim, and the
// kubelet asks for the normalized full name, so a short name such as
// busybox:1.36 would import but never be found.
func parseName(s string) (name.Tag, error) {
	tag, err := name.NewTag(s, name.StrictValidation)
	if err == nil && !tagRE.MatchString(tag.TagStr()) {
		err = fmt.Errorf("tag %q does not match %s", tag.TagStr(), tagRE)
	}
	if err != nil {
		return name.Tag{}, fmt.Errorf("image name %q is not a full reference registry/repository:tag (e.g. docker.io/library/busybox:1.36): %w", s, err)
	}
	return tag, nil
}
