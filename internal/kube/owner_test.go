package kube_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/internal/kube"
)

func TestWithOwner(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "snug-controller", UID: "new"}
	old := owner
	old.UID = "old"
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "snug-controller", UID: "cm"}
	for _, c := range []struct {
		name    string
		in      []metav1.OwnerReference
		want    []metav1.OwnerReference
		changed bool
	}{
		{"none", nil, []metav1.OwnerReference{owner}, true},
		{"already", []metav1.OwnerReference{other, owner}, []metav1.OwnerReference{other, owner}, false},
		{"an earlier install's", []metav1.OwnerReference{old, other}, []metav1.OwnerReference{other, owner}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := append([]metav1.OwnerReference(nil), c.in...)
			got, changed := kube.WithOwner(in, owner)
			if diff := cmp.Diff(c.want, got); diff != "" || changed != c.changed {
				t.Errorf("WithOwner: changed %v (want %v), refs (-want +got):\n%s", changed, c.changed, diff)
			}
			if diff := cmp.Diff(c.in, in); diff != "" {
				t.Errorf("WithOwner modified its input (-before +after):\n%s", diff)
			}
		})
	}
}
