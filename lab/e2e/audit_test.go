//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// auditEvent is what the lab's audit log says of a request (the fields of
// audit.k8s.io/v1 Event that the tests read).
type auditEvent struct {
	Verb  string `json:"verb"`
	Stage string `json:"stage"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
}

// auditOf returns the lab's audit log entries about namespace ns.
func auditOf(t *testing.T, ns string) []auditEvent {
	t.Helper()
	f, err := os.Open(filepath.Join(labOpts.Dir, "logs", "audit.log"))
	if err != nil {
		t.Fatalf("the lab's audit log: %v", err)
	}
	defer f.Close()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("the lab's audit log: a line that is not an event: %v: %.200s", err, sc.Text())
		}
		if e.ObjectRef != nil && e.ObjectRef.Namespace == ns {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("the lab's audit log: %v", err)
	}
	return out
}

// TestLabAuditNamesPodDeleter: the lab's API server records who deleted or
// evicted a pod (logs/audit.log), and nothing else: a pod that vanishes in
// a test is then explained. One pod deleted, one evicted, one only read;
// the log has the deletion and the eviction, each with the user and user
// agent, and nothing of the read or the creations.
func TestLabAuditNamesPodDeleter(t *testing.T) {
	ns := testNamespace(t, "snug-audit-")
	ctx := t.Context()
	for _, name := range []string{"deleted", "evicted", "read"} {
		// Never scheduled: no node carries the label.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"snug-e2e/no-such-node": "true"},
				Containers:   []corev1.Container{{Name: "app", Image: "registry.invalid/none:0"}},
			},
		}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod %s: %v", name, err)
		}
	}
	if err := client.CoreV1().Pods(ns).Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod deleted: %v", err)
	}
	if err := client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "evicted", Namespace: ns}}); err != nil {
		t.Fatalf("evicting pod evicted: %v", err)
	}
	if _, err := client.CoreV1().Pods(ns).Get(ctx, "read", metav1.GetOptions{}); err != nil {
		t.Fatalf("reading pod read: %v", err)
	}

	// The API server writes its audit log in batches: wait for both.
	var got []auditEvent
	waitFor(t, "the deletion and the eviction in the lab's audit log", time.Minute, func() (bool, error) {
		got = auditOf(t, ns)
		var deleted, evicted bool
		for _, e := range got {
			deleted = deleted || (e.Verb == "delete" && e.ObjectRef.Resource == "pods" && e.ObjectRef.Name == "deleted")
			evicted = evicted || (e.Verb == "create" && e.ObjectRef.Subresource == "eviction" && e.ObjectRef.Name == "evicted")
		}
		return deleted && evicted, nil
	})
	for _, e := range got {
		r := e.ObjectRef
		t.Logf("audit: %s %s/%s %s by %q (%s), stage %s", e.Verb, r.Resource, r.Subresource, r.Name, e.User.Username, e.UserAgent, e.Stage)
		if e.User.Username == "" || e.UserAgent == "" {
			t.Errorf("audit: %s of %s names no user or user agent", e.Verb, r.Name)
		}
		if r.Name == "read" || e.Verb == "get" || e.Verb == "list" || (e.Verb == "create" && r.Subresource == "") {
			t.Errorf("audit: a %s of %s/%s %s is recorded; the policy records deletions and evictions only", e.Verb, r.Resource, r.Subresource, r.Name)
		}
	}
}
