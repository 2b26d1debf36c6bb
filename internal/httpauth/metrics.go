package httpauth

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Label values.
const (
	reviewToken  = "token"
	reviewAccess = "access"

	resultAllowed         = "allowed"
	resultUnauthenticated = "unauthenticated"
	resultForbidden       = "forbidden"
	resultError           = "error"
)

// Metrics count what the filter asked the API server and what it decided.
// A nil *Metrics counts nothing.
type Metrics struct {
	reviews   *prometheus.CounterVec
	cacheHits *prometheus.CounterVec
	requests  *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snug_http_auth_reviews_total",
			Help: "Reviews sent to the API server: review token (TokenReview) or access (SubjectAccessReview), by result (allowed, denied, error).",
		}, []string{"review", "result"}),
		cacheHits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snug_http_auth_cache_hits_total",
			Help: "Reviews answered from the cache instead of the API server, by review (token, access).",
		}, []string{"review"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snug_http_auth_requests_total",
			Help: "Requests to guarded paths, by result: allowed, unauthenticated (401), forbidden (403), error (503: the API server could not be asked).",
		}, []string{"result"}),
	}
	for _, r := range []string{reviewToken, reviewAccess} {
		for _, res := range []string{"allowed", "denied", "error"} {
			m.reviews.WithLabelValues(r, res)
		}
		m.cacheHits.WithLabelValues(r)
	}
	for _, res := range []string{resultAllowed, resultUnauthenticated, resultForbidden, resultError} {
		m.requests.WithLabelValues(res)
	}
	reg.MustRegister(m.reviews, m.cacheHits, m.requests)
	return m
}

func (m *Metrics) review(review string, allowed bool, err error) {
	if m == nil {
		return
	}
	res := "denied"
	switch {
	case err != nil:
		res = "error"
	case allowed:
		res = "allowed"
	}
	m.reviews.WithLabelValues(review, res).Inc()
}

func (m *Metrics) cacheHit(review string) {
	if m != nil {
		m.cacheHits.WithLabelValues(review).Inc()
	}
}

func (m *Metrics) decision(result string) {
	if m != nil {
		m.requests.WithLabelValues(result).Inc()
	}
}
