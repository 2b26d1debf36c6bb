package loadgen

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCache(t *testing.T) {
	c := &Cache{Dir: t.TempDir()}
	size := func() int64 {
		fi, err := os.Stat(c.path())
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	c.SetBytes(3<<20 + 5)
	if got := size(); got != 3<<20+5 || c.Err() != nil {
		t.Fatalf("file of %d bytes (%v), want %d", got, c.Err(), 3<<20+5)
	}
	b, err := os.ReadFile(c.path())
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range b {
		if x == 0 {
			t.Fatalf("byte %d is zero: a hole would take no page cache", i)
		}
	}
	c.SetBytes(1 << 20)
	if got := size(); got != 1<<20 {
		t.Errorf("after shrinking: %d bytes, want %d", got, 1<<20)
	}
	c.SetBytes(0)
	if got := size(); got != -1 {
		t.Errorf("after 0: a file of %d bytes, want none", got)
	}
	bad := &Cache{Dir: filepath.Join(t.TempDir(), "missing")}
	bad.SetBytes(1 << 20)
	if bad.Err() == nil {
		t.Error("no error for a directory that does not exist")
	}
	bad.SetBytes(0)
}
