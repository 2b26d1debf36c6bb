// Package deploy embeds the workloads that run snug in a cluster: the
// agent's DaemonSet and the controller's Deployment (with its
// PodDisruptionBudget and both components' Services), in namespace
// snug-system under the ServiceAccounts of config/rbac. `make generate`
// renders them from charts/snug with its default values. It decodes them
// and does nothing else; the package test checks their command lines
// against snug's own flags (docs/deploy.md).
package deploy
