package agent

import (
	"context"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/snug-dev/snug/internal/agent/agenttest"
)

// BenchmarkPass is one sampling pass over 110 containers (the kubelet's
// default pod limit) on a generated tree, per layout. The files sit on the
// test's temporary filesystem, so this is the agent's own cost (syscalls,
// parsing, bookkeeping), not the kernel's cost of producing memory.stat;
// `snug-lab bench agent` on a real host adds that.
func BenchmarkPass(b *testing.B) {
	for _, layout := range []string{"v1", "v2"} {
		b.Run(layout, func(b *testing.B) {
			root := b.TempDir()
			pods, err := agenttest.WriteSyntheticNode(root, layout, 110)
			if err != nil {
				b.Fatal(err)
			}
			cfg := NewConfig()
			cfg.CgroupRoot = root
			a, err := New(cfg, clock.RealClock{})
			if err != nil {
				b.Fatal(err)
			}
			defer a.closeAll()
			for _, p := range pods {
				a.UpsertPod(p)
			}
			ctx := context.Background()
			a.Pass(ctx)
			if got := len(a.Containers(Query{Limit: 1})); got != 110 {
				b.Fatalf("tracking %d containers, want 110", got)
			}
			b.ReportAllocs()
			for b.Loop() {
				a.Pass(ctx)
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(time.Second)*100, "%core@1Hz")
		})
	}
}
