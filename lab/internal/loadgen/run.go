package loadgen

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"time"
)

// Options configures Run.
type Options struct {
	// CPU, Memory and Cache are the initial targets, as quantities.
	CPU, Memory, Cache string
	// CacheDir holds the page-cache file (Cache.Dir).
	CacheDir string
	// ControlDir is polled for the file PodName, else the file "all".
	ControlDir string
	// PodName picks this pod's own control file; usually $POD_NAME.
	PodName string
	// PollInterval is how often ControlDir is read.
	PollInterval time.Duration
	// Listen is the HTTP endpoint's address; empty disables it.
	Listen string
	// Marker, if set, is a file Run writes "started <unix seconds>" to.
	Marker string
	// StartupWork is CPU time burnt on StartupThreads before the load
	// starts (a CPU-bound start-up); GET /readyz answers 503 until it is
	// done, 200 after.
	StartupWork    time.Duration
	StartupThreads int
}

// NewOptions returns the defaults: idle, /control polled every 50 ms,
// HTTP on :8080, no marker.
func NewOptions() Options {
	return Options{
		CPU:            "0",
		Memory:         "0",
		Cache:          "0",
		ControlDir:     "/control",
		PollInterval:   50 * time.Millisecond,
		Listen:         ":8080",
		StartupThreads: 4,
	}
}

// AddFlags registers o's flags on fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.CPU, "cpu", o.CPU, "initial CPU to burn, e.g. 300m or 1.5")
	fs.StringVar(&o.Memory, "memory", o.Memory, "initial memory to hold, e.g. 100Mi")
	fs.StringVar(&o.Cache, "cache", o.Cache, "initial size of a file to keep reading, e.g. 64Mi: a page-cache working set, which thrashes (memory pressure) when it does not fit under the memory limit beside --memory")
	fs.StringVar(&o.CacheDir, "cache-dir", o.CacheDir, "directory of that file (default the temporary directory)")
	fs.StringVar(&o.ControlDir, "control-dir", o.ControlDir, "directory polled for the file $POD_NAME, else 'all', holding e.g. 'cpu=300m memory=100Mi'")
	fs.StringVar(&o.PodName, "pod-name", o.PodName, "this pod's control file name (default $POD_NAME)")
	fs.DurationVar(&o.PollInterval, "poll-interval", o.PollInterval, "how often to read the control directory")
	fs.StringVar(&o.Listen, "listen", o.Listen, "HTTP address for GET / and PUT|POST /?cpu=..&memory=..; empty disables")
	fs.StringVar(&o.Marker, "marker", o.Marker, "file to write 'started <unix time>' to at start")
	fs.DurationVar(&o.StartupWork, "startup-work", o.StartupWork, "CPU time to burn before the load starts, a CPU-bound start-up (GET /readyz is 503 until it is done)")
	fs.IntVar(&o.StartupThreads, "startup-threads", o.StartupThreads, "threads the start-up work is spread over")
}

// Validate checks o.
func (o *Options) Validate() error {
	_, err := o.initial()
	return err
}

// initial returns the initial targets, or why the options are wrong.
func (o *Options) initial() (Targets, error) {
	var u Update
	if err := u.Set("cpu", o.CPU); err != nil {
		return Targets{}, fmt.Errorf("--cpu: %w", err)
	}
	if err := u.Set("memory", o.Memory); err != nil {
		return Targets{}, fmt.Errorf("--memory: %w", err)
	}
	if err := u.Set("cache", o.Cache); err != nil {
		return Targets{}, fmt.Errorf("--cache: %w", err)
	}
	if o.PollInterval <= 0 {
		return Targets{}, errors.New("--poll-interval must be positive")
	}
	if o.StartupWork < 0 || o.StartupThreads < 1 {
		return Targets{}, errors.New("--startup-work must not be negative and --startup-threads must be at least 1")
	}
	return u.Apply(Targets{}), nil
}

// Run burns and holds the initial targets, follows the control directory
// and the HTTP endpoint until ctx is done, then stops burning and returns.
// Target changes are logged to stdout, problems to stderr.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	initial, err := o.initial()
	if err != nil {
		return err
	}
	if o.Marker != "" {
		if err := WriteMarker(o.Marker, time.Now()); err != nil {
			return err
		}
	}
	burner := &Burner{}
	defer burner.SetMillis(0)
	cache := &Cache{Dir: o.CacheDir}
	defer cache.SetBytes(0)
	g := NewGenerator(burner, &Memory{}, cache, stdout)
	startup := &Startup{Work: o.StartupWork, Threads: o.StartupThreads}

	if o.Listen != "" {
		ln, err := net.Listen("tcp", o.Listen)
		if err != nil {
			return fmt.Errorf("listening: %w", err)
		}
		srv := &http.Server{Handler: withReadyz(Handler(g), startup), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(stderr, "serving http: %v\n", err)
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}

	if o.StartupWork > 0 {
		began := time.Now()
		startup.Run(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fmt.Fprintf(stdout, "started up: %v of CPU on %d threads in %.2fs\n", o.StartupWork, startup.Threads, time.Since(began).Seconds())
	}
	if env := os.Getenv("GOMEMLIMIT"); env != "" {
		// What a runtime that reads its memory limit at start sees: the
		// Go runtime read GOMEMLIMIT (the downward API's limits.memory,
		// say) when this process began, and keeps it until it ends.
		fmt.Fprintf(stdout, "GOMEMLIMIT %s: the Go runtime's memory limit is %d bytes\n", env, debug.SetMemoryLimit(-1))
	}
	g.Start(initial)

	tick := time.NewTicker(o.PollInterval)
	defer tick.Stop()
	var w controlWatcher
	var lastErr, lastCacheErr string
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		f, err := readControl(o.ControlDir, o.PodName)
		var u Update
		ok := false
		if err == nil {
			u, ok, err = w.observe(f)
		}
		// Report each distinct problem once, not every poll.
		if err != nil && err.Error() != lastErr {
			fmt.Fprintf(stderr, "%v\n", err)
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
		if ok {
			g.Apply(u)
		}
		if err := cache.Err(); err != nil && err.Error() != lastCacheErr {
			fmt.Fprintf(stderr, "keeping the cache file: %v\n", err)
			lastCacheErr = err.Error()
		}
	}
}

// WriteMarker writes "started <unix seconds of now>" to path, replacing it
// atomically so a reader never sees a partial marker.
func WriteMarker(path string, now time.Time) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".marker-*")
	if err != nil {
		return fmt.Errorf("writing marker: %w", err)
	}
	werr := tmp.Chmod(0o644)
	if werr == nil {
		_, werr = tmp.WriteString("started " + strconv.FormatInt(now.Unix(), 10) + "\n")
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing marker: %w", werr)
	}
	return nil
}
