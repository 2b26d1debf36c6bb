package loadgen

import (
	"context"
	"os"
	"strconv"
	"testing"
)

// TestPauseReaps starts a child that exits at once without waiting for it,
// and checks that Pause reaps it (its /proc entry goes away; a zombie keeps
// one) and returns when ctx is done.
func TestPauseReaps(t *testing.T) {
	const child = "/bin/true"
	if _, err := os.Stat(child); err != nil {
		t.Skipf("no %s", child)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Pause(ctx)
		close(done)
	}()
	p, err := os.StartProcess(child, []string{child}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	stat := "/proc/" + strconv.Itoa(p.Pid) + "/stat"
	defer p.Release()
	waitFor(t, "child reaped", func() bool {
		_, err := os.Stat(stat)
		return err != nil
	})
	cancel()
	<-done
}
