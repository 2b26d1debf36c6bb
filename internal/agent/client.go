package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ErrNotSampled is the API's answer for a pod (or container) the agent has
// no sampled container of: not on its node, not running, or not tracked
// yet.
var ErrNotSampled = errors.New("not sampled by the agent")

// APIClient reads an agent's JSON API (Handler) for the CLI's demo, the
// benches and the e2e tests. It is safe for concurrent use.
type APIClient struct {
	base  string
	token string
	http  *http.Client
}

// NewAPIClient returns a client of the agent at baseURL (http://host:port)
// that sends token as its bearer token (an agent with --auth wants one
// whose ServiceAccount is bound to the ClusterRole snug-metrics-reader);
// empty sends none.
func NewAPIClient(baseURL, token string) *APIClient {
	return &APIClient{base: baseURL, token: token, http: http.DefaultClient}
}

// WithHTTPClient makes the client send its requests through h, for
// example one that trusts the agent's certificate (--tls); it returns c.
func (c *APIClient) WithHTTPClient(h *http.Client) *APIClient {
	c.http = h
	return c
}

// Containers returns every container the agent samples, with the history q
// selects.
func (c *APIClient) Containers(ctx context.Context, q Query) (*ContainerList, error) {
	return c.get(ctx, "/snug/v1/containers", q)
}

// Pod returns the sampled containers of the pod ns/name, with the history q
// selects; an error wrapping ErrNotSampled when the agent has none.
func (c *APIClient) Pod(ctx context.Context, ns, name string, q Query) (*ContainerList, error) {
	return c.get(ctx, "/snug/v1/namespaces/"+url.PathEscape(ns)+"/pods/"+url.PathEscape(name), q)
}

// Container returns one container of the pod ns/name; an error wrapping
// ErrNotSampled when the agent does not sample it.
func (c *APIClient) Container(ctx context.Context, ns, pod, container string, q Query) (*ContainerJSON, error) {
	list, err := c.Pod(ctx, ns, pod, q)
	if err != nil {
		return nil, err
	}
	for i := range list.Containers {
		if list.Containers[i].Container == container {
			return &list.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("container %s of pod %s/%s: %w", container, ns, pod, ErrNotSampled)
}

func (c *APIClient) get(ctx context.Context, path string, q Query) (*ContainerList, error) {
	v := url.Values{}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.Format(time.RFC3339Nano))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	u := c.base + path
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("asking the agent: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the agent: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, fmt.Errorf("GET %s: %w", u, ErrNotSampled)
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, b)
	}
	var list ContainerList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("GET %s: decoding: %w", u, err)
	}
	return &list, nil
}
