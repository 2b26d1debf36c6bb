package scale

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/recommend"
)

func TestFitLine(t *testing.T) {
	l := FitLine([]float64{50, 100, 200}, []float64{7, 12, 22})
	if math.Abs(l.A-2) > 1e-9 || math.Abs(l.B-0.1) > 1e-9 {
		t.Errorf("FitLine = %+v, want A 2, B 0.1", l)
	}
	if got := l.At(1000); math.Abs(got-102) > 1e-9 {
		t.Errorf("At(1000) = %v, want 102", got)
	}
	if l := FitLine([]float64{50}, []float64{5}); l.At(100) != 10 {
		t.Errorf("one point: At(100) = %v, want 10 (through the origin)", l.At(100))
	}
}

func TestHistogramQuantile(t *testing.T) {
	before := map[float64]float64{0.1: 10, 0.5: 10, 1: 10, math.Inf(1): 10}
	// 100 more requests: 90 under 0.1s, 9 in (0.1, 0.5], 1 in (0.5, 1].
	after := map[float64]float64{0.1: 100, 0.5: 109, 1: 110, math.Inf(1): 110}
	if got := histogramQuantile(0.5, before, after); math.Abs(got-0.1*50/90) > 1e-9 {
		t.Errorf("p50 = %v, want %v", got, 0.1*50/90)
	}
	if got := histogramQuantile(0.99, before, after); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("p99 = %v, want 0.5 (the 99th request is the last of (0.1, 0.5])", got)
	}
	if got := histogramQuantile(0.99, after, after); !math.IsNaN(got) {
		t.Errorf("no requests: %v, want NaN", got)
	}
}

const apiBefore = `# TYPE apiserver_request_total counter
apiserver_request_total{verb="GET",resource="pods",code="200"} 100
apiserver_request_total{verb="PATCH",resource="pods",code="200"} 10
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="PATCH",le="0.05"} 10
apiserver_request_duration_seconds_bucket{verb="PATCH",le="0.1"} 10
apiserver_request_duration_seconds_bucket{verb="PATCH",le="+Inf"} 10
apiserver_request_duration_seconds_sum{verb="PATCH"} 0.1
apiserver_request_duration_seconds_count{verb="PATCH"} 10
apiserver_request_duration_seconds_bucket{verb="GET",le="0.05"} 100
apiserver_request_duration_seconds_bucket{verb="GET",le="0.1"} 100
apiserver_request_duration_seconds_bucket{verb="GET",le="+Inf"} 100
apiserver_request_duration_seconds_sum{verb="GET"} 1
apiserver_request_duration_seconds_count{verb="GET"} 100
`

const apiAfter = `# TYPE apiserver_watch_events_sizes histogram
apiserver_watch_events_sizes_bucket{group="",resource="pods",version="v1",le="4096"} 10
apiserver_watch_events_sizes_bucket{group="",resource="pods",version="v1",le="+Inf"} 10
apiserver_watch_events_sizes_sum{group="",resource="pods",version="v1"} 30000
apiserver_watch_events_sizes_count{group="",resource="pods",version="v1"} 10
# TYPE apiserver_request_body_size_bytes histogram
apiserver_request_body_size_bytes_bucket{group="",resource="events",verb="create",le="+Inf"} 4
apiserver_request_body_size_bytes_sum{group="",resource="events",verb="create"} 4000
apiserver_request_body_size_bytes_count{group="",resource="events",verb="create"} 4
apiserver_request_body_size_bytes_bucket{group="",resource="events",verb="patch",le="+Inf"} 1
apiserver_request_body_size_bytes_sum{group="",resource="events",verb="patch"} 100
apiserver_request_body_size_bytes_count{group="",resource="events",verb="patch"} 1
apiserver_request_body_size_bytes_bucket{group="",resource="pods",verb="create",le="+Inf"} 1
apiserver_request_body_size_bytes_sum{group="",resource="pods",verb="create"} 500
apiserver_request_body_size_bytes_count{group="",resource="pods",verb="create"} 1
# TYPE apiserver_request_total counter
apiserver_request_total{verb="GET",resource="pods",code="200"} 700
apiserver_request_total{verb="PATCH",resource="pods",code="200"} 70
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{verb="PATCH",le="0.05"} 10
apiserver_request_duration_seconds_bucket{verb="PATCH",le="0.1"} 70
apiserver_request_duration_seconds_bucket{verb="PATCH",le="+Inf"} 70
apiserver_request_duration_seconds_sum{verb="PATCH"} 5
apiserver_request_duration_seconds_count{verb="PATCH"} 70
apiserver_request_duration_seconds_bucket{verb="GET",le="0.05"} 700
apiserver_request_duration_seconds_bucket{verb="GET",le="0.1"} 700
apiserver_request_duration_seconds_bucket{verb="GET",le="+Inf"} 700
apiserver_request_duration_seconds_sum{verb="GET"} 7
apiserver_request_duration_seconds_count{verb="GET"} 700
`

func TestFiguresFromScrapes(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	ctl := func(patches, cpu, rss float64) string {
		return "# TYPE snug_controller_api_requests_total counter\n" +
			`snug_controller_api_requests_total{verb="patch",resource="snugpolicies/status"} ` + ftoa(patches) + "\n" +
			`snug_controller_api_requests_total{verb="list",resource="pods"} 5` + "\n" +
			"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total " + ftoa(cpu) + "\n" +
			"# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes " + ftoa(rss) + "\n" +
			"# TYPE snug_controller_reconciles_total counter\n" +
			`snug_controller_reconciles_total{result="ok"} ` + ftoa(patches*2) + "\n" +
			"# TYPE workqueue_depth gauge\n" +
			`workqueue_depth{name="snugpolicy_status"} 1` + "\n" + `workqueue_depth{name="snugpolicy_checkpoints"} 2` + "\n" + `workqueue_depth{name="other"} 100` + "\n" +
			"# TYPE workqueue_queue_duration_seconds histogram\n" +
			// Every wait of the window in (0.1, 1]; another queue's in (1, 10].
			`workqueue_queue_duration_seconds_bucket{name="snugpolicy",le="0.1"} 0` + "\n" +
			`workqueue_queue_duration_seconds_bucket{name="snugpolicy",le="1"} ` + ftoa(patches) + "\n" +
			`workqueue_queue_duration_seconds_bucket{name="snugpolicy",le="10"} ` + ftoa(patches) + "\n" +
			`workqueue_queue_duration_seconds_bucket{name="snugpolicy",le="+Inf"} ` + ftoa(patches) + "\n" +
			`workqueue_queue_duration_seconds_sum{name="snugpolicy"} 1` + "\n" +
			`workqueue_queue_duration_seconds_count{name="snugpolicy"} ` + ftoa(patches) + "\n" +
			`workqueue_queue_duration_seconds_bucket{name="other",le="0.1"} 0` + "\n" +
			`workqueue_queue_duration_seconds_bucket{name="other",le="1"} 0` + "\n" +
			`workqueue_queue_duration_seconds_bucket{name="other",le="10"} ` + ftoa(patches) + "\n" +
			`workqueue_queue_duration_seconds_bucket{name="other",le="+Inf"} ` + ftoa(patches) + "\n" +
			`workqueue_queue_duration_seconds_sum{name="other"} 1` + "\n" +
			`workqueue_queue_duration_seconds_count{name="other"} ` + ftoa(patches) + "\n"
	}
	etcd := func(b, rx float64) string {
		return "# TYPE etcd_mvcc_db_total_size_in_use_in_bytes gauge\netcd_mvcc_db_total_size_in_use_in_bytes " + ftoa(b) + "\n" +
			"# TYPE etcd_network_client_grpc_received_bytes_total counter\netcd_network_client_grpc_received_bytes_total " + ftoa(rx) + "\n"
	}
	var f Figures
	f.fromScrapes(
		Scrape{At: t0, APIServer: apiBefore, Controller: ctl(10, 1, 100<<20), Etcd: etcd(1<<20, 5<<20)},
		Scrape{At: t0.Add(time.Minute), APIServer: apiAfter, Controller: ctl(70, 7, 120<<20), Etcd: etcd(2<<20, 6<<20)},
	)
	if f.APIRequests != 11 {
		t.Errorf("API requests/s %v, want 660/60 = 11", f.APIRequests)
	}
	if f.APIWriteP99 != 99500*time.Microsecond {
		t.Errorf("API write p99 %v, want 99.5ms (every new PATCH in (0.05, 0.1], linear within it)", f.APIWriteP99)
	}
	if got := WritesPerSec(f.ControllerWrites); got != 1 {
		t.Errorf("controller writes/s %v, want 1 (list is not a write)", got)
	}
	if f.Reconciles != 2 || f.QueueDepth != 3 {
		t.Errorf("reconciles/s %v, policy queue depth %v, want 2 and 3 (not the other queue's)", f.Reconciles, f.QueueDepth)
	}
	if got := f.QueueWaitP99.Round(time.Millisecond); got != 991*time.Millisecond {
		t.Errorf("policy queue wait p99 %v, want 991ms (in (0.1, 1], linear; the other queue's waits are longer)", got)
	}
	if f.ControllerCPU != 0.1 || f.ControllerRSS != 120<<20 {
		t.Errorf("controller %v cores, RSS %v, want 0.1 and 120Mi", f.ControllerCPU, f.ControllerRSS)
	}
	if f.EtcdBytes != 2<<20 || f.EtcdWrittenPerHour != 60<<20 {
		t.Errorf("etcd %v bytes, %v written/h, want 2Mi and 60Mi/h", f.EtcdBytes, f.EtcdWrittenPerHour)
	}
	if f.ObjectBytes["pods"] != 3000 || f.ObjectBytes["events"] != 1000 {
		t.Errorf("mean sizes: pod %v, event %v; want 3000 (the watch events' sum over count, not the creates' bodies) and 1000 (unwatched: the creates' bodies, not the patches')",
			f.ObjectBytes["pods"], f.ObjectBytes["events"])
	}
	var out bytes.Buffer
	PrintTable(&out, []Figures{f})
	for _, want := range []string{"controller writes/s", "~1000", "snugpolicies/status"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// TestAgedSnapshot: the bench's aged pods carry a snapshot the agent takes
// as the pod's prior (history.ParseSnapshot, compatible with the default
// recommender) with the day of seconds it claims.
func TestAgedSnapshot(t *testing.T) {
	now := time.Now()
	v, err := AgedSnapshot(Steady{CPUMillis: 50, MemBytes: 48 << 20}, 24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	a := appAggregate(t, v)
	if a.CPUSeconds != 86400 || a.MemorySeconds != 86400 || a.MemoryPeakBytes != 48<<20 {
		t.Errorf("cpu %v s, memory %v s, peak %v, want a day of each and 48Mi", a.CPUSeconds, a.MemorySeconds, a.MemoryPeakBytes)
	}
}

// TestCleanupTimeout: no error of the pod collection's delete fails the
// cleanup (one outlasting the API server's timeout comes back as a
// timeout, or over HTTP/2 as a reset stream; the namespace's deletion
// finishes it); a namespace that cannot be deleted is a CleanupError,
// which keeps the run's figures.
func TestCleanupTimeout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pods, nss error
		wantErr   bool
	}{
		{name: "server timeout", pods: apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "delete", 0)},
		{name: "timeout", pods: apierrors.NewTimeoutError("the server was unable to return a response in the time allotted", 0)},
		{name: "reset stream", pods: errors.New("stream error: stream ID 10619; INTERNAL_ERROR; received from peer")},
		{name: "namespace refused", nss: apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "ns", errors.New("no")), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
			cs.PrependReactor("delete-collection", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				return tc.pods != nil, nil, tc.pods
			})
			cs.PrependReactor("delete", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
				return tc.nss != nil, nil, tc.nss
			})
			err := cleanup(t.Context(), cs, "ns", nil, func(string, ...any) {})
			if (err != nil) != tc.wantErr {
				t.Errorf("cleanup: %v, want an error %v", err, tc.wantErr)
			}
			var ce *CleanupError
			if err != nil && !errors.As(err, &ce) {
				t.Errorf("cleanup: %v (%T), want a *CleanupError", err, err)
			}
		})
	}
}

// TestEtcdBytesPerHour: each stored write is its object's mean size, an
// hour of them; deletes and writes of resources without watch events
// (reviews, not stored) add nothing; a subresource is its resource's.
func TestEtcdBytesPerHour(t *testing.T) {
	sizes := map[string]float64{"pods": 3000, "configmaps": 10000}
	agents := map[Request]float64{{"patch", "pods"}: 0.5, {"delete", "pods"}: 1, {"patch", "pods/resize"}: 0.5, {"create", "events"}: 0.2}
	ctl := map[Request]float64{{"update", "configmaps"}: 0.1, {"create", "tokenreviews"}: 5}
	got, unsized := EtcdBytesPerHour(sizes, agents, ctl)
	want := 3600 * (0.5*3000 + 0.5*3000 + 0.1*10000)
	if got != want || !slices.Equal(unsized, []string{"events"}) {
		t.Errorf("EtcdBytesPerHour = %v, unsized %v; want %v, [events]", got, unsized, want)
	}
}

// TestWebhookFromScrapes: snug's webhook calls between two scrapes of the
// API server, not another webhook's: the shares within 25 and 100 ms are
// the bucket counts', the quantiles interpolated within a bucket.
func TestWebhookFromScrapes(t *testing.T) {
	hist := func(ours, other [4]int) string {
		s := "# TYPE apiserver_admission_webhook_admission_duration_seconds histogram\n"
		for _, w := range []struct {
			name string
			c    [4]int
		}{{WebhookName, ours}, {"other.example.com", other}} {
			for i, le := range []string{"0.005", "0.025", "0.1", "+Inf"} {
				s += fmt.Sprintf("apiserver_admission_webhook_admission_duration_seconds_bucket{name=%q,operation=\"CREATE\",rejected=\"false\",type=\"admit\",le=%q} %d\n", w.name, le, w.c[i])
			}
			s += fmt.Sprintf("apiserver_admission_webhook_admission_duration_seconds_sum{name=%q,operation=\"CREATE\",rejected=\"false\",type=\"admit\"} 1\n", w.name)
			s += fmt.Sprintf("apiserver_admission_webhook_admission_duration_seconds_count{name=%q,operation=\"CREATE\",rejected=\"false\",type=\"admit\"} %d\n", w.name, w.c[3])
		}
		return s
	}
	var c Creation
	// 100 new calls of ours: 50 within 5ms, 40 in (5, 25], 10 in (25, 100].
	c.webhookFrom(Scrape{APIServer: hist([4]int{10, 10, 10, 10}, [4]int{0, 0, 0, 0})},
		Scrape{APIServer: hist([4]int{60, 100, 110, 110}, [4]int{0, 0, 0, 500})})
	if c.Calls != 100 || c.Under25ms != 0.9 || c.Under100ms != 1 {
		t.Errorf("calls %v, within 25ms %v, within 100ms %v; want 100, 0.9, 1", c.Calls, c.Under25ms, c.Under100ms)
	}
	if c.WebhookP50.Round(time.Microsecond) != 5*time.Millisecond {
		t.Errorf("p50 %v, want 5ms (the 50th call ends the first bucket)", c.WebhookP50)
	}
	if want := 25*time.Millisecond + 67500*time.Microsecond; c.WebhookP99.Round(time.Microsecond) != want {
		t.Errorf("p99 %v, want %v (9 of the 10 calls into (25, 100])", c.WebhookP99, want)
	}
}

// TestHandlerFromScrapes: the webhook's own handling time is summed over
// its replicas, each from its own first scrape; a replica that started
// between the scrapes (absent from the first) or whose container restarted
// (its count went down) counts from zero, and one gone by the second adds
// nothing.
func TestHandlerFromScrapes(t *testing.T) {
	hist := func(c [3]int) string {
		s := "# TYPE snug_admission_request_duration_seconds histogram\n"
		for i, le := range []string{"0.0005", "0.005", "+Inf"} {
			s += fmt.Sprintf("snug_admission_request_duration_seconds_bucket{le=%q} %d\n", le, c[i])
		}
		s += "snug_admission_request_duration_seconds_sum 1\n"
		s += fmt.Sprintf("snug_admission_request_duration_seconds_count %d\n", c[2])
		return s
	}
	var c Creation
	c.handlerFrom(
		map[string]string{"a": hist([3]int{100, 100, 100}), "gone": hist([3]int{7, 7, 7})},
		// a: 60 new calls, all within 0.5 ms; b (new): 40, 20 of them in
		// (0.5, 5] ms.
		map[string]string{"a": hist([3]int{160, 160, 160}), "b": hist([3]int{20, 40, 40})})
	if c.HandlerCalls != 100 {
		t.Fatalf("handler calls %v, want 100 (60 on a since its first scrape, 40 on b)", c.HandlerCalls)
	}
	if d := c.HandlerP50 - 312500*time.Nanosecond; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("p50 %v, want 312.5µs (the 50th of 80 calls within 0.5 ms)", c.HandlerP50)
	}
	if want := 500*time.Microsecond + 4275*time.Microsecond; c.HandlerP99.Round(time.Microsecond) != want {
		t.Errorf("p99 %v, want %v (19 of the 20 calls into (0.5, 5] ms)", c.HandlerP99, want)
	}
	// a's container restarted between the scrapes: its 30 calls since are
	// all in the window.
	var restarted Creation
	restarted.handlerFrom(map[string]string{"a": hist([3]int{100, 100, 100})}, map[string]string{"a": hist([3]int{30, 30, 30})})
	if restarted.HandlerCalls != 30 {
		t.Errorf("a restarted replica: %v calls, want 30 (its count since the restart)", restarted.HandlerCalls)
	}
	var none Creation
	none.handlerFrom(map[string]string{"a": hist([3]int{5, 5, 5})}, map[string]string{"a": hist([3]int{5, 5, 5})})
	if none.HandlerCalls != 0 || none.HandlerP99 != 0 {
		t.Errorf("no new calls: %v calls, p99 %v; want 0, 0", none.HandlerCalls, none.HandlerP99)
	}
}

// TestPhaseColumns: the table shows a row per creation rate figure, the
// rollout's and the leader kill's, only when a run ran them, with the
// runs that did not as "-"; a rate whose webhook the API server never
// timed shows "-" for the webhook's figures, not 0 ms, and so does a step
// that grew no pod.
func TestPhaseColumns(t *testing.T) {
	runs := []Figures{
		{Nodes: 50, Creations: []Creation{{Rate: 10, Achieved: 9.9, Calls: 99, WebhookP99: 20 * time.Millisecond, Under25ms: 0.995,
			HandlerCalls: 99, HandlerP99: 420 * time.Microsecond},
			{Rate: 50, Achieved: 49, Failed: 3}}, Failover: &Failover{Takeover: 16 * time.Second}},
		{Nodes: 100, Rollout: &Rollout{Ready: 3 * time.Second, WritesPerNode: 0.5}},
	}
	var out bytes.Buffer
	PrintTable(&out, runs)
	row := func(name string) []string {
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(l, name+" ") {
				return strings.Fields(strings.TrimPrefix(l, name))
			}
		}
		t.Errorf("table lacks row %q:\n%s", name, out.String())
		return nil
	}
	for _, tc := range []struct {
		row  string
		want []string
	}{
		{"10/s: webhook p99", []string{"20.0ms", "-"}},
		{"10/s: webhook <=25ms", []string{"99.5%", "-"}},
		{"10/s: handler p99", []string{"0.42ms", "-"}},
		{"50/s: handler p99", []string{"-", "-"}},
		{"50/s: webhook p99", []string{"-", "-"}},
		{"50/s: failed creates", []string{"3", "-"}},
		{"rollout: all ready", []string{"-", "3.00s"}},
		{"leader kill: takeover", []string{"16.00s", "-"}},
		{"step p99", []string{"-", "-"}},
	} {
		if got := row(tc.row); !slices.Equal(got, tc.want) {
			t.Errorf("row %q: %q, want %q", tc.row, got, tc.want)
		}
	}
	out.Reset()
	PrintTable(&out, []Figures{{Nodes: 50}})
	if strings.Contains(out.String(), "rollout") || strings.Contains(out.String(), "webhook") {
		t.Errorf("a run without phases shows phase rows:\n%s", out.String())
	}
}

// appAggregate is container "app"'s aggregate in the snapshot annotation
// v, as the agent reads a pod's (history.ParseSnapshot); it fails the test
// unless the default recommender accepts it.
func appAggregate(t *testing.T, v string) *recommend.Aggregate {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{history.SnapshotAnnotation: v}}}
	s, ok, err := history.ParseSnapshot(pod)
	if !ok || err != nil {
		t.Fatalf("ParseSnapshot: ok %v, err %v", ok, err)
	}
	a, err := s.Aggregate("app")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Compatible(recommend.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	return a
}
