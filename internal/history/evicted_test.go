package history

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	tb "github.com/snug-dev/snug/internal/testbuild"
)

func TestEvicted(t *testing.T) {
	if _, ok := NewEvicted(tb.Pod("bare").Container("app", "1", "", "", "").Get(), tb.T0); ok {
		t.Error("a record for a pod without a controller, whose replacement nothing could recognise")
	}
	old := tb.Pod("web-1").OwnedBy("web-rs").Container("app", "700m", "1", "64Mi", "").Get()
	e, ok := NewEvicted(old, tb.T0.Add(1500*time.Millisecond))
	if !ok {
		t.Fatal("no record for an owned pod")
	}
	v, err := EncodeEvicted([]Evicted{e, {Pod: "web-0", UID: "uid-web-0", Owner: "uid-web-rs", Time: tb.T0}})
	if err != nil {
		t.Fatal(err)
	}
	list, err := CheckpointEvicted(map[string]string{EvictedKey: v})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"web-1", "web-0"}, []string{list[0].Pod, list[1].Pod}); diff != "" {
		t.Errorf("decoded pods (-want +got):\n%s", diff)
	}
	if q := list[0].Requests["app"][corev1.ResourceCPU]; q.String() != "700m" || list[0].Owner != types.UID("uid-web-rs") || !list[0].Time.Equal(tb.T0.Add(time.Second)) {
		t.Errorf("decoded %+v, want web-1's 700m, owner uid-web-rs, time to the second", list[0])
	}
	repl := tb.Pod("").OwnedBy("web-rs").Get()
	if got, ok := For(list, repl, tb.T0.Add(time.Minute)); !ok || got.Pod != "web-1" {
		t.Errorf("For = %+v %v, want the latest record, web-1's", got, ok)
	}
	if _, ok := For(list, repl, tb.T0.Add(EvictedTTL+time.Second)); ok {
		t.Error("a record older than EvictedTTL applied")
	}
	if _, ok := For(list, tb.Pod("").Get(), tb.T0); ok {
		t.Error("a record applied to a pod without a controller")
	}
	if _, err := CheckpointEvicted(map[string]string{EvictedKey: "["}); err == nil {
		t.Error("a damaged record decoded")
	}
}
