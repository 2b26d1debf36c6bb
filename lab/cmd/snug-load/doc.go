// Command snug-load is the lab's workload: it burns a given number of CPU
// millicores and holds a given amount of touched memory (and, with
// --cache, keeps re-reading a file of a given size: a page-cache working
// set), all changeable at
// run time through a control directory or HTTP, so that snug's resizes can
// be driven and watched. It is static (CGO_ENABLED=0) and imports only the
// standard library and internal/loadgen, since it runs in a hand-made image
// with no C library:
//
//	CGO_ENABLED=0 go build -o bin/snug-load ./cmd/snug-load
//
// Usage:
//
//	snug-load [--cpu 300m] [--memory 100Mi] [--cache 64Mi [--cache-dir DIR]] [--control-dir /control]
//	          [--listen :8080] [--marker PATH] [--pod-name NAME]
//	snug-load pause
//	snug-load mirror-cgroups --to DIR [--from /sys/fs/cgroup] [--sub kubepods.slice] [--interval 100ms]
//	          [--heartbeat FILE]
//
// With pause it is the pod sandbox's PID 1: it reaps orphans and exits 0 on
// SIGTERM or SIGINT. With mirror-cgroups it copies the cgroup files snug
// reads, of the root and of every cgroup under --sub, to DIR until it is
// stopped: the lab's cgroup-v2 node (a User-Mode Linux guest) runs it so
// that the host can read its pods' cgroups (loadgen.MirrorCgroups), and
// with --heartbeat writes the time to FILE once a second, which tells the
// host that the guest still runs.
package main
