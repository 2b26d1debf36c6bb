// Package image builds snug's container images with go-containerregistry:
// the lab's own images (busybox, the pause sandbox image and snug-load),
// which the lab imports into its containerd as an image archive, and the
// product images of snug-agent and snug-controller, which `make images`
// (snug-lab images) writes as an OCI layout and archives and pushes to a
// registry, and lab.PushImages pushes to the lab's registry.
//
// Every image is empty.Image plus one layer built from an in-memory file
// list (layerTar: go-containerregistry has no builder that keeps modes and
// symlinks) and its config. Output is reproducible: the layer's entries are
// sorted, owned by root and modified at the image's creation time (the
// commit time for product images, the Unix epoch for the lab's), so the
// same input always yields the same digest.
//
// It does not run containerd, ctr or a registry, and only snug-lab links
// it: product binaries never do (internal/depcheck.NotTheLab).
package image
