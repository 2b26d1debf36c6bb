package vpa

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// fieldManager owns what Up applies.
const fieldManager = "snug-lab-vpa"

const (
	metricsNamespace = "kube-system"
	metricsService   = "metrics-server"
	metricsAPI       = "v1beta1.metrics.k8s.io"
	// webhookConfig is the MutatingWebhookConfiguration VPA's admission
	// controller registers itself as (webhookConfigName upstream).
	webhookConfig = "vpa-webhook-config"
)

var (
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	// VPAResource is the VerticalPodAutoscaler resource the CRDs install.
	VPAResource = schema.GroupVersionResource{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalers"}
)

// readManifests decodes every object of a multi-document YAML file.
func readManifests(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading manifests: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// applyCRDs server-side applies VPA's CRDs and returns their names.
func applyCRDs(ctx context.Context, dyn dynamic.Interface, path string) ([]string, error) {
	objs, err := readManifests(path)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			return nil, fmt.Errorf("applying %s: unexpected %s %s", path, u.GetKind(), u.GetName())
		}
		data, err := u.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("applying CRD %s: %w", u.GetName(), err)
		}
		_, err = dyn.Resource(crdGVR).Patch(ctx, u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)})
		if err != nil {
			return nil, fmt.Errorf("applying CRD %s: %w", u.GetName(), err)
		}
		names = append(names, u.GetName())
	}
	return names, nil
}

// hasCondition reports whether obj's status has condition typ at "True".
func hasCondition(obj *unstructured.Unstructured, typ string) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			msg, _ := m["message"].(string)
			return m["status"] == "True", msg
		}
	}
	return false, "no " + typ + " condition"
}

// applyMetricsAPI points metrics.k8s.io at metrics-server on the host: a
// Service without selector whose one EndpointSlice is hostIP:port (the lab
// has no kube-proxy; the API server, started with
// --enable-aggregator-routing, dials the endpoint itself), and the
// APIService of metrics-server's own manifests.
func applyMetricsAPI(ctx context.Context, c kubernetes.Interface, dyn dynamic.Interface, hostIP string, port int) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: metricsService, Namespace: metricsNamespace, Labels: map[string]string{"k8s-app": "metrics-server"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(int32(port)),
		}}},
	}
	if _, err := c.CoreV1().Services(metricsNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the metrics-server service: %w", err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: metricsService, Namespace: metricsNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: metricsService,
			discoveryv1.LabelManagedBy:   fieldManager,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{hostIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	slices := c.DiscoveryV1().EndpointSlices(metricsNamespace)
	if _, err := slices.Create(ctx, slice, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		old, gerr := slices.Get(ctx, metricsService, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("updating the metrics-server endpoints: %w", gerr)
		}
		slice.ResourceVersion = old.ResourceVersion
		_, err = slices.Update(ctx, slice, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("updating the metrics-server endpoints: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("creating the metrics-server endpoints: %w", err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": metricsAPI, "labels": map[string]any{"k8s-app": "metrics-server"}},
		"spec": map[string]any{
			"service":               map[string]any{"name": metricsService, "namespace": metricsNamespace, "port": int64(443)},
			"group":                 "metrics.k8s.io",
			"version":               "v1beta1",
			"insecureSkipTLSVerify": true,
			"groupPriorityMinimum":  int64(100),
			"versionPriority":       int64(100),
		},
	}}
	data, err := apiService.MarshalJSON()
	if err != nil {
		return fmt.Errorf("applying the metrics APIService: %w", err)
	}
	if _, err := dyn.Resource(apiServiceGVR).Patch(ctx, metricsAPI, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)}); err != nil {
		return fmt.Errorf("applying the metrics APIService: %w", err)
	}
	return nil
}

// deleteRegistrations removes what sends the API server to processes that
// no longer run: the metrics APIService (an unavailable aggregated API
// breaks discovery, and with it namespace deletion), the webhook, and the
// service and endpoints. The CRDs and VPA objects stay.
func deleteRegistrations(ctx context.Context, c kubernetes.Interface, dyn dynamic.Interface) error {
	ignore := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	return errors.Join(
		ignore(dyn.Resource(apiServiceGVR).Delete(ctx, metricsAPI, metav1.DeleteOptions{})),
		ignore(c.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, webhookConfig, metav1.DeleteOptions{})),
		ignore(c.DiscoveryV1().EndpointSlices(metricsNamespace).Delete(ctx, metricsService, metav1.DeleteOptions{})),
		ignore(c.CoreV1().Services(metricsNamespace).Delete(ctx, metricsService, metav1.DeleteOptions{})),
	)
}
