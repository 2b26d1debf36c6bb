package lab

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestLockIsExclusive: while one process holds the lab's lock another
// cannot take it and is told so; once released it can. The other process
// is flock(1), so the lock is a real flock between processes, not within
// this one.
func TestLockIsExclusive(t *testing.T) {
	o := NewOptions()
	o.Dir = filepath.Join(t.TempDir(), "lab")
	release, err := Lock(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1) to hold the lock from another process")
	}
	if err := exec.Command("flock", "-n", o.Dir+".lock", "true").Run(); err == nil {
		t.Fatal("another process took the lock while it was held")
	}
	release()
	if err := exec.Command("flock", "-n", o.Dir+".lock", "true").Run(); err != nil {
		t.Fatalf("another process could not take the released lock: %v", err)
	}
	hold := exec.Command("flock", o.Dir+".lock", "sleep", "30")
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hold.Process.Kill(); _ = hold.Wait() })
	// Wait until flock(1) holds it: -n fails while it does.
	for i := 0; exec.Command("flock", "-n", o.Dir+".lock", "true").Run() == nil; i++ {
		if i == 1000 {
			t.Fatal("flock(1) never took the lock")
		}
	}
	if _, err := Lock(o); !errors.Is(err, ErrLocked) {
		t.Errorf("Lock while another process holds it: %v, want ErrLocked", err)
	}
}
