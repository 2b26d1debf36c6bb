package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// The content types a component may ask the API server for
// (--kube-api-content-type): protobuf, the default of Kubernetes' own
// components (smaller and cheaper to decode, for the API server too), and
// JSON.
const (
	ContentTypeProtobuf = runtime.ContentTypeProtobuf
	ContentTypeJSON     = runtime.ContentTypeJSON
)

// CheckContentType refuses a content type other than those two, naming
// the flag.
func CheckContentType(ct string) error {
	if ct != ContentTypeProtobuf && ct != ContentTypeJSON {
		return fmt.Errorf("--kube-api-content-type %q: want %s or %s", ct, ContentTypeProtobuf, ContentTypeJSON)
	}
	return nil
}

// WithContentType returns a copy of cfg for clients of built-in types that
// sends and asks for ct; with protobuf, JSON is accepted too (what the API
// server answers for a type without protobuf). Custom resources have no
// protobuf: their clients keep cfg.
func WithContentType(cfg *rest.Config, ct string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = ct
	if ct == ContentTypeProtobuf {
		c.AcceptContentTypes = ContentTypeProtobuf + "," + ContentTypeJSON
	}
	return c
}
