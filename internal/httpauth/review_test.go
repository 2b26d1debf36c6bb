package httpauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/snug-dev/snug/internal/kube"
)

// apiServer answers TokenReviews and SubjectAccessReviews as handle says,
// through the agent's own core/v1 client (the one the agent uses).
func apiServer(t *testing.T, handle func(path string, body []byte) (int, any)) *APIReviewer {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s (%s): %v", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err)
		}
		code, out := handle(r.URL.Path, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	c, err := kube.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &APIReviewer{Client: c.RESTClient()}
}

func TestAPIReviewer(t *testing.T) {
	rev := apiServer(t, func(path string, body []byte) (int, any) {
		switch path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var in authenticationv1.TokenReview
			_ = json.Unmarshal(body, &in)
			if in.Kind != "TokenReview" || in.Spec.Token == "" {
				t.Errorf("token review %+v", in)
			}
			in.Status.Authenticated = in.Spec.Token == "good"
			if in.Status.Authenticated {
				in.Status.User = authenticationv1.UserInfo{Username: "alice", UID: "u1", Groups: []string{"g"},
					Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}
			}
			return 201, in
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var in authorizationv1.SubjectAccessReview
			_ = json.Unmarshal(body, &in)
			a := in.Spec.NonResourceAttributes
			if in.Kind != "SubjectAccessReview" || a == nil || in.Spec.ResourceAttributes != nil || in.Spec.Extra["k"][0] != "v" {
				t.Errorf("access review %+v", in)
			}
			in.Status.Allowed = in.Spec.User == "alice" && a.Path == "/metrics" && a.Verb == "get"
			in.Status.Reason = "rbac"
			return 201, in
		}
		return 403, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 403,
			Reason: metav1.StatusReasonForbidden, Message: "tokenreviews is forbidden"}
	})
	ctx := context.Background()
	u, ok, err := rev.ReviewToken(ctx, "good")
	if err != nil || !ok || u.Name != "alice" || u.UID != "u1" || len(u.Groups) != 1 || u.Extra["k"][0] != "v" {
		t.Fatalf("ReviewToken(good) = %+v, %v, %v", u, ok, err)
	}
	if _, ok, err := rev.ReviewToken(ctx, "bad"); ok || err != nil {
		t.Errorf("ReviewToken(bad) = %v, %v; want false, nil", ok, err)
	}
	if allowed, reason, err := rev.ReviewAccess(ctx, u, "get", "/metrics"); !allowed || reason != "rbac" || err != nil {
		t.Errorf("ReviewAccess(get /metrics) = %v, %q, %v", allowed, reason, err)
	}
	if allowed, _, err := rev.ReviewAccess(ctx, u, "get", "/other"); allowed || err != nil {
		t.Errorf("ReviewAccess(get /other) = %v, %v; want false, nil", allowed, err)
	}
}

// TestAPIReviewerRefused: an API server that refuses the review (the
// ServiceAccount lacks create on tokenreviews) is an error, not a denial.
func TestAPIReviewerRefused(t *testing.T) {
	rev := apiServer(t, func(string, []byte) (int, any) {
		return 403, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 403,
			Reason: metav1.StatusReasonForbidden, Message: "tokenreviews.authentication.k8s.io is forbidden"}
	})
	if _, _, err := rev.ReviewToken(context.Background(), "good"); err == nil {
		t.Error("a refused TokenReview is no error")
	}
}
