// Package trace records, second by second, how a pod's resources move
// during in-place resizes, and renders the recording.
//
// It owns:
//
//   - Recording: a plain value with a stable JSON form (Save, Load). Each
//     Sample holds, per container, the desired (spec), allocated (status
//     allocatedResources) and actual (status resources) cpu and memory
//     requests and limits, the resize conditions with reason, message and
//     observedGeneration, the pod's generation and observedGeneration, the
//     restart count and container ID, and usage when a UsageSource gives it.
//     Events lists the pod's events (the kubelet's, snug's, VPA's, any
//     source's) in the order they arrived.
//   - Recorder: follows one pod, or the pods of a label selector, in one
//     namespace. It takes a sample on every watch event and on every tick
//     of its clock (default every second), re-watches from the last
//     resourceVersion when the server or the client's timeout closes a
//     watch, re-lists when that version has expired, and lets pods join and
//     leave (a recreated pod joins the trace; a deleted one ends).
//   - Renderers, pure functions of a Recording: WriteTable (the rows where
//     something changed, "t+3.4s  what changed"), WriteCSV (one row per
//     sample per container) and WriteSVG (a self-contained picture: one
//     panel per container and resource with desired, allocated, actual and
//     usage step lines, the Deferred, Infeasible, InProgress and Error spans
//     shaded, restarts and marks drawn, and a list of what happened).
//
// It does not resize anything, decide anything or read cgroups: usage comes
// from a UsageSource (the node agent can serve one). It reuses
// internal/resize's State for the three views of a container and the
// outcome classification.
//
// A Recorder is safe for concurrent use; the renderers keep no state.
package trace
