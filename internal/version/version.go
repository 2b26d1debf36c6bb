package version

// Version is set at link time; see the package comment.
var Version = "dev"
