// Package install puts snug's CustomResourceDefinitions into a cluster and
// takes them out again: it applies each CRD (create or upgrade, by
// server-side apply), waits until the API server serves it, and on
// uninstall waits until it is gone. It owns no CRD content (config/crd
// does) and nothing else about a cluster.
package install
