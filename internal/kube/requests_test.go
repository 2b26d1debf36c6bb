package kube

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// TestRequestKind names requests as the API server's metrics do.
func TestRequestKind(t *testing.T) {
	for _, tc := range []struct {
		method, url, verb, resource string
	}{
		{"GET", "/api/v1/namespaces/ns/pods/p", "get", "pods"},
		{"GET", "/api/v1/namespaces/ns/pods", "list", "pods"},
		{"GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn&watch=true", "watch", "pods"},
		{"PATCH", "/api/v1/namespaces/ns/pods/p/resize", "patch", "pods/resize"},
		{"PATCH", "/api/v1/namespaces/ns/pods/p/status", "patch", "pods/status"},
		{"POST", "/api/v1/namespaces/ns/pods/p/eviction", "create", "pods/eviction"},
		{"POST", "/api/v1/namespaces/ns/events", "create", "events"},
		{"PUT", "/apis/autoscaling.snug.dev/v1alpha1/namespaces/ns/snugpolicies/pol/status", "update", "snugpolicies/status"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/snug-controller", "update", "leases"},
		{"GET", "/api/v1/namespaces/ns", "get", "namespaces"},
		{"GET", "/api/v1/nodes/n", "get", "nodes"},
		{"DELETE", "/api/v1/namespaces/ns/pods", "deletecollection", "pods"},
		{"DELETE", "/api/v1/namespaces/ns/pods/p", "delete", "pods"},
		{"GET", "/version", "list", ""},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if verb, res := RequestKind(tc.method, u); verb != tc.verb || res != tc.resource {
			t.Errorf("%s %s: %s %q, want %s %q", tc.method, tc.url, verb, res, tc.verb, tc.resource)
		}
	}
}

// TestCountRequests: a client built from the config counts each request
// it sends, by verb and resource.
func TestCountRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns"}}`))
	}))
	defer srv.Close()
	var mu sync.Mutex
	got := map[string]int{}
	cfg := &rest.Config{Host: srv.URL}
	CountRequests(cfg, func(verb, resource string) {
		mu.Lock()
		defer mu.Unlock()
		got[verb+" "+resource]++
	})
	c, err := NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := c.GetPod(ctx, "ns", "p", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.PatchPod(ctx, "ns", "p", types.JSONPatchType, []byte("[]"), metav1.PatchOptions{}, "resize"); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(map[string]int{"get pods": 1, "patch pods/resize": 2}, got); diff != "" {
		t.Errorf("counted (-want +got):\n%s", diff)
	}
}
