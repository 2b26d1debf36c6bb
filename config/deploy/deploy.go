package deploy

import (
	_ "embed"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

var (
	//go:embed agent.yaml
	agent []byte
	//go:embed controller.yaml
	controller []byte
)

// Agent returns a fresh copy of the agent's DaemonSet. The caller may
// change it.
func Agent() (*appsv1.DaemonSet, error) {
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(agent, &ds); err != nil {
		return nil, fmt.Errorf("decoding the embedded agent DaemonSet: %w", err)
	}
	return &ds, nil
}

// Controller returns a fresh copy of the controller's Deployment. The
// caller may change it.
func Controller() (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(controller, &d); err != nil {
		return nil, fmt.Errorf("decoding the embedded controller Deployment: %w", err)
	}
	return &d, nil
}
