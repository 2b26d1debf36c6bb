package loadgen

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeLoad records what the generator asked the burner and the memory
// holder for, without burning or holding anything.
type fakeLoad struct{ millis, bytes int64 }

// fakeCache records the page-cache target.
type fakeCache struct{ bytes int64 }

func (f *fakeCache) SetBytes(n int64) { f.bytes = n }

func (f *fakeLoad) SetMillis(m int64) { f.millis = m }
func (f *fakeLoad) SetBytes(n int64)  { f.bytes = n }

func TestGenerator(t *testing.T) {
	var fake fakeLoad
	var cache fakeCache
	var log bytes.Buffer
	g := NewGenerator(&fake, &fake, &cache, &log)
	g.Start(Targets{})
	steps := []struct {
		u    Update
		want Targets
	}{
		{Update{CPUMillis: ptr(300)}, Targets{300, 0, 0}},
		{Update{MemBytes: ptr(100 << 20)}, Targets{300, 100 << 20, 0}},
		{Update{CPUMillis: ptr(300)}, Targets{300, 100 << 20, 0}}, // no change, no log
		{Update{CacheBytes: ptr(64 << 20)}, Targets{300, 100 << 20, 64 << 20}},
		{Update{ptr(1500), ptr(0), ptr(0)}, Targets{1500, 0, 0}},
	}
	for i, s := range steps {
		if got := g.Apply(s.u); got != s.want {
			t.Errorf("step %d: Apply() = %v, want %v", i, got, s.want)
		}
		if got := (Targets{fake.millis, fake.bytes, cache.bytes}); got != s.want {
			t.Errorf("step %d: load set to %v, want %v", i, got, s.want)
		}
	}
	if g.Targets() != (Targets{1500, 0, 0}) {
		t.Errorf("Targets() = %v", g.Targets())
	}
	want := "cpu=0 memory=0\ncpu=300m memory=0\ncpu=300m memory=100Mi\ncpu=300m memory=100Mi cache=64Mi\ncpu=1500m memory=0\n"
	if d := cmp.Diff(want, log.String()); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
}
