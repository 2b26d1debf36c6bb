package history

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/internal/recommend"
)

var t0 = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

func TestParseSnapshot(t *testing.T) {
	s := Snapshot{Time: t0, Containers: map[string]string{"app": "QUJD"}}
	b, _ := json.Marshal(s)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if _, ok, err := ParseSnapshot(pod); ok || err != nil {
		t.Errorf("no annotation: ok %v err %v", ok, err)
	}
	pod.Annotations = map[string]string{SnapshotAnnotation: string(b)}
	got, ok, err := ParseSnapshot(pod)
	if !ok || err != nil {
		t.Fatalf("ok %v err %v", ok, err)
	}
	if diff := cmp.Diff(s, got); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	pod.Annotations[SnapshotAnnotation] = "{"
	if _, _, err := ParseSnapshot(pod); err == nil {
		t.Error("bad annotation parsed")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	a := recommend.NewAggregate(recommend.DefaultConfig())
	a.CPU.Add(250, 1, t0)
	a.Memory.Add(64<<20, 1, t0)
	a.CPUSeconds, a.MemorySeconds = 1, 1
	s, err := NewSnapshot(t0, map[string]*recommend.Aggregate{"app": a})
	if err != nil {
		t.Fatal(err)
	}
	patch, err := s.MergePatch("uid-1")
	if err != nil {
		t.Fatal(err)
	}
	// The patch sets the one annotation and nothing else, with the UID as
	// a precondition.
	var p struct {
		Metadata struct {
			UID         string            `json:"uid"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: p.Metadata.Annotations}}
	got, ok, err := ParseSnapshot(pod)
	if !ok || err != nil || len(p.Metadata.Annotations) != 1 || p.Metadata.UID != "uid-1" {
		t.Fatalf("patch %s: ok %v err %v", patch, ok, err)
	}
	back, err := got.Aggregate("app")
	if err != nil {
		t.Fatal(err)
	}
	if back.CPUSeconds != 1 || !back.CPU.Equal(a.CPU, 1e-6) {
		t.Errorf("aggregate changed: %+v", back)
	}
	if none, err := got.Aggregate("other"); none != nil || err != nil {
		t.Errorf("missing container: %v %v", none, err)
	}

	data := map[string]string{AggregateKey("app"): s.Containers["app"], AggregateKey("bad"): "@@"}
	if c, err := CheckpointAggregate(data, "app"); err != nil || c.MemorySeconds != 1 {
		t.Errorf("checkpoint aggregate: %+v %v", c, err)
	}
	if c, err := CheckpointAggregate(data, "none"); c != nil || err != nil {
		t.Errorf("no key: %v %v", c, err)
	}
	if _, err := CheckpointAggregate(data, "bad"); !errors.Is(err, recommend.ErrBadCheckpoint) {
		t.Errorf("bad key: %v", err)
	}
	if got := CheckpointName("web"); got != "snug-checkpoint-web" {
		t.Errorf("CheckpointName = %q", got)
	}
}
