package client

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// SnugPolicyInterface is what SnugPolicies returns: Get, List, Watch,
// Create, Update, UpdateStatus, Delete, DeleteCollection and Patch (pass
// "status" as the subresource to patch status).
type SnugPolicyInterface = gentype.ClientWithList[*v1alpha1.SnugPolicy, *v1alpha1.SnugPolicyList]

// Client talks to the autoscaling.snug.dev/v1alpha1 API. It is safe for
// concurrent use.
type Client struct {
	rest rest.Interface
}

// Scheme knows the v1alpha1 types and the meta types their API returns.
// Other clients may use it to decode SnugPolicy objects; do not change it.
var Scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("registering v1alpha1: %v", err))
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}

var (
	codecs         = serializer.NewCodecFactory(Scheme)
	parameterCodec = runtime.NewParameterCodec(Scheme)
)

// NewForConfig returns a client for the API server that cfg names. It
// copies cfg; custom resources speak JSON only, so it asks for JSON whatever
// cfg says.
func NewForConfig(cfg *rest.Config) (*Client, error) {
	c := *cfg
	c.GroupVersion = &v1alpha1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(Scheme, codecs).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(&c)
	if err != nil {
		return nil, fmt.Errorf("making a client for %s: %w", v1alpha1.SchemeGroupVersion, err)
	}
	return &Client{rest: rc}, nil
}

// New returns a client that sends its requests through rc, which must be
// configured for autoscaling.snug.dev/v1alpha1 as NewForConfig does.
func New(rc rest.Interface) *Client { return &Client{rest: rc} }

// SnugPolicies returns a client for the policies in namespace; "" means
// every namespace (for List and Watch).
func (c *Client) SnugPolicies(namespace string) *SnugPolicyInterface {
	return gentype.NewClientWithList[*v1alpha1.SnugPolicy, *v1alpha1.SnugPolicyList](
		v1alpha1.SnugPolicyResource.Resource, c.rest, parameterCodec, namespace,
		func() *v1alpha1.SnugPolicy { return &v1alpha1.SnugPolicy{} },
		func() *v1alpha1.SnugPolicyList { return &v1alpha1.SnugPolicyList{} },
	)
}

// RESTClient returns the underlying REST client.
func (c *Client) RESTClient() rest.Interface { return c.rest }
