package admission

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the webhook's. Labels are bounded: the outcome only.
type Metrics struct {
	duration  prometheus.Histogram
	requests  *prometheus.CounterVec
	certReady prometheus.Gauge
	rotations *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "snug_admission_request_duration_seconds",
			Help: "Time the webhook took to answer one AdmissionReview, from request read to response written.",
			// The API server's timeout is seconds; a lookup in the caches
			// and a plan take well under a millisecond.
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1},
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snug_admission_requests_total",
			Help: "AdmissionReviews answered, by outcome (sized, unchanged, no_policy, mode_off, yields_to_vpa, no_history, refused, invalid).",
		}, []string{"outcome"}),
		certReady: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snug_admission_certificate_expiry_timestamp_seconds",
			Help: "When the serving certificate in use expires (Unix seconds); 0 before one is loaded.",
		}),
		rotations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snug_admission_certificate_rotations_total",
			Help: "Certificates written by the leader, by kind (ca: a new CA and serving certificate; serving: the serving certificate alone) and result (ok, error).",
		}, []string{"kind", "result"}),
	}
	reg.MustRegister(m.duration, m.requests, m.certReady, m.rotations)
	return m
}
