// Package cgroup reads a container's resource counters from the Linux cgroup
// filesystem, for cgroup v1, v2 and the hybrid layout, and turns two readings
// into rates.
//
// It owns three things:
//
//   - Parsing. One pure function per cgroup file format (ParseCPUStatV2,
//     ParseMemoryMax, ParsePressure, ParseMemoryOOMControl, ...). Each reads
//     an io.Reader and never touches the filesystem. Missing keys read as
//     zero, unknown keys are skipped, and "max" means unlimited. A malformed
//     number gives a *ParseError that names the file and the key.
//   - Layout. Reader detects whether a root such as /sys/fs/cgroup is unified
//     (v2), v1 or hybrid. Find and FindPod turn a pod UID, QoS class and CRI
//     container ID into the cgroup directories the kubelet and the runtime
//     created, for the cgroupfs and systemd drivers and for containerd,
//     CRI-O and cri-dockerd naming. Reader.Read reads one Path into a Sample
//     with the same meaning on every version. A Handle (Reader.Open) keeps
//     the files open and re-reads them with one pread each. This is the form
//     for a loop that samples every second: 0 allocations and about a
//     quarter of the syscalls.
//   - Derivation. Rate is pure. It turns two Samples into Signals: CPU
//     millicores, throttling, OOM kills, working set, headroom and pressure.
//
// It does not own the sampling loop, the choice of containers to watch,
// caching of Paths, or any policy about what a signal means (when a container
// is starving, how much to resize it). Those belong to internal/agent and
// internal/recommend. It does not write to cgroups: resizes go through the
// kubelet.
//
// A container that exits while it is being read is a normal event. Read then
// returns an error that matches ErrGone. On cgroupfs a kept-open file of a
// removed cgroup fails with ENODEV, and that matches ErrGone too.
package cgroup
