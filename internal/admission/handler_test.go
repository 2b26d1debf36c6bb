package admission

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/history"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

func TestHandler(t *testing.T) {
	pol := tb.Policy("web").Namespace("ns").Selector("app", "web").Get()
	data := learnt(t, pol, 100, 64<<20)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	h := NewHandler(HandlerConfig{
		Policies:    func(string) []*v1alpha1.SnugPolicy { return []*v1alpha1.SnugPolicy{pol} },
		Checkpoints: func(string, string) map[string]string { return data },
		Metrics:     m, Clock: clocktesting.NewFakePassiveClock(now), Log: logr.Discard(),
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	send := func(t *testing.T, body []byte) (*http.Response, admissionv1.AdmissionReview) {
		t.Helper()
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out admissionv1.AdmissionReview
		if resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
		}
		return resp, out
	}
	review := func(labels ...string) []byte {
		pod := tb.Pod("").Namespace("").Labels(labels...).Container("app", "500m", "1", "256Mi", "512Mi").Get()
		pod.GenerateName = "web-"
		raw, _ := json.Marshal(pod)
		b, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: types.UID("u1"), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Namespace: "ns", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}},
		})
		return b
	}

	_, out := send(t, review("app", "web"))
	if r := out.Response; r == nil || !r.Allowed || r.UID != "u1" || r.PatchType == nil || len(r.Patch) == 0 {
		t.Fatalf("response %+v, want allowed with a JSON patch", out.Response)
	}
	if !bytes.Contains(out.Response.Patch, []byte(jsonPointer(history.AdmissionAnnotation))) && !bytes.Contains(out.Response.Patch, []byte("/metadata/annotations")) {
		t.Errorf("patch %s sets no annotation", out.Response.Patch)
	}
	_, out = send(t, review("app", "other"))
	if r := out.Response; r == nil || !r.Allowed || r.Patch != nil {
		t.Errorf("uncovered pod: response %+v, want allowed unchanged", out.Response)
	}
	if resp, _ := send(t, []byte("nonsense")); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("garbage: status %d, want 400", resp.StatusCode)
	}
	for outcome, want := range map[Outcome]float64{Sized: 1, NoPolicy: 1, Invalid: 1} {
		var mm dto.Metric
		if err := m.requests.WithLabelValues(string(outcome)).Write(&mm); err != nil {
			t.Fatal(err)
		}
		if got := mm.GetCounter().GetValue(); got != want {
			t.Errorf("snug_admission_requests_total{outcome=%q} = %v, want %v", outcome, got, want)
		}
	}
	var hm dto.Metric
	if err := m.duration.Write(&hm); err != nil || hm.GetHistogram().GetSampleCount() != 3 {
		t.Errorf("duration histogram: %d samples (%v), want 3", hm.GetHistogram().GetSampleCount(), err)
	}
}

func jsonPointer(s string) string {
	return string(bytes.ReplaceAll(bytes.ReplaceAll([]byte(s), []byte("~"), []byte("~0")), []byte("/"), []byte("~1")))
}
