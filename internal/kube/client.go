package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
)

// Scheme knows core/v1 and the meta types (options, Status) its API uses,
// and nothing else.
var Scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("registering core/v1: %v", err))
	}
	metav1.AddToGroupVersion(s, corev1.SchemeGroupVersion)
	return s
}

var (
	codecs         = serializer.NewCodecFactory(Scheme)
	parameterCodec = runtime.NewParameterCodec(Scheme)
)

// Pods, Nodes, Namespaces, ConfigMaps, Events, ResourceQuotas and
// LimitRanges are client-go's generic
// typed clients for those resources: Get, List, Watch, Create, Update,
// Delete, DeleteCollection and Patch, as the typed core/v1 client has them.
type (
	Pods           = gentype.ClientWithList[*corev1.Pod, *corev1.PodList]
	Nodes          = gentype.ClientWithList[*corev1.Node, *corev1.NodeList]
	Namespaces     = gentype.ClientWithList[*corev1.Namespace, *corev1.NamespaceList]
	ConfigMaps     = gentype.ClientWithList[*corev1.ConfigMap, *corev1.ConfigMapList]
	Events         = gentype.ClientWithList[*corev1.Event, *corev1.EventList]
	ResourceQuotas = gentype.ClientWithList[*corev1.ResourceQuota, *corev1.ResourceQuotaList]
	LimitRanges    = gentype.ClientWithList[*corev1.LimitRange, *corev1.LimitRangeList]
)

// Client talks to the core/v1 API. It is safe for concurrent use.
type Client struct {
	rest rest.Interface
}

// NewForConfig returns a client for the API server that cfg names. It
// copies cfg and sets what client-go's typed core/v1 client sets (group
// version v1 under /api, a serializer without conversion); cfg's content
// type, rate limits and timeout are kept.
func NewForConfig(cfg *rest.Config) (*Client, error) {
	c := *cfg
	gv := corev1.SchemeGroupVersion
	c.GroupVersion = &gv
	c.APIPath = "/api"
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme, codecs).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(&c)
	if err != nil {
		return nil, fmt.Errorf("making a client for core/v1: %w", err)
	}
	return &Client{rest: rc}, nil
}

// New returns a client that sends its requests through rc, which must be
// configured for core/v1 as NewForConfig does; a typed clientset's
// CoreV1().RESTClient() is (its serializer knows every API group, which a
// binary that links the clientset has anyway).
func New(rc rest.Interface) *Client { return &Client{rest: rc} }

// RESTClient returns the underlying REST client.
func (c *Client) RESTClient() rest.Interface { return c.rest }

// Pods returns a client for the pods in namespace; "" means every
// namespace (for List and Watch).
func (c *Client) Pods(namespace string) *Pods {
	return gentype.NewClientWithList[*corev1.Pod, *corev1.PodList]("pods", c.rest, parameterCodec, namespace,
		func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} })
}

// Nodes returns a client for nodes.
func (c *Client) Nodes() *Nodes {
	return gentype.NewClientWithList[*corev1.Node, *corev1.NodeList]("nodes", c.rest, parameterCodec, "",
		func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} })
}

// Namespaces returns a client for namespaces.
func (c *Client) Namespaces() *Namespaces {
	return gentype.NewClientWithList[*corev1.Namespace, *corev1.NamespaceList]("namespaces", c.rest, parameterCodec, "",
		func() *corev1.Namespace { return &corev1.Namespace{} }, func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
}

// ConfigMaps returns a client for the configmaps in namespace.
func (c *Client) ConfigMaps(namespace string) *ConfigMaps {
	return gentype.NewClientWithList[*corev1.ConfigMap, *corev1.ConfigMapList]("configmaps", c.rest, parameterCodec, namespace,
		func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}

// Events returns a client for the events in namespace.
func (c *Client) Events(namespace string) *Events {
	return gentype.NewClientWithList[*corev1.Event, *corev1.EventList]("events", c.rest, parameterCodec, namespace,
		func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
}

// ResourceQuotas returns a client for the resource quotas in namespace; ""
// means every namespace (for List and Watch).
func (c *Client) ResourceQuotas(namespace string) *ResourceQuotas {
	return gentype.NewClientWithList[*corev1.ResourceQuota, *corev1.ResourceQuotaList]("resourcequotas", c.rest, parameterCodec, namespace,
		func() *corev1.ResourceQuota { return &corev1.ResourceQuota{} }, func() *corev1.ResourceQuotaList { return &corev1.ResourceQuotaList{} })
}

// LimitRanges returns a client for the limit ranges in namespace; ""
// means every namespace (for List and Watch).
func (c *Client) LimitRanges(namespace string) *LimitRanges {
	return gentype.NewClientWithList[*corev1.LimitRange, *corev1.LimitRangeList]("limitranges", c.rest, parameterCodec, namespace,
		func() *corev1.LimitRange { return &corev1.LimitRange{} }, func() *corev1.LimitRangeList { return &corev1.LimitRangeList{} })
}

// The methods below are actuate.Client's.

// GetPod reads a pod.
func (c *Client) GetPod(ctx context.Context, namespace, name string, opts metav1.GetOptions) (*corev1.Pod, error) {
	return c.Pods(namespace).Get(ctx, name, opts)
}

// ListPods lists the pods in namespace ("" for all) that opts select.
func (c *Client) ListPods(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error) {
	return c.Pods(namespace).List(ctx, opts)
}

// WatchPods watches the pods in namespace ("" for all) that opts select.
func (c *Client) WatchPods(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	return c.Pods(namespace).Watch(ctx, opts)
}

// PatchPod patches a pod, or its subresource (for example "resize").
func (c *Client) PatchPod(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error) {
	return c.Pods(namespace).Patch(ctx, name, pt, data, opts, subresources...)
}

// GetNode reads a node.
func (c *Client) GetNode(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error) {
	return c.Nodes().Get(ctx, name, opts)
}

// GetNamespace reads a namespace.
func (c *Client) GetNamespace(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Namespace, error) {
	return c.Namespaces().Get(ctx, name, opts)
}

// StripManagedFields is an informer transform that drops managedFields,
// which neither the agent nor the controller reads, from cached objects.
func StripManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.ObjectMetaAccessor); ok {
		m.GetObjectMeta().SetManagedFields(nil)
	}
	return obj, nil
}
