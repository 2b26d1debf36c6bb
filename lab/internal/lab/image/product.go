package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Facts every product image states in its labels.
const (
	// Source is the project's repository (org.opencontainers.image.source).
	Source = "https://github.com/snug-dev/snug"
	// License is the SPDX expression of org.opencontainers.image.licenses.
	License = "Apache-2.0"
	// RepositoryPrefix is the path under a registry where snug's images
	// live: <registry>/snug-dev/snug-agent:<version>.
	RepositoryPrefix = "snug-dev/"
	// DefaultRegistry names the images when no registry is given; the
	// chart's default too.
	DefaultRegistry = "ghcr.io"
	// NonRoot is the user and group the product images run as (distroless's
	// nonroot): no account file is needed for a numeric user.
	NonRoot = "65532:65532"
)

// Products are snug's binaries that ship as images, each as /<name> and
// run as its entrypoint.
var Products = []string{"snug-agent", "snug-controller"}

// Meta is what a product image says about its build.
type Meta struct {
	// Version is the image tag and org.opencontainers.image.version: the
	// output of git describe --always --dirty --abbrev=12, the version the
	// binaries were linked with.
	Version string
	// Revision is the full commit hash (org.opencontainers.image.revision).
	Revision string
	// Created is the commit time (or SOURCE_DATE_EPOCH): the config's
	// created time, every file's mtime and org.opencontainers.image.created.
	// Two builds of one commit thus give the same digest.
	Created time.Time
}

// tagRE is the OCI distribution spec's tag grammar.
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// Validate reports what is wrong with m.
func (m Meta) Validate() error {
	var errs []error
	if !tagRE.MatchString(m.Version) {
		errs = append(errs, fmt.Errorf("version %q is not a valid image tag", m.Version))
	}
	if m.Revision == "" {
		errs = append(errs, errors.New("revision must not be empty"))
	}
	if m.Created.IsZero() {
		errs = append(errs, errors.New("created time must be set"))
	}
	return errors.Join(errs...)
}

// GitMeta reads Meta from the git work tree that dir is in ("" for the
// current directory): git describe --always --dirty --abbrev=12, the HEAD
// commit and its committer time. SOURCE_DATE_EPOCH, when set, replaces the
// commit time.
func GitMeta(ctx context.Context, dir string) (Meta, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(string(out)), nil
	}
	var m Meta
	var err error
	if m.Version, err = git("describe", "--always", "--dirty", "--abbrev=12"); err != nil {
		return Meta{}, fmt.Errorf("reading the version from git: %w", err)
	}
	if m.Revision, err = git("rev-parse", "HEAD"); err != nil {
		return Meta{}, fmt.Errorf("reading the revision from git: %w", err)
	}
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		if epoch, err = git("log", "-1", "--format=%ct", "HEAD"); err != nil {
			return Meta{}, fmt.Errorf("reading the commit time from git: %w", err)
		}
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return Meta{}, fmt.Errorf("parsing the build time %q: %w", epoch, err)
	}
	m.Created = time.Unix(secs, 0).UTC()
	return m, m.Validate()
}

// Ref is the reference of product's image in registry at version, e.g.
// 10.213.0.2:5000/snug-dev/snug-agent:v0.1.0.
func Ref(registry, product, version string) string {
	return registry + "/" + RepositoryPrefix + product + ":" + version
}

// ProductImage describes the image of product (snug-agent or
// snug-controller): the static binary as /<product>, its entrypoint, run as
// 65532:65532, with nothing else in it: no shell, no account files, no CA
// certificates (in-cluster clients trust the service account's ca.crt),
// and the org.opencontainers.image labels from m.
func ProductImage(registry, product string, binary []byte, m Meta) (Image, error) {
	if err := m.Validate(); err != nil {
		return Image{}, fmt.Errorf("image of %s: %w", product, err)
	}
	if err := checkStatic(bytes.NewReader(binary)); err != nil {
		if errors.Is(err, errDynamic) {
			return Image{}, fmt.Errorf("image of %s: the binary is dynamically linked; build it with CGO_ENABLED=0", product)
		}
		return Image{}, fmt.Errorf("image of %s: %w", product, err)
	}
	return Image{
		Name:       Ref(registry, product, m.Version),
		Files:      []File{{Path: "/" + product, Mode: 0o755, Data: binary}},
		Entrypoint: []string{"/" + product},
		User:       NonRoot,
		Created:    m.Created,
		Labels: map[string]string{
			"org.opencontainers.image.source":   Source,
			"org.opencontainers.image.revision": m.Revision,
			"org.opencontainers.image.version":  m.Version,
			"org.opencontainers.image.created":  m.Created.UTC().Format(time.RFC3339),
			"org.opencontainers.image.title":    product,
			"org.opencontainers.image.licenses": License,
		},
	}, nil
}

// Built is one product image, built.
type Built struct {
	// Product is the binary's name, e.g. snug-agent.
	Product string
	// Ref is where it is (to be) pushed: registry/snug-dev/product:version.
	Ref   string
	Image v1.Image
	// Digest is the manifest's digest: what a registry, containerd and a
	// pod's status.containerStatuses[].imageID show.
	Digest v1.Hash
	// Size is what a pull transfers: manifest, config and compressed layer.
	Size int64
}

// BuildProducts builds the image of every product from binDir/<product>
// (static binaries), named for registry ("" for DefaultRegistry).
func BuildProducts(registry, binDir string, m Meta) ([]Built, error) {
	if registry == "" {
		registry = DefaultRegistry
	}
	var out []Built
	for _, p := range Products {
		path := filepath.Join(binDir, p)
		bin, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the %s binary: %w (make build builds it)", p, err)
		}
		desc, err := ProductImage(registry, p, bin, m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		b, err := build(p, desc)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func build(product string, desc Image) (Built, error) {
	img, err := Build(desc)
	if err != nil {
		return Built{}, err
	}
	b := Built{Product: product, Ref: desc.Name, Image: img}
	if b.Digest, err = img.Digest(); err != nil {
		return Built{}, fmt.Errorf("image of %s: %w", product, err)
	}
	if b.Size, err = pullSize(img); err != nil {
		return Built{}, fmt.Errorf("image of %s: %w", product, err)
	}
	return b, nil
}

// pullSize is the manifest's size plus every blob it names.
func pullSize(img v1.Image) (int64, error) {
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	size := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size, nil
}

// WriteLocal writes builts under dir: one OCI image layout, dir/oci,
// listing every image with its reference as org.opencontainers.image.ref.name,
// and dir/<product>.tar, an archive `docker load` and `ctr images import`
// take. What dir held for those names before is replaced.
func WriteLocal(dir string, builts []Built) error {
	ociDir := filepath.Join(dir, "oci")
	if err := os.RemoveAll(ociDir); err != nil {
		return fmt.Errorf("writing images: %w", err)
	}
	lp, err := layout.Write(ociDir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the image layout: %w", err)
	}
	for _, b := range builts {
		if err := lp.AppendImage(b.Image, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": b.Ref,
		})); err != nil {
			return fmt.Errorf("writing %s to the image layout: %w", b.Ref, err)
		}
		tag, err := name.NewTag(b.Ref, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("writing %s: %w", b.Ref, err)
		}
		if err := tarball.WriteToFile(filepath.Join(dir, b.Product+".tar"), tag, b.Image); err != nil {
			return fmt.Errorf("writing %s: %w", b.Ref, err)
		}
	}
	return nil
}

// Push writes every built image to its Ref. plainHTTP talks HTTP to the
// registry (the lab's; go-containerregistry also does for private and
// loopback addresses on its own). Pushes are anonymous.
func Push(ctx context.Context, builts []Built, plainHTTP bool) error {
	var opts []name.Option
	if plainHTTP {
		opts = append(opts, name.Insecure)
	}
	for _, b := range builts {
		tag, err := name.NewTag(b.Ref, append(opts, name.StrictValidation)...)
		if err != nil {
			return fmt.Errorf("pushing %s: %w", b.Ref, err)
		}
		if err := remote.Write(tag, b.Image, remote.WithContext(ctx)); err != nil {
			return fmt.Errorf("pushing %s: %w", b.Ref, err)
		}
	}
	return nil
}
