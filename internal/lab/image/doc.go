// Package image writes the lab's container images as OCI image-layout tar
// archives (oci-layout, index.json, blobs/sha256/...) that
// `ctr -n k8s.io images import` (containerd 1.6) accepts and names with the
// image's full reference, since the lab cluster cannot reach any registry.
//
// Each image is one layer built from an in-memory file list. Output is
// deterministic: fixed modification times, root ownership and sorted entries,
// so the same input always yields the same digests.
//
// It owns the archive format and the lab's three images (busybox, the pause
// sandbox image and snug-load). It does not run containerd or ctr: importing
// the archives is the lab's job.
package image
