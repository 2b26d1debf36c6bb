package kube_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/snug-dev/snug/internal/actuate"
	"github.com/snug-dev/snug/internal/kube"
	"github.com/snug-dev/snug/internal/resize"
)

// The client is what actuate and the event recorder take.
var (
	_ actuate.Client   = (*kube.Client)(nil)
	_ record.EventSink = kube.EventSink{}
)

// TestSchemeIsCoreOnly: the scheme knows core/v1 and nothing of the other
// API groups (that is what the package is for).
func TestSchemeIsCoreOnly(t *testing.T) {
	if !kube.Scheme.Recognizes(corev1.SchemeGroupVersion.WithKind("Pod")) {
		t.Error("scheme does not know v1 Pod")
	}
	if !kube.Scheme.Recognizes(corev1.SchemeGroupVersion.WithKind("Status")) {
		t.Error("scheme does not know v1 Status (errors would not decode)")
	}
	if kube.Scheme.Recognizes(appsv1.SchemeGroupVersion.WithKind("Deployment")) {
		t.Error("scheme knows apps/v1 Deployment")
	}
}

type request struct {
	method, path, query, contentType, body string
}

// server answers every request with code and body, recording what it got.
func server(t *testing.T, code int, body any) (*kube.Client, *[]request) {
	t.Helper()
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), string(b)})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	c, err := kube.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c, &got
}

// TestPatchResizeFailedTestIsConflict: the API server's answer to a JSON
// patch whose test failed (422, its generic message, no kind or causes)
// comes back as a StatusError, which actuate classifies as a Conflict;
// the request is a PATCH of the resize subresource with the JSON-patch
// content type and dryRun encoded by the parameter codec.
func TestPatchResizeFailedTestIsConflict(t *testing.T) {
	c, got := server(t, 422, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
		Message: "the server rejected our request due to an error in our request",
	})
	act := &actuate.Actuator{Client: c}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	r, err := act.Send(context.Background(), pod, []byte(`[{"op":"test","path":"/x","value":1}]`), actuate.SendOptions{DryRun: true})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if r.Outcome != resize.Conflict {
		t.Errorf("outcome %v, want Conflict", r.Outcome)
	}
	want := request{"PATCH", "/api/v1/namespaces/ns/pods/p/resize", "dryRun=All", "application/json-patch+json", `[{"op":"test","path":"/x","value":1}]`}
	if len(*got) != 1 || (*got)[0] != want {
		t.Errorf("requests %+v, want [%+v]", *got, want)
	}
}

// TestGetNotFound: a 404 is apierrors' NotFound, which Gather and the
// agent's checkpoint reader test for.
func TestGetNotFound(t *testing.T) {
	c, got := server(t, 404, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
		Details: &metav1.StatusDetails{Name: "cm", Kind: "configmaps"},
	})
	_, err := c.ConfigMaps("ns").Get(context.Background(), "cm", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("error %v, want NotFound", err)
	}
	if len(*got) != 1 || (*got)[0].path != "/api/v1/namespaces/ns/configmaps/cm" {
		t.Errorf("requests %+v", *got)
	}
}

// TestEventSinkCreatesInTheEventsNamespace: the recorder's events go to
// their own namespace, as the typed client's EventSinkImpl sends them.
func TestEventSinkCreatesInTheEventsNamespace(t *testing.T) {
	ev := &corev1.Event{TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e"}, Reason: "Resized"}
	c, got := server(t, 201, ev)
	out, err := kube.EventSink{Client: c}.Create(ev)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if out.Reason != "Resized" {
		t.Errorf("created event %+v", out)
	}
	if len(*got) != 1 || (*got)[0].method != "POST" || (*got)[0].path != "/api/v1/namespaces/ns/events" {
		t.Errorf("requests %+v", *got)
	}
}
