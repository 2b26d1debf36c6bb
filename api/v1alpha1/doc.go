// Package v1alpha1 holds the SnugPolicy API, group autoscaling.snug.dev,
// version v1alpha1: the Go types with their documentation and the
// kubebuilder markers from which `make generate` derives the deep copies
// (zz_generated.deepcopy.go) and the CustomResourceDefinition under
// config/crd. Field names follow the VerticalPodAutoscaler's where the two
// overlap.
//
// The package holds types and their registration only: no defaulting, no
// validation and no client code. Defaults and cross-field rules live in the
// markers, so the API server applies and enforces them; docs/policy.md lists
// them all.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.snug.dev
package v1alpha1
