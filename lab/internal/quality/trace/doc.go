// Package trace holds the workloads snug-lab bench quality replays: per
// second, what each container wants (CPU millicores, memory working-set
// bytes), with its starting requests, limits and resizePolicy. It makes a
// seeded synthetic corpus (Corpus, Generate) and reads two recorded
// formats: Alibaba's cluster-trace-v2018 container_usage CSV (ReadAlibaba)
// and snug's own recordings (ReadSnug: the JSON recording or the CSV that
// `snug trace` and the benches write). The agent's history (internal/
// history) holds histograms, not series, and cannot be replayed. It is pure: no clock, no files (readers take an io.Reader).
package trace
