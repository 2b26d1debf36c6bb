package labcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/version"
	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/lab/vpa"
	"github.com/snug-dev/snug/lab/internal/quality"
	"github.com/snug-dev/snug/lab/internal/quality/trace"
)

// runCalibrate is `snug-lab bench quality --calibrate`: the sustained-load
// scenario played on the lab under snug and VPA at once, then replayed on
// the model, and the figures compared.
func runCalibrate(ctx context.Context, o *benchQualityOptions, out, errOut io.Writer) (err error) {
	start := time.Now()
	if o.calibrateFrom != "" {
		run, err := readCalibrationRun(o.calibrateFrom)
		if err != nil {
			return err
		}
		with := make([]string, 0, len(run.Sides))
		for _, s := range run.Sides {
			with = append(with, s.Autoscaler)
		}
		seconds := len(run.Sides[0].Seconds[0])
		if o.durationSet && o.duration != time.Duration(seconds)*time.Second {
			return fmt.Errorf("--duration %s: the run in %s lasted %ds (a saved run is replayed for its own length; leave --duration out)", o.duration, o.calibrateFrom, seconds)
		}
		seed, seedNote := o.calibrateSeed, ""
		switch {
		case run.Trace == "":
			seedNote = fmt.Sprintf("; the run saved no seed: --calibrate-seed's %d", seed)
		case o.calibrateSeedSet && o.calibrateSeed != run.Seed:
			return fmt.Errorf("--calibrate-seed %d: the run in %s played %s, seed %d (a saved run is replayed with its own seed; leave --calibrate-seed out)", o.calibrateSeed, o.calibrateFrom, run.Trace, run.Seed)
		default:
			seed = run.Seed
		}
		tr, err := trace.Sustained(seconds, seed)
		if err != nil {
			return err
		}
		if run.Trace != "" && run.Trace != tr.Name {
			return fmt.Errorf("--calibrate-from %s: it played %s, and this build's calibration plays %s", o.calibrateFrom, run.Trace, tr.Name)
		}
		vpaBin, err := calibrationVPA(ctx, o, with, errOut)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "snug-lab bench quality --calibrate-from %s: %s (%ds, played from %s%s) against this build's model\n",
			o.calibrateFrom, tr.Name, seconds, run.Start.UTC().Format(time.RFC3339), seedNote)
		return compareCalibration(out, tr, run, with, vpaBin, start)
	}
	tr, err := trace.Sustained(int(o.duration/time.Second), o.calibrateSeed)
	if err != nil {
		return err
	}
	vpaBin, err := calibrationVPA(ctx, o, o.calibrateWith, errOut)
	if err != nil {
		return err
	}
	lw := &prefixWriter{w: out, prefix: "   "}
	defer lw.Flush()
	release, reused, err := lab.UpOrReuse(ctx, o.lab, o.keepLab, lw)
	if err != nil {
		return err
	}
	if reused {
		fmt.Fprintln(out, "using the lab that is up (and leaving it up)")
	}
	defer func() { err = errors.Join(err, release(context.WithoutCancel(ctx))) }()
	client, err := o.lab.Client()
	if err != nil {
		return err
	}
	k8sVersion := "unknown"
	if v, verr := client.Discovery().ServerVersion(); verr == nil {
		k8sVersion = v.GitVersion
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.lab.Kubeconfig())
	if err != nil {
		return fmt.Errorf("loading the lab's kubeconfig: %w", err)
	}
	cfg.Timeout = requestTimeout
	pc, err := policyclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	vo := vpa.NewOptions(o.lab)
	fmt.Fprintf(out, "snug-lab bench quality --calibrate: %s (%s) on Kubernetes %s, snug %s beside VPA %s (metrics-server %s, resolution %s)\n",
		tr.Name, o.duration, k8sVersion, version.Version, vo.VPAVersion, vo.MetricsServerVersion, vo.MetricResolution)

	if slices.Contains(o.calibrateWith, autoscalerSnug) {
		stop, err := calibrateSnug(ctx, o, client, out)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	if slices.Contains(o.calibrateWith, autoscalerVPA) {
		vrelease, vreused, verr := vpa.UpOrReuse(ctx, vo, o.keepLab, lw)
		if verr != nil {
			return verr
		}
		if vreused {
			fmt.Fprintln(out, "vpa: using the VPA that is up (and leaving it up)")
		}
		defer func() { err = errors.Join(err, vrelease(context.WithoutCancel(ctx))) }()
	}

	run, err := experiment.Calibrate(ctx, experiment.CalibrationEnv{
		Client: client, Policies: pc, Dynamic: dyn, LoadDir: o.lab.LoadDir(), CgroupRoot: "/sys/fs/cgroup",
		Timeout: o.timeout, Log: out,
	}, tr, o.calibrateWith)
	if err != nil {
		return err
	}
	if o.Out != "" {
		if err := writeCalibrationRun(o.Out, run); err != nil {
			return err
		}
	}
	return compareCalibration(out, tr, run, o.calibrateWith, vpaBin, start)
}

// calibrationVPA builds (or finds) vpareplay when with has VPA.
func calibrationVPA(ctx context.Context, o *benchQualityOptions, with []string, errOut io.Writer) (string, error) {
	if !slices.Contains(with, autoscalerVPA) {
		return "", nil
	}
	src := o.VPASource
	if src == "" {
		var err error
		if src, err = quality.FindVPASource(); err != nil {
			return "", err
		}
	}
	return quality.EnsureVPAReplay(ctx, src, o.Cache, errOut)
}

// compareCalibration replays tr on the model and prints it beside the lab's
// run; it fails when a compared figure is out of tolerance.
func compareCalibration(out io.Writer, tr *trace.Trace, run *experiment.CalibrationRun, with []string, vpaBin string, start time.Time) error {
	labRuns := map[string]*quality.Metrics{}
	unmet, fluid := map[string]float64{}, map[string]float64{}
	for _, side := range run.Sides {
		m, err := quality.LabMetrics(tr, side.Autoscaler, side.Seconds)
		if err != nil {
			return err
		}
		m.Targets = side.Targets
		labRuns[side.Autoscaler] = m
		unmet[side.Autoscaler] = quality.LabUnmetCoreSeconds(tr, side.Seconds)
		fluid[side.Autoscaler] = quality.LabThrottledTimeCoreSeconds(tr, side.Seconds)
	}
	var phases *quality.VPAPhases
	if p, ok := quality.LabVPAPhases(labRuns[autoscalerVPA]); ok {
		phases = &p
		fmt.Fprintf(out, "model: VPA's loops at second %d (recommender) and %d (updater) of each minute, read off the lab's run\n", p.Recommender, p.Updater)
	}
	model, err := quality.ModelRuns(tr, with, vpaBin, phases)
	if err != nil {
		return err
	}
	checks, err := quality.Calibrate(with, labRuns, model)
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	writeCalibrationContext(out, run, unmet, fluid)
	fmt.Fprintf(out, "\n%s, %d pods per autoscaler, %s: the lab (cgroups read every second from the host) and the model (lab/internal/quality/node; vpareplay for VPA)\n", tr.Name, len(tr.Pods), time.Duration(tr.Seconds)*time.Second)
	cerr := quality.WriteCalibration(out, checks)
	fmt.Fprintln(out)
	quality.WriteTimelines(out, with, labRuns, model)
	fmt.Fprintf(out, "took %.0fs\n", time.Since(start).Seconds())
	return cerr
}

// writeCalibrationContext prints what the run's figures rest on: the node's
// room, late readings, whether the two autoscalers kept to their own pods,
// each side's events, and the starvation read another way.
func writeCalibrationContext(w io.Writer, run *experiment.CalibrationRun, unmet, fluid map[string]float64) {
	fmt.Fprintf(w, "node: %dm cpu allocatable, at most %dm requested by all its pods; %d of the run's boundaries read more than 100 ms late\n",
		run.NodeAllocatableMillis, run.PeakRequestedMillis, run.LateBoundaries)
	for _, s := range run.Sides {
		var ev []string
		for r, n := range s.Events {
			ev = append(ev, fmt.Sprintf("%s x%d", r, n))
		}
		slices.Sort(ev)
		fmt.Fprintf(w, "%s (%s): pods %v; events %s\n", s.Autoscaler, s.Namespace, s.Pods, strings.Join(ev, ", "))
		if len(s.Foreign) == 0 {
			fmt.Fprintf(w, "  nothing of the other autoscaler on its pods or in its events\n")
		}
		for _, f := range s.Foreign {
			fmt.Fprintf(w, "  OTHER AUTOSCALER: %s\n", f)
		}
		fmt.Fprintf(w, "  starvation read two more ways (not compared): demand told minus cgroup usage in every second %.2f core-s; demand x throttled_time %.2f core-s\n", unmet[s.Autoscaler], fluid[s.Autoscaler])
	}
}

// calibrateSnug installs snug in-cluster as bench reaction does; stop
// uninstalls it (and keeps the pods' logs only if that fails).
func calibrateSnug(ctx context.Context, o *benchQualityOptions, client kubernetes.Interface, out io.Writer) (stop func() error, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the snug binary: %w", err)
	}
	logDir, err := os.MkdirTemp("", "snug-calibrate-")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "snug: installing it in-cluster with its chart (pods' logs in %s at the end)\n", logDir)
	s, err := installInLab(ctx, client, labInstall{lab: o.lab, binDir: filepath.Dir(exe), logDir: logDir, timeout: o.timeout, out: out})
	if err != nil {
		if s != nil {
			err = errors.Join(err, s.Stop())
		}
		return nil, err
	}
	return func() error {
		err := s.Stop()
		if err == nil {
			os.RemoveAll(logDir)
		}
		return err
	}, nil
}

// writeCalibrationRun saves the lab's measurements (every second of every
// pod) as dir/calibrate-lab.json, so that a run can be read again.
func writeCalibrationRun(dir string, run *experiment.CalibrationRun) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("saving the lab run: %w", err)
	}
	data, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("saving the lab run: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "calibrate-lab.json"), data, 0o644); err != nil {
		return fmt.Errorf("saving the lab run: %w", err)
	}
	return nil
}

// readCalibrationRun reads a run writeCalibrationRun saved, and checks that
// it has what the comparison needs.
func readCalibrationRun(path string) (*experiment.CalibrationRun, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--calibrate-from: %w", err)
	}
	var run experiment.CalibrationRun
	if err := json.Unmarshal(data, &run); err != nil {
		return nil, fmt.Errorf("--calibrate-from %s: not a saved calibration run: %w", path, err)
	}
	if len(run.Sides) == 0 {
		return nil, fmt.Errorf("--calibrate-from %s: no autoscaler's side in it", path)
	}
	n := -1
	for _, s := range run.Sides {
		if s.Autoscaler != autoscalerSnug && s.Autoscaler != autoscalerVPA {
			return nil, fmt.Errorf("--calibrate-from %s: a side of autoscaler %q, want snug or vpa", path, s.Autoscaler)
		}
		for _, pod := range s.Seconds {
			if n >= 0 && len(pod) != n || len(pod) == 0 {
				return nil, fmt.Errorf("--calibrate-from %s: the pods' seconds differ in length or are missing", path)
			}
			n = len(pod)
		}
		if len(s.Seconds) == 0 {
			return nil, fmt.Errorf("--calibrate-from %s: side %s has no pods", path, s.Autoscaler)
		}
	}
	return &run, nil
}
