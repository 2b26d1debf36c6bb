// Package version is the version of snug's binaries: the output of
// `git describe --always --dirty --abbrev=12` that `make build` and
// `make images` link in with -ldflags "-X
// github.com/snug-dev/snug/internal/version.Version=...". A binary built
// without those flags (go build, go test) says "dev". It imports nothing,
// so every binary may link it.
package version

// Version is set at link time; see the package comment.
var Version = "dev"

// Path is the package path that -ldflags -X sets Version through.
const Path = "github.com/snug-dev/snug/internal/version"
