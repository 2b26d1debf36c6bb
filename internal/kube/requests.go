package kube

import (
	"net/http"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"
)

// CountRequests makes the clients built from cfg call count with the verb
// and resource of every request they send (RequestKind), before it is
// sent: what a component asks of the API server, counted where it asks,
// for its own metrics (snug_agent_api_requests_total,
// snug_controller_api_requests_total).
func CountRequests(cfg *rest.Config, count func(verb, resource string)) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, count: count} })
}

type countingTransport struct {
	next  http.RoundTripper
	count func(verb, resource string)
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	verb, resource := RequestKind(r.Method, r.URL)
	t.count(verb, resource)
	return t.next.RoundTrip(r)
}

// RequestKind names a request to the API server as the API server's own
// request metrics do: the verb (get, list, watch, create, update, patch,
// delete, deletecollection) and the resource, with its subresource
// ("pods", "pods/resize", "pods/status", "snugpolicies/status"). A path
// that names no resource (discovery, /version) is resource "".
func RequestKind(method string, u *url.URL) (verb, resource string) {
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		segs = nil
	}
	if len(segs) >= 3 && segs[0] == "namespaces" {
		segs = segs[2:]
	}
	var name string
	if len(segs) > 0 {
		resource = segs[0]
	}
	if len(segs) > 1 {
		name = segs[1]
	}
	if len(segs) > 2 {
		resource += "/" + segs[2]
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case u.Query().Get("watch") == "true" || u.Query().Get("watch") == "1":
			verb = "watch"
		case name != "":
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if name == "" {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(method)
	}
	return verb, resource
}
