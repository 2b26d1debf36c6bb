package kube

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WithOwner returns refs with owner in place of any reference to an object
// of owner's kind and name (an earlier install's, with another UID), and
// whether that changed anything. refs is not modified.
func WithOwner(refs []metav1.OwnerReference, owner metav1.OwnerReference) ([]metav1.OwnerReference, bool) {
	if slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == owner.UID }) {
		return refs, false
	}
	out := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool {
		return r.Kind == owner.Kind && r.APIVersion == owner.APIVersion && r.Name == owner.Name
	})
	return append(out, owner), true
}
