package labcli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/snug-dev/snug/lab/internal/lab/image"
)

// imagesOptions are the flags of snug-lab images build|push.
type imagesOptions struct {
	// BinDir holds the static snug-agent and snug-controller.
	BinDir string
	// OutDir receives the OCI layout and archives (build).
	OutDir string
	// Registry names the images (build) or is pushed to (push).
	Registry string
	// Version overrides git describe (make passes the one it linked in).
	Version string
	// PlainHTTP pushes over HTTP.
	PlainHTTP bool
}

func newImagesOptions() *imagesOptions {
	bin := "bin"
	if exe, err := os.Executable(); err == nil {
		bin = filepath.Dir(exe)
	}
	return &imagesOptions{BinDir: bin}
}

func (o *imagesOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BinDir, "bin", o.BinDir, "directory with the static snug-agent and snug-controller (default: this binary's directory)")
	fs.StringVar(&o.OutDir, "out", o.OutDir, "where build writes the OCI layout (oci/) and one archive per image (default: <bin>/images)")
	fs.StringVar(&o.Registry, "registry", o.Registry, "registry host[:port] the images are named for (build, default "+image.DefaultRegistry+") and pushed to (push)")
	fs.StringVar(&o.Version, "version", o.Version, "image tag and version label (default: git describe --always --dirty --abbrev=12)")
	fs.BoolVar(&o.PlainHTTP, "plain-http", o.PlainHTTP, "push over plain HTTP (go-containerregistry does so on its own for private and loopback addresses)")
}

func (o *imagesOptions) Validate() error {
	if o.BinDir == "" {
		return errors.New("--bin must not be empty")
	}
	return nil
}

// newImagesCommand is snug-lab images build|push: the product images of
// snug-agent and snug-controller (internal/lab/image), what make images runs.
func newImagesCommand(stdout io.Writer) *cobra.Command {
	o := newImagesOptions()
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build snug-agent's and snug-controller's images, and push them to a registry",
	}
	buildAll := func(cmd *cobra.Command) ([]image.Built, error) {
		meta, err := image.GitMeta(cmd.Context(), "")
		if err != nil {
			return nil, err
		}
		if o.Version != "" {
			meta.Version = o.Version
			if err := meta.Validate(); err != nil {
				return nil, fmt.Errorf("--version: %w", err)
			}
		}
		return image.BuildProducts(o.Registry, o.BinDir, meta)
	}
	build := &cobra.Command{
		Use:   "build",
		Short: "Build the images as an OCI layout and archives under --out, and print their digests and sizes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			builts, err := buildAll(cmd)
			if err != nil {
				return err
			}
			out := o.OutDir
			if out == "" {
				out = filepath.Join(o.BinDir, "images")
			}
			if err := image.WriteLocal(out, builts); err != nil {
				return err
			}
			printBuilt(stdout, builts)
			fmt.Fprintf(stdout, "wrote %s (OCI layout) and %s\n", filepath.Join(out, "oci"), filepath.Join(out, "<name>.tar"))
			return nil
		},
	}
	push := &cobra.Command{
		Use:   "push",
		Short: "Build the images and push them to --registry as <registry>/snug-dev/<name>:<version>",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Registry == "" {
				return errors.New("push needs --registry, e.g. --registry 10.213.0.2:5000 (the lab's)")
			}
			builts, err := buildAll(cmd)
			if err != nil {
				return err
			}
			if err := image.Push(cmd.Context(), builts, o.PlainHTTP); err != nil {
				return err
			}
			printBuilt(stdout, builts)
			fmt.Fprintf(stdout, "pushed to %s\n", o.Registry)
			return nil
		},
	}
	for _, c := range []*cobra.Command{build, push} {
		o.AddFlags(c.Flags())
		c.PreRunE = func(*cobra.Command, []string) error { return o.Validate() }
	}
	cmd.AddCommand(build, push)
	return cmd
}

func printBuilt(w io.Writer, builts []image.Built) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tDIGEST\tSIZE")
	for _, b := range builts {
		fmt.Fprintf(tw, "%s\t%s\t%.1f MiB (%d bytes)\n", b.Ref, b.Digest, float64(b.Size)/(1<<20), b.Size)
	}
	tw.Flush()
}
