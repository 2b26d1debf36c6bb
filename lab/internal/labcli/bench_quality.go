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
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/snug-dev/snug/internal/cli"
	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/quality"
	"github.com/snug-dev/snug/lab/internal/quality/trace"
)

// benchQualityOptions are snug-lab bench quality's flags.
type benchQualityOptions struct {
	quality.Options
	alibabaCPUMillis, alibabaMemBytes int64
	googleMode                        string

	// calibrate plays the sustained-load scenario on the lab instead
	// (runCalibrate); the fields below are its.
	calibrate bool
	// calibrateFrom compares a saved lab run (calibrate-lab.json) with the
	// model instead of playing one.
	calibrateFrom string
	calibrateWith []string
	lab           *lab.Options
	duration      time.Duration
	calibrateSeed int64
	// durationSet and calibrateSeedSet say that --duration and
	// --calibrate-seed were given (--calibrate-from takes both from the
	// saved run, and refuses other values).
	durationSet, calibrateSeedSet bool
	keepLab                       bool
	timeout                       time.Duration
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
			Google: trace.GoogleOptions{CPUMillis: 64000, MemBytes: 256 << 30, Seed: 1, Hours: 72},
		},
		alibabaCPUMillis: 1000, alibabaMemBytes: 1 << 30,
		googleMode:    "drawn",
		calibrateWith: []string{autoscalerSnug, autoscalerVPA},
		lab:           lab.NewOptions(), duration: trace.SustainedSeconds * time.Second, calibrateSeed: 1, timeout: 3 * time.Minute,
	}
}

func (o *benchQualityOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Shapes, "shape", o.Shapes, "synthetic shapes to replay")
	fs.Int64SliceVar(&o.Seeds, "seed", o.Seeds, fmt.Sprintf("seeds of the synthetic corpus (tuning half %v, held-out half %v)", trace.TuningSeeds, trace.HeldOutSeeds))
	fs.StringVar(&o.TraceFile, "trace", o.TraceFile, "replay this recorded trace instead of the synthetic corpus")
	fs.StringVar(&o.TraceFormat, "trace-format", o.TraceFormat, "format of --trace: snug (a snug trace recording, JSON or CSV), alibaba (cluster-trace-v2018 container_usage.csv) or google (cluster-data 2019 instance_usage rows as cloud-traces-comparison publishes them: a CSV file or a directory of them; one trace per job)")
	fs.Float64Var(&o.Google.CPUMillis, "google-cpu-millis", o.Google.CPUMillis, "google: millicores a normalised cpu of 1.0 (the largest machine) stands for")
	fs.Float64Var(&o.Google.MemBytes, "google-mem-bytes", o.Google.MemBytes, "google: bytes a normalised memory of 1.0 (the largest machine) stands for")
	fs.StringVar(&o.googleMode, "google-mode", o.googleMode, "google: drawn (each second's cpu drawn from its window's percentiles, memory at the window's mean with one peak at its max) or hold (each window's mean cpu and peak memory held for its 5 minutes: the pessimistic bound for memory)")
	fs.Uint64Var(&o.Google.Seed, "google-seed", o.Google.Seed, "google: the seed of the drawn seconds")
	fs.Float64Var(&o.Google.Hours, "google-hours", o.Google.Hours, "google: replay at most this many hours of each job (0: all of it)")
	fs.BoolVar(&o.Google.CPULimit, "google-cpu-limit", o.Google.CPULimit, "google: give each task a cpu limit at its Borg cpu limit (Guaranteed pods); by default the Borg cpu limit is the request alone, as Borg lets tasks use idle cpu above it")
	fs.Int64Var(&o.alibabaCPUMillis, "alibaba-cpu-millis", o.alibabaCPUMillis, "millicores that cpu_util_percent 100 stands for (the container's cpu_request), also its starting request and limit")
	fs.Int64Var(&o.alibabaMemBytes, "alibaba-mem-bytes", o.alibabaMemBytes, "bytes that mem_util_percent 100 stands for, also the starting request and limit")
	fs.StringVar(&o.Out, "out", o.Out, "write one SVG per trace here (--calibrate: the lab's measurements, calibrate-lab.json)")
	fs.StringVar(&o.VPASource, "vpa-source", o.VPASource, "tools/vpareplay of snug's source tree (default: found next to bin/ or above the working directory)")
	fs.StringVar(&o.Cache, "cache-dir", o.Cache, "where vpareplay is built and kept")
	fs.BoolVar(&o.NoVPA, "no-vpa", o.NoVPA, "skip VPA (no Go toolchain needed)")
	fs.IntVar(&o.Workers, "workers", o.Workers, "traces replayed at once")
	fs.BoolVar(&o.calibrate, "calibrate", o.calibrate, "play the sustained-load scenario into snug-load on the lab, under snug and VPA side by side, and compare the lab's figures with the model's")
	fs.StringVar(&o.calibrateFrom, "calibrate-from", o.calibrateFrom, "--calibrate: compare the lab run saved in this calibrate-lab.json (--out of an earlier run) with the model, without a lab, on the trace that run played (its length and seed)")
	fs.DurationVar(&o.duration, "duration", o.duration, "--calibrate: the scenario's length (the field report's test is 30m; whole seconds)")
	fs.StringSliceVar(&o.calibrateWith, "autoscaler", o.calibrateWith, "--calibrate: the autoscalers, side by side: snug,vpa, or one of them")
	fs.Int64Var(&o.calibrateSeed, "calibrate-seed", o.calibrateSeed, "--calibrate: the seed of the scenario's per-second noise")
	fs.BoolVar(&o.keepLab, "keep-lab", o.keepLab, "--calibrate: leave the lab (and VPA) up if this command brought them up")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "--calibrate: how long each wait before the run may take (installs, pods running)")
	// The lab's flags, but one --cache-dir: vpareplay's cache is the lab's.
	labFlags := pflag.NewFlagSet("lab", pflag.ContinueOnError)
	o.lab.AddFlags(labFlags)
	labFlags.VisitAll(func(f *pflag.Flag) {
		if f.Name != "cache-dir" {
			f.Usage = "--calibrate: " + f.Usage
			fs.AddFlag(f)
		}
	})
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
	if o.TraceFormat != "snug" && o.TraceFormat != "alibaba" && o.TraceFormat != "google" {
		errs = append(errs, fmt.Errorf("--trace-format %q: want snug, alibaba or google", o.TraceFormat))
	}
	if o.Google.CPUMillis <= 0 || o.Google.MemBytes <= 0 || o.Google.Hours < 0 {
		errs = append(errs, errors.New("--google-cpu-millis and --google-mem-bytes must be positive, --google-hours not negative"))
	}
	if o.googleMode != "drawn" && o.googleMode != "hold" {
		errs = append(errs, fmt.Errorf("--google-mode %q: want drawn or hold", o.googleMode))
	}
	o.Google.Hold = o.googleMode == "hold"
	if o.alibabaCPUMillis <= 0 || o.alibabaMemBytes <= 0 {
		errs = append(errs, errors.New("--alibaba-cpu-millis and --alibaba-mem-bytes must be positive"))
	}
	if o.Workers < 1 {
		errs = append(errs, errors.New("--workers must be at least 1"))
	}
	if !o.NoVPA && o.Cache == "" {
		errs = append(errs, errors.New("--cache-dir: no home directory; give one"))
	}
	if o.calibrateFrom != "" && !o.calibrate {
		errs = append(errs, errors.New("--calibrate-from: only with --calibrate"))
	}
	if o.calibrate {
		if o.TraceFile != "" || o.NoVPA {
			errs = append(errs, errors.New("--calibrate plays its own scenario under snug and VPA: no --trace or --no-vpa"))
		}
		if o.duration < 10*time.Second || o.duration%time.Second != 0 {
			errs = append(errs, fmt.Errorf("--duration %s: want whole seconds, at least 10s", o.duration))
		}
		seen := map[string]bool{}
		for _, a := range o.calibrateWith {
			if a != autoscalerSnug && a != autoscalerVPA || seen[a] {
				errs = append(errs, fmt.Errorf("--autoscaler %v: want snug, vpa or snug,vpa", o.calibrateWith))
				break
			}
			seen[a] = true
		}
		if len(o.calibrateWith) == 0 {
			errs = append(errs, errors.New("--autoscaler: name snug, vpa or both"))
		}
		if o.timeout <= 0 {
			errs = append(errs, fmt.Errorf("--timeout %s: want a positive duration", o.timeout))
		}
		o.lab.CacheDir = o.Cache
		errs = append(errs, o.lab.Validate())
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
No lab is used, except with --calibrate: then the field report's
sustained-load test (--duration, 30m; two replicas at cpu 50m/100m burning
200m +-15% a second) is played into snug-load on the lab (brought up if it is
not up, taken down after unless it was up or --keep-lab) under snug (installed
in-cluster) and upstream VPA 1.8.1 side by side, one namespace each; the
cgroups are read every second; and the lab's resizes, slack and starved
core-seconds are printed beside the model's for the same trace, with the
tolerance and PASS/FAIL of each (docs/quality.md, "Calibration on the lab").

Shapes:
` + shapeList(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.durationSet, o.calibrateSeedSet = cmd.Flags().Changed("duration"), cmd.Flags().Changed("calibrate-seed")
			if err := o.Validate(); err != nil {
				return cli.WithExitCode(2, err)
			}
			if o.calibrate {
				return runCalibrate(cmd.Context(), o, stdout, stderr)
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
