package crd

import (
	_ "embed"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed autoscaling.snug.dev_snugpolicies.yaml
var snugPolicies []byte

// SnugPolicies returns a fresh copy of the snugpolicies.autoscaling.snug.dev
// CRD. The caller may change it.
func SnugPolicies() (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(snugPolicies, &crd); err != nil {
		return nil, fmt.Errorf("decoding the embedded snugpolicies CRD: %w", err)
	}
	return &crd, nil
}

// All returns every CRD snug needs, in the order to install them.
func All() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	p, err := SnugPolicies()
	if err != nil {
		return nil, err
	}
	return []*apiextensionsv1.CustomResourceDefinition{p}, nil
}
