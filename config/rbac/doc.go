// Package rbac embeds snug's RBAC manifests: the snug-system namespace, the
// ServiceAccounts of the agent and the controller, their ClusterRoles and
// bindings, the controller's leader election Role, the ClusterRole
// snug-metrics-reader that readers of snug's endpoints are bound to, and
// the optional role of `snug-controller --install-crds`. All but
// namespace.yaml are charts/snug rendered by `make generate`. Each rule's
// comment in the YAML names the code that needs it; the package test keeps
// the rules and that list equal. It decodes the manifests and does nothing
// else (docs/deploy.md).
package rbac
