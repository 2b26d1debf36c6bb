// Package crd embeds the CustomResourceDefinitions that `make generate`
// writes into this directory from api/v1alpha1, so that snug installs
// exactly what it was built with. It decodes them and does nothing else;
// internal/install puts them into a cluster.
package crd
