package agentbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/utils/clock"

	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/agent/agenttest"
)

// Options configure one measurement (snug-lab bench agent's flags).
type Options struct {
	// Containers is how many single-container pods the generated node has.
	Containers int
	// Interval is the agent's sampling interval.
	Interval time.Duration
	// Duration is how long to measure, after one warm-up pass.
	Duration time.Duration
	// Layout is the generated cgroup tree: v1 or v2.
	Layout string
	// History is the points kept per container.
	History int
}

func NewOptions() *Options {
	return &Options{Containers: 110, Interval: time.Second, Duration: 30 * time.Second, Layout: "v2", History: agent.DefaultHistorySize}
}

// AddFlags registers the options' flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Containers, "containers", o.Containers, "containers on the generated node (the kubelet's default pod limit is 110)")
	fs.DurationVar(&o.Interval, "interval", o.Interval, "sampling interval")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "how long to measure")
	fs.StringVar(&o.Layout, "layout", o.Layout, "generated cgroup layout: v1 (separate cpu, cpuacct, memory) or v2 (unified)")
	fs.IntVar(&o.History, "history", o.History, "points kept per container")
}

// Validate reports options that cannot work, naming their flags.
func (o *Options) Validate() error {
	var errs []error
	if o.Containers < 1 || o.Containers > 10000 {
		errs = append(errs, fmt.Errorf("--containers %d is out of range [1, 10000]", o.Containers))
	}
	if o.Layout != "v1" && o.Layout != "v2" {
		errs = append(errs, fmt.Errorf("--layout %q: want v1 or v2", o.Layout))
	}
	if o.Duration < o.Interval {
		errs = append(errs, fmt.Errorf("--duration %v is shorter than --interval %v", o.Duration, o.Interval))
	}
	if err := o.config("x").Validate(); err != nil {
		errs = append(errs, errors.New(strings.NewReplacer("interval", "--interval", "history size", "--history").Replace(err.Error())))
	}
	return errors.Join(errs...)
}

func (o *Options) config(root string) agent.Config {
	c := agent.NewConfig()
	c.Node, c.Interval, c.HistorySize, c.CgroupRoot = "synthetic", o.Interval, o.History, root
	return c
}

// Args are the flags that make another process's Options equal o.
func (o *Options) Args() []string {
	return []string{"--containers", fmt.Sprint(o.Containers), "--interval", o.Interval.String(),
		"--duration", o.Duration.String(), "--layout", o.Layout, "--history", fmt.Sprint(o.History)}
}

// Run writes the generated node, feeds its pods to a real agent.Agent (no
// API server), runs its loop for o.Duration after one warm-up pass and
// prints to out the CPU (getrusage delta over wall time, in percent of one
// core), the memory (VmRSS, its anonymous and file-backed parts, Go heap)
// and the median and p99 of the passes. The figures are this process's: run
// it in a process that links what the agent links (cmd/snug-agent-bench).
func Run(ctx context.Context, o *Options, out io.Writer) error {
	root, err := os.MkdirTemp("", "snug-bench-agent-")
	if err != nil {
		return fmt.Errorf("making the generated node: %w", err)
	}
	defer os.RemoveAll(root)
	pods, err := agenttest.WriteSyntheticNode(root, o.Layout, o.Containers)
	if err != nil {
		return err
	}

	var (
		mu       sync.Mutex
		passes   []time.Duration
		measured bool
	)
	cfg := o.config(root)
	cfg.AfterPass = func(took time.Duration, n int) {
		mu.Lock()
		defer mu.Unlock()
		if measured {
			passes = append(passes, took)
		}
		measured = true // the first pass opens every handle: not measured
	}
	a, err := agent.New(cfg, clock.RealClock{})
	if err != nil {
		return err
	}
	for _, p := range pods {
		a.UpsertPod(p)
	}
	a.SetSynced()
	// Start from a collected heap, so that setup garbage does not count.
	runtime.GC()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	var start time.Time
	var before syscall.Rusage
	go func() { done <- a.Run(ctx) }()
	// Measure from the end of the first pass.
	for {
		mu.Lock()
		m := measured
		mu.Unlock()
		if m {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	start = time.Now()
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		return fmt.Errorf("reading rusage: %w", err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(o.Duration):
	}
	var after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		return fmt.Errorf("reading rusage: %w", err)
	}
	wall := time.Since(start)
	rss, _ := procStatus()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	tracked := len(a.Containers(agent.Query{Limit: 1}))
	cancel()
	if err := <-done; err != nil {
		return err
	}

	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()) - time.Duration(before.Utime.Nano()+before.Stime.Nano())
	mu.Lock()
	ds := slices.Clone(passes)
	mu.Unlock()
	slices.Sort(ds)
	pct := func(q float64) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		return ds[min(len(ds)-1, int(q*float64(len(ds))))]
	}
	fmt.Fprintf(out, "snug-lab bench agent: %d containers (%d tracked), cgroup %s layout, every %v, %d points each, measured %.1fs\n",
		o.Containers, tracked, o.Layout, o.Interval, o.History, wall.Seconds())
	fmt.Fprintf(out, "  cpu      %.3f%% of one core (%v user+system over %.1fs wall)\n", 100*cpu.Seconds()/wall.Seconds(), cpu.Round(time.Microsecond), wall.Seconds())
	fmt.Fprintf(out, "  passes   %d, median %v, p99 %v, max %v (%.1f µs per container)\n",
		len(ds), pct(0.5).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), pct(1).Round(time.Microsecond),
		float64(pct(0.5).Microseconds())/float64(max(tracked, 1)))
	fmt.Fprintf(out, "  memory   VmRSS %.1f MiB (anonymous %.1f MiB, file-backed %.1f MiB: the binary's pages), Go heap in use %.1f MiB, Go runtime total %.1f MiB\n",
		mib(rss["VmRSS"]), mib(rss["RssAnon"]), mib(rss["RssFile"]), mib(int64(ms.HeapInuse)), mib(int64(ms.Sys)))
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// procStatus reads the memory lines (VmRSS, RssAnon, RssFile, ...) of
// /proc/self/status, in bytes.
func procStatus() (map[string]int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.HasSuffix(v, " kB") {
			continue
		}
		var kb int64
		if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb); err == nil {
			out[k] = kb << 10
		}
	}
	return out, sc.Err()
}
