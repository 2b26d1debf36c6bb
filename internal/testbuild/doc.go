// Package testbuild builds the Kubernetes and snug objects that unit tests
// of several packages need (pods, policies, workloads), as VPA's
// pkg/utils/test does: one set of builders, so each test says only what
// matters to it. Tests only; no product package imports it.
package testbuild
