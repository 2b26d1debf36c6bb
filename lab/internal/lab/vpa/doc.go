// Package vpa runs upstream Vertical Pod Autoscaler (recommender, updater,
// admission controller) and metrics-server against the lab cluster, so that
// snug can be compared with VPA on the same cluster and workload.
//
// It builds both projects from the Go module proxy in throwaway modules
// under the cache directory (never in snug's go.mod), starts them as host
// processes recorded like the lab's own components (their PIDs with start
// times, their logs under the lab directory), installs VPA's CRDs from the
// module's own manifests, and wires what a cluster would: the
// metrics.k8s.io APIService and the admission webhook, both pointing at the
// host end of the lab's veth, where the processes listen.
//
// It does not own the lab (package lab brings the cluster up and down; its
// Down also stops these processes) and it does not run VPA inside pods.
package vpa
