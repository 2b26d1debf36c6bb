package controller

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
)

// TestStartWarmsTheCachesBeforeLeading: Start, which run.go calls before
// leader election, fills the caches and the queue of a replica that does
// not lead yet, and writes nothing: a standby takes over with warm
// caches, and only the leader (Run) reconciles.
func TestStartWarmsTheCachesBeforeLeading(t *testing.T) {
	// The SnugPolicy API: one policy, listed as an API server lists it (a
	// watch list: its events, then the bookmark that ends them, as
	// client-go's reflector asks; or a plain list), and a watch that
	// stays open.
	const policy = `{"apiVersion":"autoscaling.snug.dev/v1alpha1","kind":"SnugPolicy","metadata":{"name":"web","namespace":"ns","resourceVersion":"1","generation":1},` +
		`"spec":{"selector":{"matchLabels":{"app":"web"}}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		if q.Get("watch") != "true" {
			fmt.Fprint(w, `{"apiVersion":"autoscaling.snug.dev/v1alpha1","kind":"SnugPolicyList","metadata":{"resourceVersion":"1"},"items":[`+policy+`]}`)
			return
		}
		w.WriteHeader(http.StatusOK)
		if q.Get("sendInitialEvents") == "true" {
			fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", policy)
			fmt.Fprint(w, `{"type":"BOOKMARK","object":{"apiVersion":"autoscaling.snug.dev/v1alpha1","kind":"SnugPolicy","metadata":{"resourceVersion":"1","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n")
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	pc, err := policyclient.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", Labels: map[string]string{"app": "web"}}}
	cs := fake.NewClientset(pod)
	c := New(cs, pc, record.NewFakeRecorder(10), NewMetrics(prometheus.NewRegistry()), Config{})
	ctx, cancel := context.WithCancel(t.Context())
	if !c.Start(ctx) || c.Start(ctx) {
		t.Fatal("Start: want the first call to start the informers and the second to do nothing")
	}
	defer func() { cancel(); c.Shutdown() }()
	queued := func() (n []int) {
		for _, cn := range c.concerns {
			n = append(n, cn.queue.Len())
		}
		return n
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return c.Synced() && !slices.Contains(queued(), 0), nil
	}); err != nil {
		t.Fatalf("caches synced %v, queues %v: want them synced and the policy queued for every concern before leading", c.Synced(), queued())
	}
	if _, ok, err := c.podIndex.GetByKey("ns/web-1"); !ok || err != nil {
		t.Errorf("the pod cache before leading: web-1 cached %v, err %v", ok, err)
	}
	for _, a := range cs.Actions() {
		if v := a.GetVerb(); v != "list" && v != "watch" {
			t.Errorf("a replica that does not lead sent %s %s", v, a.GetResource().Resource)
		}
	}
}
