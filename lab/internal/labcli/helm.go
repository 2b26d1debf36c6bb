package labcli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/lab/helm"
)

// newHelmCommand runs the helm CLI that the chart tests and the lab use,
// building it first when it is not in the cache: `snug-lab helm version`,
// `snug-lab helm template charts/snug`.
func newHelmCommand(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "helm [helm arguments]",
		Short: "Run helm v" + helm.DefaultVersion + ", built from the Go module proxy into the cache (once)",
		// Every argument is helm's.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := helm.Ensure(cmd.Context(), lab.NewOptions().CacheDir, helm.DefaultVersion, stderr)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				fmt.Fprintln(stdout, path)
				return nil
			}
			c := exec.CommandContext(cmd.Context(), path, args...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, stdout, stderr
			if err := c.Run(); err != nil {
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					return fmt.Errorf("helm %s", exit)
				}
				return fmt.Errorf("running helm: %w", err)
			}
			return nil
		},
	}
}
