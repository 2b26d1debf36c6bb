// Package httpauth guards snug's HTTP endpoints (the agent's /metrics and
// JSON API, the controller's /metrics) the way the kubelet and
// controller-runtime's secure metrics do: the request's bearer token is
// checked with a TokenReview (authentication.k8s.io/v1) and the token's
// user's right to the path with a SubjectAccessReview
// (authorization.k8s.io/v1, non-resource attributes: the path and the
// verb). RBAC then says who may read: snug's ClusterRole
// snug-metrics-reader grants get on /metrics and /snug/v1/*.
//
// Filter wraps a handler: 401 without a valid token, 403 when the API
// server denies, 503 when it cannot be asked (not cached, so the next
// request asks again). Results are cached for a short time in bounded LRU
// caches so that a Prometheus scrape every few seconds does not cost two
// API requests each time. Paths named open (health probes, which carry no
// token) are served without a check.
//
// APIReviewer asks the API server over any rest.Interface with JSON bodies
// and k8s.io/api's types, so it needs no scheme and no typed client: the
// agent, which must not link client-go's typed clients (their scheme
// registers every API group; cmd/snug-agent/deps_test.go), uses it over
// its core/v1 REST client.
//
// ServingOptions are the flags both binaries share (--auth, --tls,
// --tls-cert-file, --tls-private-key-file); TLSConfig serves HTTPS with a
// given certificate or a self-signed one made at start, so that bearer
// tokens do not cross the network in clear (docs/agent.md, "Security of
// the endpoints").
package httpauth
