//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/lab/internal/experiment"
)

// TestAuth installs snug with its chart (--auth, the default, and --tls)
// and checks who gets through to the
// agent's /metrics and JSON API and the controller's /metrics: nobody
// without a token (401), not a forged token (401), not a ServiceAccount
// without snug-metrics-reader (403), the reader (200, and the metrics
// parse); the probes without a token; a repeated request answered from
// the cache, without a new TokenReview or SubjectAccessReview; and no
// answer to plain HTTP.
func TestAuth(t *testing.T) {
	ctx := t.Context()
	s := installSnug(t, snugInstall{}).snug
	if s.Token == "" {
		t.Fatal("the install gave no reader token")
	}

	// A valid token of a ServiceAccount that is not bound to the reader
	// role.
	ns := testNamespace(t, "snug-auth-")
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "stranger"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stranger, err := experiment.ServiceAccountToken(ctx, client, ns, "stranger", 600)
	if err != nil {
		t.Fatal(err)
	}

	guarded := []string{s.AgentURL + "/metrics", s.AgentURL + "/snug/v1/containers", s.ControllerMetricsURL}
	for _, u := range guarded {
		for _, c := range []struct {
			who, token string
			want       int
		}{
			{"no token", "", http.StatusUnauthorized},
			{"a forged token", "forged.token.value", http.StatusUnauthorized},
			{"ServiceAccount " + ns + "/stranger", stranger, http.StatusForbidden},
			{"ServiceAccount " + ns + "/stranger again", stranger, http.StatusForbidden},
			{"the reader", s.Token, http.StatusOK},
		} {
			if code, body := httpGet(t, u, c.token); code != c.want {
				t.Errorf("GET %s with %s: %d %q, want %d", u, c.who, code, body, c.want)
			}
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := httpGet(t, s.AgentURL+p, ""); code != http.StatusOK {
			t.Errorf("GET %s without a token: %d %q, want 200 (probes carry no token)", p, code, body)
		}
	}

	// The typed client of the API, as the demo and bench reaction use it.
	if _, err := s.AgentAPI().Containers(ctx, agent.Query{Limit: 1}); err != nil {
		t.Errorf("the API client with the reader's token: %v", err)
	}
	if _, err := agent.NewAPIClient(s.AgentURL, "").WithHTTPClient(s.HTTP).Containers(ctx, agent.Query{Limit: 1}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("the API client without a token: %v, want a 401", err)
	}

	for _, u := range []string{s.AgentURL + "/metrics", s.ControllerMetricsURL} {
		// Every review so far was answered; the stranger's denials were
		// reviewed once per path (the second came from the cache).
		before := scrapeAuth(t, u, s.Token)
		if before.errors != 0 {
			t.Errorf("%s: %v reviews failed", u, before.errors)
		}
		wantDenied := 1.0
		if strings.HasPrefix(u, s.AgentURL) {
			wantDenied = 2 // /metrics and /snug/v1/containers
		}
		if before.accessDenied != wantDenied {
			t.Errorf("%s: %v denied access reviews, want %v (one per path; the repeat is cached)", u, before.accessDenied, wantDenied)
		}
		// One more request within the TTLs asks the API server nothing.
		after := scrapeAuth(t, u, s.Token)
		if after.reviews != before.reviews {
			t.Errorf("%s: reviews %v, then %v after one more request within the TTL; want no new review", u, before.reviews, after.reviews)
		}
		if after.tokenHits != before.tokenHits+1 || after.accessHits != before.accessHits+1 {
			t.Errorf("%s: cache hits token %v -> %v, access %v -> %v; want one more each", u, before.tokenHits, after.tokenHits, before.accessHits, after.accessHits)
		}
		t.Logf("%s: %v reviews (%v denied access), cache hits %v token / %v access", u, after.reviews, after.accessDenied, after.tokenHits, after.accessHits)
	}

	t.Run("tls", func(t *testing.T) { testAuthPlainHTTP(t, s) })
}

// testAuthPlainHTTP: the in-cluster endpoints speak only HTTPS (the
// chart's tls.enabled, a certificate each pod makes at start); plain HTTP
// to their ports gets Go's 400 "client sent an HTTP request to an HTTPS
// server" or, when the server closes first, a reset: never metrics.
func testAuthPlainHTTP(t *testing.T, s *experiment.Snug) {
	for _, u := range []string{s.AgentURL + "/metrics", s.ControllerMetricsURL} {
		plain := "http://" + strings.TrimPrefix(u, "https://")
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, plain, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.Token)
		if resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("plain HTTP to %s: %d, want 400 or no answer", plain, resp.StatusCode)
			}
		}
	}
}

// authCounts are the snug_http_auth_ series of one scrape.
type authCounts struct {
	reviews, errors, accessDenied, tokenHits, accessHits float64
}

// scrapeAuth GETs a /metrics URL with token, parses it and sums the auth
// filter's counters.
func scrapeAuth(t *testing.T, url, token string) authCounts {
	t.Helper()
	code, body := httpGet(t, url, token)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %q", url, code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	var c authCounts
	rev, ok := fams["snug_http_auth_reviews_total"]
	if !ok {
		t.Fatalf("%s has no snug_http_auth_reviews_total", url)
	}
	for _, m := range rev.GetMetric() {
		v := m.GetCounter().GetValue()
		c.reviews += v
		switch {
		case label(m, "result") == "error":
			c.errors += v
		case label(m, "review") == "access" && label(m, "result") == "denied":
			c.accessDenied += v
		}
	}
	for _, m := range fams["snug_http_auth_cache_hits_total"].GetMetric() {
		switch label(m, "review") {
		case "token":
			c.tokenHits = m.GetCounter().GetValue()
		case "access":
			c.accessHits = m.GetCounter().GetValue()
		}
	}
	return c
}

// httpGet GETs url with an optional bearer token and returns the status
// and the body.
func httpGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	// The endpoints' certificates are self-signed: skip verification, as
	// Prometheus's insecure_skip_verify does.
	return httpDo(t, experiment.SelfSignedClient(), url, token)
}

// httpDo is httpGet through c.
func httpDo(t *testing.T, c *http.Client, url, token string) (int, string) {
	t.Helper()
	code, body, err := httpTry(t.Context(), c, url, token)
	if err != nil {
		t.Fatal(err)
	}
	return code, body
}

// httpTry is one GET of url through c with an optional bearer token: the
// status and the body, or what went wrong.
func httpTry(ctx context.Context, c *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", fmt.Errorf("GET %s: %w", url, err)
	}
	return resp.StatusCode, string(b), nil
}
