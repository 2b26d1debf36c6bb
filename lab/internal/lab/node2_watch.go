package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
)

// A User-Mode Linux guest here could lock up while it ran: its kernel
// process spun, the console and the guest's logs ended without a message,
// and its pods stopped answering, while a container started or was killed.
// The stacks RebootV2Node records (mconsole.go) showed where: a freed BPF
// program's flush, which uml/vmalloc.patch removes (uml.go). The guest's
// cgroup mirror writes a heartbeat into the share once a second;
// V2Stalled reads it, and RebootV2Node starts the guest afresh, so that a
// test harness (or a person, 'snug-lab v2-node reboot') can tell a lockup
// from a result and recover from it.

func (o *Options) v2Heartbeat() string { return o.v2Share("state", "heartbeat") }

// V2Stall describes a guest whose heartbeat stopped.
type V2Stall struct {
	// LastBeat is when the guest last wrote its heartbeat (zero: never
	// since its boot).
	LastBeat time.Time
	// Silent is how long it has been silent, counted from LastBeat or,
	// when they are later, from its start, its boot script's last mark or
	// the time the caller last knew it to run.
	Silent time.Duration
	// Detail says what its kernel process does now and what the console
	// printed last.
	Detail string
}

func (s V2Stall) String() string {
	last := "never"
	if !s.LastBeat.IsZero() {
		last = s.LastBeat.UTC().Format("15:04:05.0")
	}
	return fmt.Sprintf("no heartbeat for %.1fs (last %s); %s", s.Silent.Seconds(), last, s.Detail)
}

// V2LastBeat is when the running guest last wrote its heartbeat; ok is
// false when it has not since it booted.
func V2LastBeat(o *Options) (time.Time, bool) {
	fi, err := os.Stat(o.v2Heartbeat())
	if err != nil {
		return time.Time{}, false
	}
	return fi.ModTime(), true
}

// V2Stalled reports whether the cgroup-v2 node's guest runs but has not
// written its heartbeat for after, counted from the latest of its last
// beat, its start, its boot script's last mark, and known (a time the
// caller knew it to run, such as the end of its boot). A guest that is not
// running is not stalled: it crashed or was removed, which V2Running
// tells. When it is stalled it measures the guest's processes for a
// second, for the detail.
func V2Stalled(o *Options, known time.Time, after time.Duration) (V2Stall, bool) {
	g, ok := readProc(o, v2Component)
	if !ok || !g.alive() {
		return V2Stall{}, false
	}
	beat, _ := V2LastBeat(o)
	// Until the mirror beats, the guest's start and its boot script's
	// marks say it runs.
	ref := beat
	for _, p := range []string{pidFile(o, v2Component), o.v2Share("state", "boot.log")} {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(ref) {
			ref = fi.ModTime()
		}
	}
	if known.After(ref) {
		ref = known
	}
	silent := time.Since(ref)
	if silent < after {
		return V2Stall{}, false
	}
	state, _ := procState(g.PID)
	cost := MeasureV2Cost(o, time.Second)
	return V2Stall{
		LastBeat: beat,
		Silent:   silent,
		Detail: fmt.Sprintf("its kernel process (pid %d) is in state %s, its %d processes used %.0f%% of a core over 1s; the console's last line: %q",
			g.PID, state, cost.Processes, cost.CPUPercent, strings.TrimSpace(Tail(logFile(o, v2Component), 1))),
	}, true
}

// RebootV2Node starts the cgroup-v2 node's guest afresh: it ends the
// running (or hung) one, deletes the pods bound to the node with no grace
// period (they went with it; their controllers make new ones), boots the
// guest from a new copy-on-write disk on the same network, and returns
// once its kubelet has posted Ready again. The Node object stays.
func RebootV2Node(ctx context.Context, o *Options, log io.Writer) error {
	g, ok := readProc(o, v2Component)
	if !ok {
		return fmt.Errorf("the cgroup-v2 node %s is not part of the lab ('snug-lab v2-node add' first)", o.V2.Name)
	}
	if api, ok := readProc(o, "kube-apiserver"); !ok || !api.alive() {
		return errors.New("the lab is not up: the cgroup-v2 node reboots into a running lab")
	}
	client, err := o.Client()
	if err != nil {
		return err
	}
	start := time.Now()
	if g.alive() {
		// For the record of a hang: what its kernel was doing.
		fmt.Fprintf(log, "the guest's kernel before the reboot:\n%s", V2KernelState(o, g.PID, 5*time.Second))
	}
	fmt.Fprintf(log, "rebooting the cgroup-v2 node %s (pid %d)\n", o.V2.Name, g.PID)
	if err := killSession(g); err != nil {
		return err
	}
	if err := deleteNodePods(ctx, client, o.V2.Name); err != nil {
		return fmt.Errorf("deleting the pods of the stopped guest: %w", err)
	}
	// The new guest's mirror starts from an empty copy: it removes only
	// the cgroups it copied itself.
	if err := os.RemoveAll(o.V2CgroupRoot()); err != nil {
		return err
	}
	if err := os.MkdirAll(o.V2CgroupRoot(), 0o755); err != nil {
		return err
	}
	if err := bootV2Guest(ctx, o, log); err != nil {
		return err
	}
	err = o.waitFor(ctx, "node "+o.V2.Name+" Ready after the reboot", o.ReadyTimeout, func(ctx context.Context) bool {
		if g, ok := readProc(o, v2Component); !ok || !g.alive() {
			return false
		}
		return nodeReadySince(ctx, client, o.V2.Name, start)
	})
	if g, ok := readProc(o, v2Component); err != nil && ok && !g.alive() {
		return fmt.Errorf("the cgroup-v2 node's kernel exited; last lines of %s:\n%s", logFile(o, v2Component), Tail(logFile(o, v2Component), 15))
	}
	if err != nil {
		return fmt.Errorf("%w; last lines of the guest's kubelet log:\n%s", err, Tail(o.v2Share("logs", "kubelet.log"), 10))
	}
	fmt.Fprintf(log, "node %s Ready again %.1fs after the reboot began\n", o.V2.Name, time.Since(start).Seconds())
	return nil
}

// StopV2Guest stops every process of the guest with SIGSTOP, as a test of
// the watchdog: the guest stops beating, as a hung one does, and
// RebootV2Node (SIGKILL) ends it. It returns how many it stopped.
func StopV2Guest(o *Options) (int, error) {
	g, ok := readProc(o, v2Component)
	if !ok || !g.alive() {
		return 0, fmt.Errorf("the cgroup-v2 node %s does not run", o.V2.Name)
	}
	members := sessionMembers(g.PID)
	for _, pid := range members {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return 0, fmt.Errorf("stopping pid %d of the guest: %w", pid, err)
		}
	}
	return len(members), nil
}
