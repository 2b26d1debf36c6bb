package labcli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/cli"
	"github.com/snug-dev/snug/internal/trace"
	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/lab/vpa"
)

// qosAutoscalers are the autoscalers `snug-lab bench qos` can run, in the
// order they run.
var qosAutoscalers = []string{"snug", "vpa"}

// benchQoSOptions configures `snug-lab bench qos`.
type benchQoSOptions struct {
	lab *lab.Options
	// Autoscalers are the autoscalers to run, one after the other.
	Autoscalers []string
	// KeepLab leaves a lab (and VPA) the command brought up running.
	KeepLab bool
	// Observe bounds the observation after the load step; snug's run ends
	// as soon as every pod is resized in place.
	Observe time.Duration
	// TraceDir, when set, receives each run's recording (JSON, SVG, CSV)
	// and snug's logs.
	TraceDir string
}

func newBenchQoSOptions() *benchQoSOptions {
	return &benchQoSOptions{lab: lab.NewOptions(), Autoscalers: slices.Clone(qosAutoscalers), Observe: 5 * time.Minute}
}

func (o *benchQoSOptions) AddFlags(fs *pflag.FlagSet) {
	o.lab.AddFlags(fs)
	fs.StringSliceVar(&o.Autoscalers, "autoscaler", o.Autoscalers, "autoscalers to run, in this order: snug, vpa")
	fs.BoolVar(&o.KeepLab, "keep-lab", o.KeepLab, "leave the lab (and VPA) up afterwards (a lab that was already up is always left up)")
	fs.DurationVar(&o.Observe, "observe", o.Observe, "how long to watch after the load step (snug's run ends once every pod is resized)")
	fs.StringVar(&o.TraceDir, "trace-dir", o.TraceDir, "write each run's recording (qos-AUTOSCALER.json, .svg, .csv) and snug's logs here")
}

func (o *benchQoSOptions) Validate() error {
	var errs []error
	if len(o.Autoscalers) == 0 {
		errs = append(errs, fmt.Errorf("--autoscaler: name at least one of %s", strings.Join(qosAutoscalers, ", ")))
	}
	seen := map[string]bool{}
	for _, a := range o.Autoscalers {
		switch {
		case !slices.Contains(qosAutoscalers, a):
			errs = append(errs, fmt.Errorf("--autoscaler %q: want %s", a, strings.Join(qosAutoscalers, " or ")))
		case seen[a]:
			errs = append(errs, fmt.Errorf("--autoscaler names %s twice", a))
		}
		seen[a] = true
	}
	if o.Observe < 10*time.Second || o.Observe > time.Hour {
		errs = append(errs, fmt.Errorf("--observe %v is out of range [10s, 1h]", o.Observe))
	}
	if o.TraceDir != "" {
		if st, err := os.Stat(o.TraceDir); err == nil && !st.IsDir() {
			errs = append(errs, fmt.Errorf("--trace-dir %s is not a directory", o.TraceDir))
		}
	}
	if err := o.lab.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func newBenchQoSCommand(stdout io.Writer) *cobra.Command {
	o := newBenchQoSOptions()
	cmd := &cobra.Command{
		Use:   "qos",
		Short: "Run the field report's wall 4 (a Guaranteed Deployment under RequestsOnly, load above its cpu limit) with snug and upstream VPA",
		Long: `Brings the lab up (or uses the one that is up), then for each --autoscaler
creates a Deployment of 2 snug-load pods that are Guaranteed (cpu 100m/100m,
memory 64Mi/64Mi), puts it under the autoscaler with controlledValues
RequestsOnly and updateMode InPlaceOrRecreate, steps the load to cpu=400m
and records the pods: desired and actual resources, QoS class, restarts,
pod UIDs (an eviction shows as a new pod), resize conditions and events.
It prints the timeline and a one-line verdict per autoscaler.

snug runs as this binary's agent and controller on the lab's node; VPA is
the lab's upstream VPA (snug-lab vpa).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return cli.WithExitCode(2, err)
			}
			return runBenchQoS(cmd.Context(), o, stdout)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runBenchQoS(ctx context.Context, o *benchQoSOptions, out io.Writer) (err error) {
	if o.TraceDir != "" {
		if err := os.MkdirAll(o.TraceDir, 0o755); err != nil {
			return fmt.Errorf("making --trace-dir: %w", err)
		}
	}
	lw := &prefixWriter{w: out, prefix: "   "}
	defer lw.Flush()
	release, _, err := lab.UpOrReuse(ctx, o.lab, o.KeepLab, lw)
	lw.Flush()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release(context.WithoutCancel(ctx))) }()
	client, err := o.lab.Client()
	if err != nil {
		return err
	}
	server := "?"
	if v, verr := client.Discovery().ServerVersion(); verr == nil {
		server = v.GitVersion
	}
	fmt.Fprintf(out, "snug-lab bench qos: the field report's wall 4 on Kubernetes %s (node %s)\n", server, o.lab.NodeName)
	fmt.Fprintf(out, "  workload  Deployment %s: %d snug-load pods, Guaranteed (cpu 100m/100m, memory 64Mi/64Mi), burning 50m\n",
		experiment.QoSDeployment, experiment.QoSReplicas)
	fmt.Fprintf(out, "  policy    updateMode InPlaceOrRecreate, controlledValues RequestsOnly, cpu and memory\n")
	fmt.Fprintf(out, "  step      %s for every pod at t=0 (4x the cpu limit); observe up to %v\n", experiment.QoSLoad, o.Observe)

	verdicts := map[string]string{}
	for _, a := range o.Autoscalers {
		var run *experiment.QoSRun
		switch a {
		case "snug":
			run, err = benchQoSSnug(ctx, o, client, out)
		case "vpa":
			run, err = benchQoSVPA(ctx, o, client, out)
		}
		if run != nil && run.Recording != nil {
			printQoSRun(out, a, run)
			if o.TraceDir != "" {
				if terr := writeQoSTrace(o.TraceDir, a, run); terr != nil {
					err = errors.Join(err, terr)
				}
			}
			verdicts[a] = qosVerdict(run.Summary(), run.Recording.End().Sub(run.Step))
			fmt.Fprintf(out, "verdict %s: %s\n", a, verdicts[a])
		}
		if err != nil {
			return fmt.Errorf("bench qos with %s: %w", a, err)
		}
	}
	if len(verdicts) > 1 {
		fmt.Fprintln(out, "\n== Verdicts")
		for _, a := range o.Autoscalers {
			fmt.Fprintf(out, "  %-5s %s\n", a, verdicts[a])
		}
	}
	return nil
}

func benchQoSSnug(ctx context.Context, o *benchQoSOptions, client kubernetes.Interface, out io.Writer) (*experiment.QoSRun, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logDir := filepath.Join(o.TraceDir, "snug-logs")
	if o.TraceDir == "" {
		if logDir, err = os.MkdirTemp("", "snug-bench-qos-"); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(out, "\n== snug: installed in-cluster from the images and chart of %s, SnugPolicy updateMode InPlaceOrRecreate, controlledValues RequestsOnly (pods' logs in %s at the end)\n", exe, logDir)
	s, err := installInLab(ctx, client, labInstall{lab: o.lab, binDir: filepath.Dir(exe), logDir: logDir, out: out})
	if err != nil {
		if s != nil {
			err = errors.Join(err, s.Stop())
		}
		return nil, err
	}
	pc, err := qosPolicyClient(o.lab)
	if err != nil {
		return nil, err
	}
	run, err := experiment.RunQoS(ctx, experiment.QoSOptions{
		Client: client, LoadDir: o.lab.LoadDir(), Observe: o.Observe,
		Attach: func(ctx context.Context, ns string) error {
			_, err := pc.SnugPolicies(ns).Create(ctx, qosSnugPolicy(), metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("creating SnugPolicy: %w", err)
			}
			return nil
		},
		Done: func(s experiment.QoSSummary) bool {
			return s.Pods > 0 && (s.ResizedInPlace == s.Pods || s.Replaced > 0)
		},
	})
	return run, errors.Join(err, s.Stop())
}

func benchQoSVPA(ctx context.Context, o *benchQoSOptions, client kubernetes.Interface, out io.Writer) (run *experiment.QoSRun, err error) {
	vo := vpa.NewOptions(o.lab)
	fmt.Fprintf(out, "\n== vpa: upstream VPA v%s (metrics-server v%s), VerticalPodAutoscaler updateMode InPlaceOrRecreate, controlledValues RequestsOnly\n",
		vo.VPAVersion, vo.MetricsServerVersion)
	lw := &prefixWriter{w: out, prefix: "   "}
	defer lw.Flush()
	release, _, err := vpa.UpOrReuse(ctx, vo, o.KeepLab, lw)
	lw.Flush()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, release(context.WithoutCancel(ctx))) }()
	cfg, err := clientcmd.BuildConfigFromFlags("", o.lab.Kubeconfig())
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	run, err = experiment.RunQoS(ctx, experiment.QoSOptions{
		Client: client, LoadDir: o.lab.LoadDir(), Observe: o.Observe,
		Attach: func(ctx context.Context, ns string) error {
			return qosVPA().Create(ctx, dyn, ns)
		},
	})
	if run != nil && run.Namespace != "" {
		if lines := grepLog(lab.LogFile(o.lab, vpa.Updater), run.Namespace+"/", 8); len(lines) > 0 {
			fmt.Fprintf(out, "   %s log, the lines about namespace %s:\n", vpa.Updater, run.Namespace)
			for _, l := range lines {
				fmt.Fprintf(out, "     %s\n", shorten(l, 300))
			}
		}
	}
	return run, err
}

// qosSnugPolicy is the SnugPolicy of the wall-4 run.
func qosSnugPolicy() *v1alpha1.SnugPolicy {
	return &v1alpha1.SnugPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: experiment.QoSDeployment},
		Spec: v1alpha1.SnugPolicySpec{
			TargetRef:    &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: experiment.QoSDeployment},
			UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate},
			ResourcePolicy: &v1alpha1.PodResourcePolicy{ContainerPolicies: []v1alpha1.ContainerResourcePolicy{{
				ContainerName: "*", ControlledValues: v1alpha1.ContainerControlledValuesRequestsOnly,
			}}},
		},
	}
}

// qosVPAObject is the VerticalPodAutoscaler of the wall-4 run, with the
// report's container policy.
// qosVPA is the wall-4 VerticalPodAutoscaler: InPlaceOrRecreate,
// RequestsOnly on cpu and memory.
func qosVPA() experiment.VPAObject {
	return experiment.VPAObject{
		Name: experiment.QoSDeployment, Deployment: experiment.QoSDeployment,
		UpdateMode: "InPlaceOrRecreate", ControlledValues: "RequestsOnly",
		ControlledResources: []string{"cpu", "memory"},
	}
}

func qosPolicyClient(o *lab.Options) (*policyclient.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig())
	if err != nil {
		return nil, err
	}
	return policyclient.NewForConfig(cfg)
}

func printQoSRun(out io.Writer, name string, run *experiment.QoSRun) {
	fmt.Fprintf(out, "   namespace %s; t counts from the load step\n", run.Namespace)
	fmt.Fprintf(out, "   %s\n", experiment.QoSTimelineHeader)
	for _, l := range experiment.QoSTimeline(run.Recording, run.Step) {
		fmt.Fprintf(out, "   %s\n", l)
	}
}

// qosVerdict is the one-line verdict of a run that was observed for
// observed after the step.
func qosVerdict(s experiment.QoSSummary, observed time.Duration) string {
	qos := strings.Join(s.QoSClasses, ",")
	if qos == "" {
		qos = "-"
	}
	switch {
	case s.Replaced > 0 || s.NewPods > 0 || s.Evictions > 0:
		v := fmt.Sprintf("evicted: %d of %d pods replaced by new pods (%d eviction events), QoS now %s", s.Replaced, s.Pods, s.Evictions, qos)
		if s.ResizedInPlace > 0 {
			v += fmt.Sprintf("; %d resized in place", s.ResizedInPlace)
		} else {
			v += "; no pod resized in place"
		}
		return v
	case s.Pods > 0 && s.ResizedInPlace == s.Pods && qos == "Guaranteed":
		return fmt.Sprintf("resized in place keeping QoS Guaranteed: %d/%d pods, cpu %s -> %s, restarts %d, same pod UIDs",
			s.ResizedInPlace, s.Pods, s.CPUBefore, s.CPUAfter, s.MaxRestarts)
	case s.ResizedInPlace > 0:
		return fmt.Sprintf("resized in place: %d/%d pods, cpu %s -> %s, QoS now %s, restarts %d",
			s.ResizedInPlace, s.Pods, s.CPUBefore, s.CPUAfter, qos, s.MaxRestarts)
	}
	return fmt.Sprintf("nothing: no resize and no eviction in %.0fs (cpu %s, QoS %s, restarts %d)", observed.Seconds(), s.CPUAfter, qos, s.MaxRestarts)
}

func writeQoSTrace(dir, name string, run *experiment.QoSRun) error {
	base := filepath.Join(dir, "qos-"+name)
	if err := run.Recording.SaveFile(base + ".json"); err != nil {
		return err
	}
	if err := trace.WriteFile(base+".svg", func(w io.Writer) error {
		return trace.WriteSVG(w, run.Recording, trace.SVGOptions{Origin: run.Step, OriginName: "load step"})
	}); err != nil {
		return err
	}
	return trace.WriteFile(base+".csv", func(w io.Writer) error { return trace.WriteCSV(w, run.Recording, run.Step) })
}

// grepLog returns up to n lines of the file at path that contain s, the
// last ones.
func grepLog(path, s string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			lines = append(lines, sc.Text())
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
