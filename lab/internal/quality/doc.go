// Package quality replays workload traces (lab/internal/quality/trace) on a
// model of the node (lab/internal/quality/node) under four sizing policies and
// measures how well each sizes: snug (the real internal/recommend and
// internal/resize code, fed the signals the agent computes, every second),
// VPA 1.8.1 (its own recommender and updater code, in the separate module
// tools/vpareplay, fed metrics-server's 15 s samples once a minute), the
// static requests as written, and a KRR-style fixed recommendation.
//
// It backs snug-lab bench quality; docs/quality.md describes the model and
// each figure. calibrate.go compares the model with a lab run of the same
// trace (--calibrate; the run itself is internal/experiment's Calibrate):
// the lab's measured seconds go through the replay's own accumulation, and
// each figure is checked against a stated tolerance.
package quality
