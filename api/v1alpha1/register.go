package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of snug's resources.
const GroupName = "autoscaling.snug.dev"

var (
	// SchemeGroupVersion is the group and version of the types in this package.
	SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

	// SnugPolicyResource names the snugpolicies resource, for dynamic clients
	// and informers.
	SnugPolicyResource = SchemeGroupVersion.WithResource("snugpolicies")

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds SnugPolicy and SnugPolicyList, and the meta types a
	// client of this group version needs, to a scheme. Its signature fits
	// controller-runtime's scheme builders as well as client-go's.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource qualifies a resource name with this package's group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &SnugPolicy{}, &SnugPolicyList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
