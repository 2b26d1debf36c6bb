package httpauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeReviewer knows tokens by value and grants paths by user name.
type fakeReviewer struct {
	users        map[string]User            // token -> user
	grants       map[string]map[string]bool // user -> path -> allowed
	tokenErr     error
	accessErr    error
	tokenCalls   int
	accessCalls  int
	lastAccessed struct{ verb, path string }
}

func (f *fakeReviewer) ReviewToken(_ context.Context, token string) (User, bool, error) {
	f.tokenCalls++
	if f.tokenErr != nil {
		return User{}, false, f.tokenErr
	}
	u, ok := f.users[token]
	return u, ok, nil
}

func (f *fakeReviewer) ReviewAccess(_ context.Context, u User, verb, path string) (bool, string, error) {
	f.accessCalls++
	f.lastAccessed.verb, f.lastAccessed.path = verb, path
	if f.accessErr != nil {
		return false, "", f.accessErr
	}
	if f.grants[u.Name][path] {
		return true, "granted", nil
	}
	return false, "no RBAC policy matched", nil
}

func newFake() *fakeReviewer {
	return &fakeReviewer{
		users: map[string]User{
			"reader-token":   {Name: "system:serviceaccount:mon:prometheus", Groups: []string{"system:serviceaccounts"}},
			"stranger-token": {Name: "system:serviceaccount:default:default"},
		},
		grants: map[string]map[string]bool{
			"system:serviceaccount:mon:prometheus": {"/metrics": true, "/snug/v1/containers": true},
		},
	}
}

// backend answers 200 "served" and fails the test if the token reaches it.
func backend(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the handler got the Authorization header")
		}
		_, _ = io.WriteString(w, "served")
	})
}

func do(t *testing.T, h http.Handler, method, path, authz string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	if authz != "" {
		r.Header.Set("Authorization", authz)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestFilterDecisions(t *testing.T) {
	tests := []struct {
		name            string
		path, authz     string
		tokenErr        error
		accessErr       error
		wantCode        int
		wantBody        string
		wantTokenCalls  int
		wantAccessCalls int
	}{
		{name: "open path without a token", path: "/healthz", wantCode: 200, wantBody: "served"},
		{name: "no token", path: "/metrics", wantCode: 401, wantBody: "no bearer token"},
		{name: "not bearer", path: "/metrics", authz: "Basic dXNlcjpwdw==", wantCode: 401, wantBody: "no bearer token"},
		{name: "unknown token", path: "/metrics", authz: "Bearer forged", wantCode: 401, wantBody: "does not accept the token", wantTokenCalls: 1},
		{name: "valid token, denied", path: "/metrics", authz: "Bearer stranger-token", wantCode: 403,
			wantBody: "user system:serviceaccount:default:default may not get /metrics: no RBAC policy matched", wantTokenCalls: 1, wantAccessCalls: 1},
		{name: "valid token, allowed", path: "/metrics", authz: "Bearer reader-token", wantCode: 200, wantBody: "served", wantTokenCalls: 1, wantAccessCalls: 1},
		{name: "allowed on one path, not another", path: "/api/v1/namespaces/a/pods/b", authz: "bearer reader-token", wantCode: 403, wantTokenCalls: 1, wantAccessCalls: 1},
		{name: "token review fails", path: "/metrics", authz: "Bearer reader-token", tokenErr: errors.New("connection refused"),
			wantCode: 503, wantBody: "could not review the token", wantTokenCalls: 1},
		{name: "access review fails", path: "/metrics", authz: "Bearer reader-token", accessErr: errors.New("timeout"),
			wantCode: 503, wantBody: "could not review the access", wantTokenCalls: 1, wantAccessCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rev := newFake()
			rev.tokenErr, rev.accessErr = tt.tokenErr, tt.accessErr
			f := New(Config{Reviewer: rev, Open: []string{"/healthz", "/readyz"}, Log: logr.Discard()})
			w := do(t, f.Wrap(backend(t)), "GET", tt.path, tt.authz)
			if w.Code != tt.wantCode || !strings.Contains(w.Body.String(), tt.wantBody) {
				t.Errorf("got %d %q, want %d containing %q", w.Code, w.Body.String(), tt.wantCode, tt.wantBody)
			}
			if got := w.Header().Get("WWW-Authenticate"); (w.Code == 401) != (got != "") {
				t.Errorf("WWW-Authenticate %q on a %d", got, w.Code)
			}
			if rev.tokenCalls != tt.wantTokenCalls || rev.accessCalls != tt.wantAccessCalls {
				t.Errorf("reviews: %d token, %d access; want %d, %d", rev.tokenCalls, rev.accessCalls, tt.wantTokenCalls, tt.wantAccessCalls)
			}
			if w.Code == 200 && tt.authz != "" && (rev.lastAccessed.verb != "get" || rev.lastAccessed.path != tt.path) {
				t.Errorf("access reviewed for %+v, want get %s", rev.lastAccessed, tt.path)
			}
		})
	}
}

func TestFilterCaches(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	rev := newFake()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	f := New(Config{Reviewer: rev, Clock: clk, Metrics: m, Log: logr.Discard(),
		TokenTTL: time.Minute, AllowTTL: 5 * time.Minute, DenyTTL: 30 * time.Second})
	h := f.Wrap(backend(t))
	calls := func(step string, wantToken, wantAccess int) {
		t.Helper()
		if rev.tokenCalls != wantToken || rev.accessCalls != wantAccess {
			t.Errorf("%s: %d token and %d access reviews, want %d and %d", step, rev.tokenCalls, rev.accessCalls, wantToken, wantAccess)
		}
	}
	want := func(code int, authz string) {
		t.Helper()
		if w := do(t, h, "GET", "/metrics", authz); w.Code != code {
			t.Fatalf("GET /metrics with %q: %d, want %d", authz, w.Code, code)
		}
	}

	want(200, "Bearer reader-token")
	want(200, "Bearer reader-token")
	calls("a second request at once", 1, 1)
	clk.SetTime(clk.Now().Add(59 * time.Second))
	want(200, "Bearer reader-token")
	calls("within the token TTL", 1, 1)
	clk.SetTime(clk.Now().Add(2 * time.Second))
	want(200, "Bearer reader-token")
	calls("past the token TTL, within the allow TTL", 2, 1)

	// Denials are cached for DenyTTL.
	want(403, "Bearer stranger-token")
	want(403, "Bearer stranger-token")
	calls("a denied request twice", 3, 2)
	clk.SetTime(clk.Now().Add(31 * time.Second))
	want(403, "Bearer stranger-token")
	calls("past the deny TTL", 3, 3)
	// Invalid tokens are cached for TokenTTL too.
	want(401, "Bearer forged")
	want(401, "Bearer forged")
	calls("an invalid token twice", 4, 3)

	// Errors are not cached: the next request asks again.
	rev.tokenErr = errors.New("connection refused")
	want(503, "Bearer new-token")
	want(503, "Bearer new-token")
	calls("a failing review twice", 6, 3)
	rev.tokenErr = nil

	if got := count(t, m.reviews.WithLabelValues("token", "allowed")); got != 3 {
		t.Errorf("token reviews allowed: %v, want 3", got)
	}
	if got := count(t, m.reviews.WithLabelValues("token", "error")); got != 2 {
		t.Errorf("token reviews in error: %v, want 2", got)
	}
	if got := count(t, m.cacheHits.WithLabelValues("token")); got != 5 {
		t.Errorf("token cache hits: %v, want 5", got)
	}
	for res, n := range map[string]float64{"allowed": 4, "forbidden": 3, "unauthenticated": 2, "error": 2} {
		if got := count(t, m.requests.WithLabelValues(res)); got != n {
			t.Errorf("requests %s: %v, want %v", res, got, n)
		}
	}
}

// TestFilterCacheIsBounded: with room for one token, a second token
// evicts the first, which is reviewed again.
func TestFilterCacheIsBounded(t *testing.T) {
	rev := newFake()
	rev.users["other-reader"] = rev.users["reader-token"]
	h := New(Config{Reviewer: rev, CacheSize: 1, Log: logr.Discard()}).Wrap(backend(t))
	for _, tok := range []string{"reader-token", "other-reader", "reader-token"} {
		if w := do(t, h, "GET", "/metrics", "Bearer "+tok); w.Code != 200 {
			t.Fatalf("%s: %d", tok, w.Code)
		}
	}
	if rev.tokenCalls != 3 {
		t.Errorf("%d token reviews, want 3 (the first token evicted)", rev.tokenCalls)
	}
	if rev.accessCalls != 1 {
		t.Errorf("%d access reviews, want 1 (both tokens are one user)", rev.accessCalls)
	}
}

func TestAccessKeyCountsEveryField(t *testing.T) {
	base := User{Name: "u", UID: "1", Groups: []string{"a", "b"}, Extra: map[string][]string{"k": {"v"}}}
	same := User{Name: "u", UID: "1", Groups: []string{"b", "a"}, Extra: map[string][]string{"k": {"v"}}}
	if accessKey(base, "get", "/metrics") != accessKey(same, "get", "/metrics") {
		t.Error("the order of groups changed the key")
	}
	for name, u := range map[string]User{
		"name":   {Name: "v", UID: "1", Groups: base.Groups, Extra: base.Extra},
		"uid":    {Name: "u", UID: "2", Groups: base.Groups, Extra: base.Extra},
		"groups": {Name: "u", UID: "1", Groups: []string{"a"}, Extra: base.Extra},
		"extra":  {Name: "u", UID: "1", Groups: base.Groups, Extra: map[string][]string{"k": {"w"}}},
		// A group must not pass for a name.
		"shifted": {Name: "u", UID: "1", Groups: []string{"ab"}, Extra: base.Extra},
	} {
		if accessKey(u, "get", "/metrics") == accessKey(base, "get", "/metrics") {
			t.Errorf("a different %s has the same key", name)
		}
	}
	if accessKey(base, "get", "/metrics") == accessKey(base, "get", "/snug/v1/containers") ||
		accessKey(base, "get", "/metrics") == accessKey(base, "post", "/metrics") {
		t.Error("path or verb does not change the key")
	}
}

func TestBearerToken(t *testing.T) {
	for header, want := range map[string]string{
		"Bearer abc":    "abc",
		"bearer abc":    "abc",
		"BEARER  abc ":  "abc",
		"Bearer":        "",
		"Bearer ":       "",
		"Basic abc":     "",
		"abc":           "",
		"":              "",
		"Bearer a b":    "",
		"Bearerabc abc": "",
	} {
		got, ok := BearerToken(header)
		if got != want || ok != (want != "") {
			t.Errorf("BearerToken(%q) = %q, %v; want %q", header, got, ok, want)
		}
	}
}

func TestVerb(t *testing.T) {
	for method, want := range map[string]string{"GET": "get", "HEAD": "get", "POST": "post", "PUT": "put", "DELETE": "delete"} {
		if got := Verb(method); got != want {
			t.Errorf("Verb(%s) = %s, want %s", method, got, want)
		}
	}
}

func count(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
