// Package upstream builds Go modules of other projects (VPA,
// metrics-server, helm) from the Go module proxy into the lab's cache
// directory, each in a throwaway module that requires only that module, so
// that snug's go.mod never sees them. A build is kept (marked complete) and
// reused until the cache is removed.
package upstream
