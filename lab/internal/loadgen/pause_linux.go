package loadgen

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Pause blocks until ctx is done, reaping every child that exits meanwhile.
// It is the pod sandbox's PID 1: orphans in the pod's PID namespace are
// re-parented to it and would stay zombies otherwise. main cancels ctx on
// SIGTERM or SIGINT (a PID 1 gets only the signals it has handlers for).
func Pause(ctx context.Context) {
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)
	reap() // children that exited before we listened
	for {
		select {
		case <-ctx.Done():
			return
		case <-chld:
			reap()
		}
	}
}

// reap collects every exited child without blocking. SIGCHLD signals merge,
// so one signal may stand for several children.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
