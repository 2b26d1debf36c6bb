// Command genconfig renders charts/snug with its default values into
// config/ (`make generate`), so that `kubectl apply -k config/` installs
// what `helm install` does. Run it from the module's root; it builds helm
// into the cache first if needed.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/lab/helm"
)

func main() {
	ctx := context.Background()
	path, err := helm.Ensure(ctx, lab.NewOptions().CacheDir, helm.DefaultVersion, os.Stderr)
	if err == nil {
		err = helm.WriteConfig(ctx, path, "charts/snug", "config")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "genconfig: %v\n", err)
		os.Exit(1)
	}
}
