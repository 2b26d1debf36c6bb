package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one process the lab started: its PID and the kernel's start time
// of that PID, so that a recycled PID is never taken for it.
type proc struct {
	Name      string
	PID       int
	StartTick uint64
}

func pidFile(o *Options, name string) string { return o.path("pids", name+".pid") }
func logFile(o *Options, name string) string { return o.path("logs", name+".log") }

// startProc starts argv detached (its own session), with output to the
// component's log file, and records its PID.
func startProc(o *Options, name string, argv []string) (*proc, error) {
	if err := os.MkdirAll(o.path("pids"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.path("logs"), 0o755); err != nil {
		return nil, err
	}
	lf, err := os.OpenFile(logFile(o, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	defer lf.Close()
	fmt.Fprintf(lf, "\n=== %s: %s\n", time.Now().Format(time.RFC3339), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Dir = o.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{Name: name, PID: cmd.Process.Pid}
	p.StartTick, _ = startTick(p.PID)
	// Reap it if it dies while up is still running; later its parent is init.
	go func() { _ = cmd.Wait() }()
	data := fmt.Sprintf("%d %d\n", p.PID, p.StartTick)
	if err := os.WriteFile(pidFile(o, name), []byte(data), 0o644); err != nil {
		return nil, fmt.Errorf("recording %s pid: %w", name, err)
	}
	return p, nil
}

// readProc loads a recorded process; ok is false when none is recorded.
func readProc(o *Options, name string) (p *proc, ok bool) {
	data, err := os.ReadFile(pidFile(o, name))
	if err != nil {
		return nil, false
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return nil, false
	}
	pid, err1 := strconv.Atoi(f[0])
	tick, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	return &proc{Name: name, PID: pid, StartTick: tick}, true
}

// alive reports whether the recorded process still runs (and is the same
// process: same PID and same start time).
func (p *proc) alive() bool {
	tick, err := startTick(p.PID)
	if err != nil || tick != p.StartTick {
		return false
	}
	state, _ := procState(p.PID)
	return state != "Z"
}

// stop sends SIGTERM, waits up to grace, then SIGKILL.
func (p *proc) stop(grace time.Duration) error {
	if !p.alive() {
		return nil
	}
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !p.alive() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	for i := 0; i < 100; i++ {
		if !p.alive() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.PID)
}

// procStat returns the fields of /proc/PID/stat after the command name.
func procStat(pid int) ([]string, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, errors.New("malformed stat")
	}
	return strings.Fields(s[i+1:]), nil
}

// startTick is field 22 of /proc/PID/stat: start time in clock ticks.
func startTick(pid int) (uint64, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 20 {
		return 0, errors.New("short stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

func procState(pid int) (string, error) {
	f, err := procStat(pid)
	if err != nil {
		return "", err
	}
	return f[0], nil
}

// childrenOf lists every process whose command line contains marker (used
// to find the containerd shims that the lab's containerd started: their
// command line names the lab's containerd socket).
func processesWith(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// StartProcess starts argv on the host (the root network namespace) as an
// add-on of the lab, such as metrics-server or upstream VPA: detached, its
// output appended to LogFile(o, name), its PID and start time recorded like
// a component's, so that Down stops it as well. It returns the PID.
func StartProcess(o *Options, name string, argv []string) (int, error) {
	if slices.Contains(componentNames, name) || !addOnNameRE.MatchString(name) {
		return 0, fmt.Errorf("starting %q: not a valid add-on process name", name)
	}
	p, err := startProc(o, name, argv)
	if err != nil {
		return 0, err
	}
	return p.PID, nil
}

// StopProcess stops the add-on process name (SIGTERM, SIGKILL after grace)
// and forgets it. One that is not recorded or no longer runs is no error.
func StopProcess(o *Options, name string, grace time.Duration) error {
	p, ok := readProc(o, name)
	if !ok {
		return nil
	}
	if err := p.stop(grace); err != nil {
		return err
	}
	if err := os.Remove(pidFile(o, name)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("forgetting %s: %w", name, err)
	}
	return nil
}

// ProcessRunning returns the recorded PID of the add-on process name and
// whether that very process still runs.
func ProcessRunning(o *Options, name string) (pid int, running bool) {
	p, ok := readProc(o, name)
	if !ok {
		return 0, false
	}
	return p.PID, p.alive()
}

// LogFile is where the output of the lab's process name goes.
func LogFile(o *Options, name string) string { return logFile(o, name) }

var addOnNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// addOns lists the recorded processes that are not lab components.
func addOns(o *Options) []string {
	paths, _ := filepath.Glob(pidFile(o, "*"))
	var names []string
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".pid")
		if !slices.Contains(componentNames, name) {
			names = append(names, name)
		}
	}
	return names
}

// PID returns the PID of the lab component name ("kubelet",
// "kube-apiserver", ...) if the lab started it and it still runs. Tests use
// it to pause the kubelet (SIGSTOP) for a moment.
func (o *Options) PID(name string) (int, bool) {
	p, ok := readProc(o, name)
	if !ok || !p.alive() {
		return 0, false
	}
	return p.PID, true
}
