package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/snug-dev/snug/internal/lab/image"
)

// importImages writes the lab's images (busybox, the sandbox image and
// snug-load) as OCI archives and imports them into the lab's containerd.
func importImages(ctx context.Context, o *Options, loadBin string, log io.Writer) error {
	imgs, err := image.LabImages("/bin/busybox", loadBin)
	if err != nil {
		return fmt.Errorf("making lab images: %w", err)
	}
	dir := o.path("images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, img := range imgs {
		path := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(img.Name)+".tar")
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		werr := image.Write(f, img)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("writing image %s: %w", img.Name, werr)
		}
		out, err := exec.CommandContext(ctx, "ctr", "--address", containerdSock(o), "-n", "k8s.io", "images", "import", path).CombinedOutput()
		if err != nil {
			return fmt.Errorf("importing image %s: %v: %s", img.Name, err, strings.TrimSpace(string(out)))
		}
		fmt.Fprintf(log, "imported image %s\n", img.Name)
	}
	return nil
}
