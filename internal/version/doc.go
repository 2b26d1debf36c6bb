// Package version is the version of snug's binaries: the output of
// `git describe --always --dirty --abbrev=12` that `make build` links in
// with -ldflags "-X github.com/snug-dev/snug/internal/version.Version=...",
// the same string `make images` tags the images with. A binary built
// without those flags (go build, go test) says "dev". It imports nothing,
// so every binary may link it; internal/daemon prints it for --version.
package version
