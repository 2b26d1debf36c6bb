package helm

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/snug-dev/snug/lab/internal/lab"
)

// DefaultVersion is the helm release snug builds, without the v.
const DefaultVersion = "3.22.0"

// kubeMinor is the Kubernetes minor of the k8s.io modules helm
// DefaultVersion is built with (its go.mod): helm's Makefile sets it so that
// `helm template` and `helm lint` assume that Kubernetes, not 1.20.
const kubeMinor = "37"

func module(version string) lab.Module {
	const m = "helm.sh/helm/v3"
	return lab.Module{
		CacheName: "helm", Path: m, Version: version,
		Packages:    []string{m + "/cmd/helm"},
		VersionVars: []string{m + "/internal/version.version"},
		Ldflags: []string{
			m + "/pkg/chartutil.k8sVersionMajor=1", m + "/pkg/chartutil.k8sVersionMinor=" + kubeMinor,
			m + "/pkg/lint/rules.k8sVersionMajor=1", m + "/pkg/lint/rules.k8sVersionMinor=" + kubeMinor,
		},
	}
}

// Path is where the helm binary of version lives under cacheDir, built or
// not.
func Path(cacheDir, version string) string {
	return filepath.Join(module(version).BinDir(cacheDir), "helm")
}

// Ensure builds helm version into cacheDir unless it is there, and returns
// the binary's path. Progress goes to log.
func Ensure(ctx context.Context, cacheDir, version string, log io.Writer) (string, error) {
	if err := module(version).Ensure(ctx, cacheDir, log); err != nil {
		return "", err
	}
	return Path(cacheDir, version), nil
}

// Built returns the path of helm version under cacheDir, or an error that
// says how to build it: for tests, which must not build it themselves.
func Built(cacheDir, version string) (string, error) {
	p := Path(cacheDir, version)
	if _, err := os.Stat(filepath.Join(filepath.Dir(p), lab.BuiltStamp)); err != nil {
		return "", fmt.Errorf("helm v%s is not built in %s: run `make helm` first", version, cacheDir)
	}
	return p, nil
}
