// Package chart embeds the snug Helm chart in this directory (Files,
// WriteTo: the lab's demo and benches install the chart they were built
// with) and holds its tests
// (charts/snug): helm lint, helm template with default and with every
// optional value, decoded with the Kubernetes API types, bad values refused,
// and config/ equal to the chart's default rendering. They run the helm CLI
// that `make helm` builds into the cache (internal/lab/helm). The chart
// itself is the YAML around this file; .helmignore leaves the Go out of it.
package chart
