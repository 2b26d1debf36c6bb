// Package trace holds the workloads snug-lab bench quality replays: per
// second, what each container wants (CPU millicores, memory working-set
// bytes), with its starting requests, limits and resizePolicy. It makes a
// seeded synthetic corpus (Corpus, Generate) and reads two recorded
// formats: Alibaba's cluster-trace-v2018 container_usage CSV (ReadAlibaba)
// and snug's own trace CSV (ReadSnugCSV, what `snug trace` and the benches
// write). It is pure: no clock, no files (readers take an io.Reader).
package trace
