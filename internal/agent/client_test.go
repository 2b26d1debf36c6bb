package agent

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/snug-dev/snug/internal/httpauth"
)

// TestAPIClient reads the real Handler of an agent over a synthetic node.
func TestAPIClient(t *testing.T) {
	n := newTestNode(t, "v1", 2, nil)
	ctx := context.Background()
	for _, p := range n.pods {
		n.agent.UpsertPod(p)
	}
	for range 3 {
		n.agent.Pass(ctx)
		n.clock.Step(time.Second)
	}
	srv := httptest.NewServer(n.agent.Handler())
	defer srv.Close()
	c := NewAPIClient(srv.URL, "")

	all, err := c.Containers(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	if all.Node != "synthetic" || len(all.Containers) != 2 || len(all.Containers[0].History) != 3 {
		t.Fatalf("Containers: node %q, %d containers, %d points; want synthetic, 2, 3", all.Node, len(all.Containers), len(all.Containers[0].History))
	}
	one, err := c.Pod(ctx, "bench", "pod-001", Query{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Containers) != 1 || one.Containers[0].Pod != "pod-001" || len(one.Containers[0].History) != 1 {
		t.Fatalf("Pod with limit 1: %+v", one.Containers)
	}
	since := n.clock.Now().Add(-1500 * time.Millisecond)
	app, err := c.Container(ctx, "bench", "pod-000", "app", Query{Since: since})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range app.History {
		if p.Time.Before(since) {
			t.Errorf("point at %v is before since %v", p.Time, since)
		}
	}
	if len(app.History) != 1 {
		t.Errorf("since 1.5s ago: %d points, want 1", len(app.History))
	}
	if _, err := c.Pod(ctx, "bench", "nope", Query{}); !errors.Is(err, ErrNotSampled) {
		t.Errorf("Pod of an unknown pod: %v, want ErrNotSampled", err)
	}
	if _, err := c.Container(ctx, "bench", "pod-000", "sidecar", Query{}); !errors.Is(err, ErrNotSampled) {
		t.Errorf("Container of an unknown container: %v, want ErrNotSampled", err)
	}
}

// oneToken accepts the token "reader" and lets it get any path.
type oneToken struct{}

func (oneToken) ReviewToken(_ context.Context, token string) (httpauth.User, bool, error) {
	return httpauth.User{Name: "reader"}, token == "reader", nil
}

func (oneToken) ReviewAccess(_ context.Context, u httpauth.User, verb, _ string) (bool, string, error) {
	return u.Name == "reader" && verb == "get", "", nil
}

// TestAPIClientSendsItsToken: behind the auth filter, the client with the
// token reads the API and the one without is refused.
func TestAPIClientSendsItsToken(t *testing.T) {
	n := newTestNode(t, "v1", 1, nil)
	ctx := context.Background()
	n.agent.UpsertPod(n.pods[0])
	n.agent.Pass(ctx)
	f := httpauth.New(httpauth.Config{Reviewer: oneToken{}, Log: logr.Discard()})
	srv := httptest.NewServer(f.Wrap(n.agent.Handler()))
	defer srv.Close()
	if list, err := NewAPIClient(srv.URL, "reader").Containers(ctx, Query{}); err != nil || len(list.Containers) != 1 {
		t.Errorf("with the token: %v", err)
	}
	if _, err := NewAPIClient(srv.URL, "").Containers(ctx, Query{}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without a token: %v, want a 401", err)
	}
}
