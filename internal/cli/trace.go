package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/internal/trace"
)

// traceOutputs says where a recording goes once a trace ends (or where a
// saved one is rendered to).
type traceOutputs struct {
	// json, svg and csv are file paths; empty means not written.
	json, svg, csv string
	// table prints the table of changes on stdout. It is the default when
	// no output is chosen.
	table bool
	// origin is what t counts from: start, change, a mark or an event
	// reason.
	origin string
}

func (o *traceOutputs) addFlags(fs *pflag.FlagSet, withJSON bool) {
	if withJSON {
		fs.StringVar(&o.json, "out", "", "save the recording as JSON to this file (render it later with snug trace render)")
	}
	fs.StringVar(&o.svg, "svg", "", "draw the recording as an SVG picture to this file")
	fs.StringVar(&o.csv, "csv", "", "write one CSV row per sample per container to this file")
	fs.BoolVar(&o.table, "table", false, "print the rows where something changed (the default when no file is asked for)")
	fs.StringVar(&o.origin, "origin", "start", "what t counts from: start, change (the first change of desired resources), a mark or an event reason such as ResizeStarted")
}

// validate checks that every output file can be created, so that a long
// trace does not end with nowhere to write.
func (o *traceOutputs) validate() error {
	for _, p := range []string{o.json, o.svg, o.csv} {
		if p == "" {
			continue
		}
		dir := filepath.Dir(p)
		st, err := os.Stat(dir)
		switch {
		case err != nil:
			return fmt.Errorf("output %s: %w", p, err)
		case !st.IsDir():
			return fmt.Errorf("output %s: %s is not a directory", p, dir)
		}
	}
	return nil
}

// write renders rec to every output asked for.
func (o *traceOutputs) write(rec *trace.Recording, stdout io.Writer) error {
	origin, err := rec.Origin(o.origin)
	if err != nil {
		return err
	}
	if o.json != "" {
		if err := rec.SaveFile(o.json); err != nil {
			return err
		}
	}
	if o.svg != "" {
		if err := trace.WriteFile(o.svg, func(w io.Writer) error {
			return trace.WriteSVG(w, rec, trace.SVGOptions{Origin: origin, OriginName: o.origin})
		}); err != nil {
			return err
		}
	}
	if o.csv != "" {
		if err := trace.WriteFile(o.csv, func(w io.Writer) error { return trace.WriteCSV(w, rec, origin) }); err != nil {
			return err
		}
	}
	if o.table || (o.json == "" && o.svg == "" && o.csv == "") {
		return trace.WriteTable(stdout, rec, trace.TableOptions{Origin: origin, OriginName: o.origin})
	}
	return nil
}

// traceOptions configures `snug trace`.
type traceOptions struct {
	kube     kubeOptions
	selector string
	duration time.Duration
	interval time.Duration
	outputs  traceOutputs
}

func (o *traceOptions) addFlags(fs *pflag.FlagSet) {
	// Bounds every request; watches are restarted when it ends them.
	o.kube.timeout = 10 * time.Second
	o.kube.AddFlags(fs)
	fs.StringVarP(&o.selector, "selector", "l", "", "trace every pod this label selector selects, now or later, instead of one pod")
	fs.DurationVar(&o.duration, "for", 0, "end the trace after this long (default: until Ctrl-C)")
	fs.DurationVar(&o.interval, "interval", trace.DefaultInterval, "sample every pod at least this often, besides on every change")
	o.outputs.addFlags(fs, true)
}

func (o *traceOptions) validate(args []string) error {
	switch {
	case len(args) > 1:
		return fmt.Errorf("trace takes one pod name, got %d arguments", len(args))
	case len(args) == 1 && o.selector != "":
		return errors.New("give a pod name or -l SELECTOR, not both")
	case len(args) == 0 && o.selector == "":
		return errors.New("give a pod name or -l SELECTOR")
	case o.duration < 0:
		return fmt.Errorf("--for %s is negative", o.duration)
	case o.interval <= 0:
		return fmt.Errorf("--interval %s must be positive", o.interval)
	}
	if o.selector != "" {
		if _, err := labels.Parse(o.selector); err != nil {
			return fmt.Errorf("bad label selector %q: %w", o.selector, err)
		}
	}
	return o.outputs.validate()
}

func newTraceCommand(stdout, stderr io.Writer) *cobra.Command {
	o := &traceOptions{}
	cmd := &cobra.Command{
		Use:   "trace [-n NAMESPACE] (POD | -l SELECTOR) [--for DURATION] [--out FILE.json] [--svg FILE] [--csv FILE] [--table]",
		Short: "Record a pod's desired, allocated and actual resources, resize conditions and events, every second and on every change",
		Long: `trace follows one pod, or the pods a label selector selects, and records on every
change and at least every second: per container the desired (spec), allocated
(status allocatedResources) and actual (status resources) cpu and memory requests
and limits, the resize conditions (PodResizePending, PodResizeInProgress) with
reason, message and observedGeneration, generation and observedGeneration, restart
count and container ID, and the pods' events (the kubelet's, snug's, VPA's).

It ends after --for, or on Ctrl-C, and then writes what was asked for: the
recording as JSON (--out), a picture (--svg), CSV (--csv) and the table of
changes (--table, the default). A saved recording renders again with
'snug trace render'. See docs/trace.md.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(args); err != nil {
				return err
			}
			return runTrace(cmd, o, args, stdout, stderr)
		},
	}
	o.addFlags(cmd.Flags())

	ro := &traceOutputs{}
	render := &cobra.Command{
		Use:   "render FILE.json [--svg FILE] [--csv FILE] [--table] [--origin WHAT]",
		Short: "Render a recording saved with `snug trace --out` as a table, CSV or SVG",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ro.validate(); err != nil {
				return err
			}
			rec, err := trace.LoadFile(args[0])
			if err != nil {
				return err
			}
			return ro.write(rec, stdout)
		},
	}
	ro.addFlags(render.Flags(), false)
	cmd.AddCommand(render)
	return cmd
}

// client resolves the kubeconfig and namespace the way kubectl does.
func (o *traceOptions) client() (*kubernetes.Clientset, string, error) {
	cfg, ns, err := o.kube.restConfig("snug")
	if err != nil {
		return nil, "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("making a client: %w", err)
	}
	return cs, ns, nil
}

func runTrace(cmd *cobra.Command, o *traceOptions, args []string, stdout, stderr io.Writer) error {
	ctx := cmd.Context()
	cs, ns, err := o.client()
	if err != nil {
		return err
	}
	topts := trace.Options{Namespace: ns, Selector: o.selector, Interval: o.interval}
	what := fmt.Sprintf("pods in %s selected by %s", ns, o.selector)
	if len(args) == 1 {
		topts.Pod = args[0]
		what = fmt.Sprintf("pod %s/%s", ns, args[0])
	}
	rec, err := trace.NewRecorder(cs, topts)
	if err != nil {
		return err
	}
	if err := rec.Start(ctx); err != nil {
		return fmt.Errorf("tracing %s: %w", what, err)
	}
	until := "until Ctrl-C"
	var timeout <-chan time.Time
	if o.duration > 0 {
		t := time.NewTimer(o.duration)
		defer t.Stop()
		timeout = t.C
		until = "for " + o.duration.String() + " (Ctrl-C ends it earlier)"
	}
	fmt.Fprintf(stderr, "tracing %s (Kubernetes %s) %s\n", what, rec.Recording().ServerVersion, until)
	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr, "interrupted: ending the trace")
	case <-timeout:
	case <-rec.Done():
	}
	recording, recErr := rec.Stop()
	if err := o.outputs.write(recording, stdout); err != nil {
		return errors.Join(recErr, err)
	}
	pods := len(recording.Pods())
	fmt.Fprintf(stderr, "recorded %d samples and %d events of %d pod(s) over %.1fs\n",
		len(recording.Samples), len(recording.Events), pods, recording.End().Sub(recording.Started).Seconds())
	for _, f := range []string{o.outputs.json, o.outputs.svg, o.outputs.csv} {
		if f != "" {
			fmt.Fprintf(stderr, "wrote %s\n", f)
		}
	}
	if recErr != nil {
		return fmt.Errorf("tracing %s: the trace ended early: %w", what, recErr)
	}
	return nil
}
