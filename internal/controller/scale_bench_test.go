package controller

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/history"
	"github.com/snug-dev/snug/internal/recommend"
	tb "github.com/snug-dev/snug/internal/testbuild"
)

// BenchmarkSteadyReconcile is the controller's cost of a quiet cluster
// (issue 29): policies of 30 pods each in one namespace, every pod with a
// day's snapshot, each policy reconciled by its three concerns as their
// resync does once a minute, nothing to write. ns/op is one policy's three
// reconciles; a cost that grows with the policies in the namespace makes
// the controller's CPU grow with their square (docs/scale.md).
func BenchmarkSteadyReconcile(b *testing.B) {
	for _, policies := range []int{50, 200, 1000} {
		b.Run(fmt.Sprintf("policies=%d", policies), func(b *testing.B) {
			e := newReconcileEnv(b)
			snap, _ := json.Marshal(history.Snapshot{Time: e.clock.Now(), Containers: map[string]string{
				"app": snapshotOf(b, recommend.DefaultConfig(), 86400, 50, 48<<20, e.clock.Now())}})
			for g := range policies {
				group := fmt.Sprint(g)
				e.add(tb.Policy("group-"+group).Selector("snug-scale-group", group).Mode(v1alpha1.UpdateModeInPlace).Get())
				for i := range 30 {
					pod := tb.Pod(fmt.Sprintf("pod-%d-%d", g, i)).Labels("snug-scale-group", group).
						Container("app", "50m", "100m", "48Mi", "96Mi").Ready().Get()
					pod.Annotations = map[string]string{history.SnapshotAnnotation: string(snap)}
					e.add(pod)
				}
			}
			// The first pass writes the checkpoints and statuses; the
			// measured ones find nothing to write.
			for g := range policies {
				e.reconcile(fmt.Sprint("group-", g))
			}
			e.clock.Step(time.Minute)
			b.ResetTimer()
			g := 0
			for b.Loop() {
				e.reconcile(fmt.Sprint("group-", g%policies))
				g++
			}
		})
	}
}
