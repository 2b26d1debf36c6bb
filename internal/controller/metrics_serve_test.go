package controller

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// TestMetricsHandler: /metrics serves snug's series beside client-go's
// workqueue series (component-base's provider) and the process
// collector, without a duplicate family (which would fail the scrape).
func TestMetricsHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "snugpolicy-metrics-test"})
	defer q.ShutDown()
	q.Add("ns/p")
	rec := httptest.NewRecorder()
	metricsHandler(reg).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d: %s", rec.Code, body)
	}
	for _, want := range []string{`workqueue_depth{name="snugpolicy-metrics-test"} 1`, "workqueue_adds_total", "process_cpu_seconds_total", "snug_controller_leader"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
