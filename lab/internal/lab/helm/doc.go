// Package helm provides the helm CLI that snug's chart tests, the e2e
// install and the demo run: helm.sh/helm/v3 built from the Go module proxy
// into the lab's cache directory (package upstream), never a binary found on
// PATH, so every machine renders the chart with the same helm.
//
// Helm 3 rather than 4: it is what users and the upstream VPA chart target
// today, and the chart uses nothing of Helm 4.
package helm
