package labcli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/snug-dev/snug/internal/cli"
	"github.com/snug-dev/snug/internal/quality"
	"github.com/snug-dev/snug/internal/quality/trace"
)

// benchQualityOptions are snug-lab bench quality's flags.
type benchQualityOptions struct {
	quality.Options
	alibabaCPUMillis, alibabaMemBytes int64
}

func newBenchQualityOptions() *benchQualityOptions {
	cache := os.Getenv("SNUG_CACHE_DIR")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache", "snug")
		}
	}
	return &benchQualityOptions{
		Options: quality.Options{
			Shapes: trace.Shapes(), Seeds: append(slices.Clone(trace.TuningSeeds), trace.HeldOutSeeds...),
			TraceFormat: "snug", Cache: cache, Workers: runtime.GOMAXPROCS(0),
		},
		alibabaCPUMillis: 1000, alibabaMemBytes: 1 << 30,
	}
}

func (o *benchQualityOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Shapes, "shape", o.Shapes, "synthetic shapes to replay")
	fs.Int64SliceVar(&o.Seeds, "seed", o.Seeds, fmt.Sprintf("seeds of the synthetic corpus (tuning half %v, held-out half %v)", trace.TuningSeeds, trace.HeldOutSeeds))
	fs.StringVar(&o.TraceFile, "trace", o.TraceFile, "replay this recorded trace instead of the synthetic corpus")
	fs.StringVar(&o.TraceFormat, "trace-format", o.TraceFormat, "format of --trace: snug (a snug trace recording, JSON or CSV) or alibaba (cluster-trace-v2018 container_usage.csv)")
	fs.Int64Var(&o.alibabaCPUMillis, "alibaba-cpu-millis", o.alibabaCPUMillis, "millicores that cpu_util_percent 100 stands for (the container's cpu_request), also its starting request and limit")
	fs.Int64Var(&o.alibabaMemBytes, "alibaba-mem-bytes", o.alibabaMemBytes, "bytes that mem_util_percent 100 stands for, also the starting request and limit")
	fs.StringVar(&o.Out, "out", o.Out, "write one SVG per trace here")
	fs.StringVar(&o.VPASource, "vpa-source", o.VPASource, "tools/vpareplay of snug's source tree (default: found next to bin/ or above the working directory)")
	fs.StringVar(&o.Cache, "cache-dir", o.Cache, "where vpareplay is built and kept")
	fs.BoolVar(&o.NoVPA, "no-vpa", o.NoVPA, "skip VPA (no Go toolchain needed)")
	fs.IntVar(&o.Workers, "workers", o.Workers, "traces replayed at once")
}

func (o *benchQualityOptions) Validate() error {
	var errs []error
	if o.TraceFile == "" {
		if len(o.Shapes) == 0 || len(o.Seeds) == 0 {
			errs = append(errs, errors.New("--shape and --seed: name at least one"))
		}
		for _, s := range o.Shapes {
			if trace.Describe(s) == "" {
				errs = append(errs, fmt.Errorf("--shape %q: want one of %v", s, trace.Shapes()))
			}
		}
	}
	if o.TraceFormat != "snug" && o.TraceFormat != "alibaba" {
		errs = append(errs, fmt.Errorf("--trace-format %q: want snug or alibaba", o.TraceFormat))
	}
	if o.alibabaCPUMillis <= 0 || o.alibabaMemBytes <= 0 {
		errs = append(errs, errors.New("--alibaba-cpu-millis and --alibaba-mem-bytes must be positive"))
	}
	if o.Workers < 1 {
		errs = append(errs, errors.New("--workers must be at least 1"))
	}
	if !o.NoVPA && o.Cache == "" {
		errs = append(errs, errors.New("--cache-dir: no home directory; give one"))
	}
	o.Alibaba = trace.AlibabaOptions{CPUMillis: o.alibabaCPUMillis, MemBytes: o.alibabaMemBytes}
	return errors.Join(errs...)
}

func newBenchQualityCommand(stdout, stderr io.Writer) *cobra.Command {
	o := newBenchQualityOptions()
	cmd := &cobra.Command{
		Use:   "quality",
		Short: "Replay workload traces under snug, VPA 1.8.1's own code, static requests and KRR, and print how well each sizes",
		Long: `Replays a seeded synthetic corpus (--shape, --seed) or a recorded trace
(--trace) second by second on a model of the node (CFS throttling, OOM kills
with restart back-off, the kubelet's resize latency and its refusal to set a
memory limit below usage) under four sizers:

  snug    the real internal/recommend and internal/resize code, fed the
          signals the agent computes, every second
  vpa     VPA 1.8.1's recommender and updater code (tools/vpareplay, its
          own module, built once into --cache-dir), fed metrics-server's
          15 s samples once a minute, in InPlaceOrRecreate mode
  static  the requests and limits as written
  krr     a KRR-style fixed recommendation (p95 cpu, peak memory + 15%)

and prints per trace and overall (tuning and held-out halves) slack, starved
core-seconds, throttled seconds, OOM kills, resizes per pod-hour, seconds to
"starvation ended" and memory headroom. docs/quality.md defines each.
No lab is used.

Shapes:
` + shapeList(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return cli.WithExitCode(2, err)
			}
			return quality.Bench(cmd.Context(), o.Options, stdout, stderr)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// shapeList lists the corpus's shapes for the help text.
func shapeList() string {
	var b strings.Builder
	for _, s := range trace.Shapes() {
		fmt.Fprintf(&b, "  %-12s %s\n", s, trace.Describe(s))
	}
	return b.String()
}
