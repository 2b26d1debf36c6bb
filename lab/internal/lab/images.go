package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/snug-dev/snug/lab/internal/lab/image"
)

// importImages writes the lab's images (busybox, the sandbox image and
// snug-load) as one image archive and imports it into the lab's containerd.
func importImages(ctx context.Context, o *Options, loadBin string, log io.Writer) error {
	imgs, err := image.LabImages("/bin/busybox", loadBin)
	if err != nil {
		return fmt.Errorf("making lab images: %w", err)
	}
	dir := o.path("images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := o.path("images", "lab.tar")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	werr := image.WriteArchive(f, imgs)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("writing the lab images: %w", werr)
	}
	out, err := exec.CommandContext(ctx, "ctr", "--address", containerdSock(o), "-n", "k8s.io", "images", "import", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("importing the lab images: %v: %s", err, strings.TrimSpace(string(out)))
	}
	for _, img := range imgs {
		fmt.Fprintf(log, "imported image %s\n", img.Name)
	}
	return nil
}

// PushImages builds the images of snug-agent and snug-controller from the
// static binaries in binDir (what make build leaves in bin/), labelled
// with the git state of the current directory's work tree (image.GitMeta),
// and pushes them to the lab's registry as
// <o.Registry()>/snug-dev/<name>:<version>. The lab must be up. It
// returns what it pushed, digests included; a pod pulls the images by tag
// with the normal pull policy.
func PushImages(ctx context.Context, o *Options, binDir string) ([]image.Built, error) {
	meta, err := image.GitMeta(ctx, "")
	if err != nil {
		return nil, err
	}
	builts, err := image.BuildProducts(o.Registry(), binDir, meta)
	if err != nil {
		return nil, err
	}
	if err := image.Push(ctx, builts, true); err != nil {
		return nil, fmt.Errorf("pushing to the lab registry: %w", err)
	}
	return builts, nil
}
