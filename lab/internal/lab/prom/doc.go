// Package prom runs a real Prometheus (Debian's prometheus package, which
// the lab installs with its other packages) inside the lab's network
// namespace, scraping the in-cluster snug-agent and snug-controller the
// way the chart's PodMonitor would: every pod of the release's agent and
// controller, over HTTPS, with the bearer token of a ServiceAccount that
// the chart binds to snug-metrics-reader (monitoring.readerSubjects).
//
// Debian builds Prometheus without its Kubernetes service discovery
// (removed in 1.5.0+ds-1 "due to the insane amount of dependencies"), so
// the targets come from file_sd: Sync lists the pods through the API
// server and writes the file Prometheus watches, with the labels the
// Kubernetes discovery's relabelling would give (job, namespace, pod,
// component). Up syncs once; call Sync again after the pods changed.
//
// It owns its directory under the lab's (config, targets, token, TSDB) and
// the one process, recorded with the lab's add-ons so that the lab's Down
// stops it too. It does not own the ServiceAccount's binding (the chart's)
// or anything of snug.
package prom
