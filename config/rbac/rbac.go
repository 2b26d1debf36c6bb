package rbac

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Names the manifests give, for code that runs snug with them.
const (
	// Namespace holds the ServiceAccounts, the workloads and the Lease.
	Namespace = "snug-system"
	// AgentServiceAccount is the agent's ServiceAccount in Namespace.
	AgentServiceAccount = "snug-agent"
	// ControllerServiceAccount is the controller's ServiceAccount in
	// Namespace.
	ControllerServiceAccount = "snug-controller"
	// MetricsReaderClusterRole may get the agent's /metrics and /snug/v1/*
	// and the controller's /metrics (metrics_reader.yaml); bind readers
	// to it.
	MetricsReaderClusterRole = "snug-metrics-reader"
)

//go:embed namespace.yaml agent.yaml controller.yaml metrics_reader.yaml controller_install_crds.yaml
var files embed.FS

// Files are the embedded manifests of Default, in the order to apply them.
var Files = []string{"namespace.yaml", "agent.yaml", "controller.yaml", MetricsReaderFile}

// MetricsReaderFile holds the ClusterRole MetricsReaderClusterRole.
const MetricsReaderFile = "metrics_reader.yaml"

// InstallCRDsFile is the optional manifest of `snug-controller
// --install-crds`.
const InstallCRDsFile = "controller_install_crds.yaml"

// Objects are decoded manifests, by kind. Apply them in field order.
type Objects struct {
	Namespaces          []*corev1.Namespace
	ServiceAccounts     []*corev1.ServiceAccount
	ClusterRoles        []*rbacv1.ClusterRole
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
	Roles               []*rbacv1.Role
	RoleBindings        []*rbacv1.RoleBinding
}

// Default returns fresh copies of what `kubectl apply -k config/` installs
// besides the CRD and the workloads. The caller may change them.
func Default() (*Objects, error) {
	return Decode(Files...)
}

// InstallCRDs returns fresh copies of the optional ClusterRole and binding
// that let the controller install the SnugPolicy CRD.
func InstallCRDs() (*Objects, error) {
	return Decode(InstallCRDsFile)
}

// Decode decodes the named embedded manifests, strictly: an unknown field
// or kind is an error.
func Decode(names ...string) (*Objects, error) {
	o := &Objects{}
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		if err := o.add(data); err != nil {
			return nil, fmt.Errorf("decoding the embedded %s: %w", name, err)
		}
	}
	return o, nil
}

func (o *Objects) add(data []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var head struct{ Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return err
		}
		switch head.Kind {
		case "":
			continue // only comments
		case "Namespace":
			err = decode(doc, &o.Namespaces)
		case "ServiceAccount":
			err = decode(doc, &o.ServiceAccounts)
		case "ClusterRole":
			err = decode(doc, &o.ClusterRoles)
		case "ClusterRoleBinding":
			err = decode(doc, &o.ClusterRoleBindings)
		case "Role":
			err = decode(doc, &o.Roles)
		case "RoleBinding":
			err = decode(doc, &o.RoleBindings)
		default:
			err = fmt.Errorf("unexpected kind %q", head.Kind)
		}
		if err != nil {
			return err
		}
	}
}

func decode[T any](doc []byte, into *[]*T) error {
	var v T
	if err := yaml.UnmarshalStrict(doc, &v); err != nil {
		return err
	}
	*into = append(*into, &v)
	return nil
}
