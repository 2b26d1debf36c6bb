// Package convert turns VerticalPodAutoscaler objects (autoscaling.k8s.io/v1,
// as of VPA 1.8.1) into the equivalent SnugPolicies, and says of every VPA
// field that does not map what snug does instead. It holds a small typed
// mirror of the VPA v1 fields (vpa.go) so that snug's module needs no
// upstream VPA code; the controller reads VPA objects through the same
// mirror to spot a VPA and a SnugPolicy acting on the same pods.
//
// It is pure: no client-go, no clock. Reading VPAs from a cluster and
// applying the policies is the CLI's (internal/cli, snug convert vpa).
package convert
