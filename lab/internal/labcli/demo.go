package labcli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab"
)

// demoOptions configures `snug-lab demo`.
type demoOptions struct {
	lab *lab.Options
	// keepLab leaves a lab the demo brought up running.
	keepLab bool
	// experiments runs the field report's experiments 1 and 3 instead of
	// snug's autoscaling.
	experiments bool
	// shrink adds the load's drop and snug's shrink after the stabilization
	// window.
	shrink bool
	// timeout bounds the wait for the pod's status to show snug's grow
	// after the load step (and, with shrink, for the shrink after the
	// window).
	timeout time.Duration
}

func newDemoOptions() *demoOptions {
	return &demoOptions{lab: lab.NewOptions(), timeout: time.Minute}
}

func (o *demoOptions) AddFlags(fs *pflag.FlagSet) {
	o.lab.AddFlags(fs)
	fs.BoolVar(&o.keepLab, "keep-lab", false, "leave the lab up afterwards (a lab that was already up is always left up)")
	fs.BoolVar(&o.keepLab, "keep", false, "")
	_ = fs.MarkDeprecated("keep", "use --keep-lab")
	fs.BoolVar(&o.experiments, "experiments", false, "run the field report's experiments 1 and 3 (a patch by hand; a Deferred resize) instead of snug autoscaling")
	fs.BoolVar(&o.shrink, "shrink", false, fmt.Sprintf("after the grow, drop the load and show snug's shrink after its %ds stabilization window", demoStabilizationSeconds))
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "how long to wait for the pod's status to show snug's grow after the load step")
}

// Validate reports every bad flag, before anything starts.
func (o *demoOptions) Validate() error {
	errs := []error{o.lab.Validate()}
	if o.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout must be positive, got %v", o.timeout))
	}
	if o.experiments && o.shrink {
		errs = append(errs, errors.New("--shrink belongs to the autoscaling demo; it does not go with --experiments"))
	}
	return errors.Join(errs...)
}

func newDemoCommand(stdout, stderr io.Writer) *cobra.Command {
	o := newDemoOptions()
	cmd := &cobra.Command{
		Use:   "demo [--shrink] [--experiments] [--keep-lab]",
		Short: "Bring up the lab, run snug on it and watch it resize a pod in place when its load steps up",
		Long: `Bring up the lab (a one-node Kubernetes on this machine, reused if it is
already up), start snug's agent and controller on it, put a SnugPolicy on a
Deployment of one snug-load pod, step its load up and watch snug grow the pod
in place, live, as snug status --watch shows it; then print how many seconds
the step took to reach snug's decision, its patch and the pod's status.

--shrink also drops the load and shows the slow shrink after the policy's
stabilization window. --experiments runs the field report's experiments 1
and 3 instead (a resize patched by hand; a Deferred resize).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if o.experiments {
				return runDemoExperiments(cmd.Context(), o, stdout)
			}
			return runDemoLive(cmd.Context(), o, stdout)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

const demoExperimentsIntro = `snug-lab demo --experiments: resizing a running pod in place, on a real Kubernetes

snug is a vertical pod autoscaler that changes a running pod's CPU and memory
without restarting it. It builds on Kubernetes' in-place pod resize: a patch
to the pod's "resize" subresource changes what the pod asks for, the kubelet
rewrites the container's cgroup limits, and reports what it applied in the
pod's status. This demo runs two of the field report's experiments
(lab/docs/experiments.md) on a one-node cluster on this machine, "the lab".

How to read the tables:
  DESIRED  spec.containers[0].resources: what the pod asks for
  ACTUAL   status.containerStatuses[0].resources: what the kubelet applied
  cpu is shown as request/limit; t+ counts seconds from the first patch.
`

// demoLab brings the lab up, or reuses the one that is up, and returns a
// client and the function that takes down a lab the demo brought up
// (unless --keep-lab). down is never nil.
func demoLab(ctx context.Context, o *demoOptions, out io.Writer) (client *kubernetes.Clientset, alreadyUp bool, down func() error, err error) {
	down = func() error { return nil }
	fmt.Fprintf(out, "== Lab: Kubernetes %s in network namespace %q\n", o.lab.KubernetesVersion, o.lab.NetNS)
	start := time.Now()
	lw := &prefixWriter{w: out, prefix: "   "}
	upErr := lab.Up(ctx, o.lab, lw)
	alreadyUp = errors.Is(upErr, lab.ErrAlreadyUp)
	if alreadyUp && o.lab.WithV2Node && !lab.V2Running(o.lab) {
		// The lab is up without the cgroup-v2 node: add it (and take it
		// out again at the end unless --keep-lab).
		if err := lab.AddV2Node(ctx, o.lab, lw); err != nil {
			lw.Flush()
			return nil, true, down, err
		}
		if !o.keepLab {
			down = func() error { return lab.RemoveV2Node(context.WithoutCancel(ctx), o.lab, io.Discard) }
		}
	}
	lw.Flush()
	switch {
	case alreadyUp:
		fmt.Fprintln(out, "   the lab was already up: using it, and leaving it up")
	case upErr != nil:
		return nil, false, down, upErr
	default:
		fmt.Fprintf(out, "   up in %.1fs\n", time.Since(start).Seconds())
	}
	if !alreadyUp && !o.keepLab {
		down = func() error {
			fmt.Fprintln(out, "\n== Taking the lab down (--keep-lab leaves it up)")
			start := time.Now()
			if err := lab.Down(context.WithoutCancel(ctx), o.lab, io.Discard); err != nil {
				return err
			}
			fmt.Fprintf(out, "   down in %.1fs\n", time.Since(start).Seconds())
			return nil
		}
	}
	client, err = o.lab.Client()
	if err != nil {
		return nil, alreadyUp, down, err
	}
	if o.lab.WithV2Node {
		fmt.Fprintf(out, "   the demo's pods run on node %s (%s): %s\n", o.lab.V2.Name, o.lab.V2.IP, lab.V2CgroupMode(o.lab))
	}
	if v, verr := client.Discovery().ServerVersion(); verr == nil {
		fmt.Fprintf(out, "   API server %s, node %s (%s)\n", v.GitVersion, o.lab.NodeName, o.lab.NodeIP)
		if alreadyUp && strings.TrimPrefix(v.GitVersion, "v") != o.lab.KubernetesVersion {
			fmt.Fprintf(out, "   (the running lab is %s, not the %s asked for: take it down first to switch)\n", v.GitVersion, o.lab.KubernetesVersion)
		}
	}
	return client, alreadyUp, down, nil
}

func runDemoExperiments(ctx context.Context, o *demoOptions, out io.Writer) (err error) {
	fmt.Fprint(out, demoExperimentsIntro+"\n")
	client, alreadyUp, down, err := demoLab(ctx, o, out)
	defer func() { err = errors.Join(err, down()) }()
	if err != nil {
		return err
	}
	table := &stepTable{out: out}
	node, cgroupRoot, tolerations := workNode(o.lab)
	env := experiment.Env{
		Client:     client,
		Kubectl:    filepath.Join(o.lab.BinDir(), "kubectl"),
		Kubeconfig: o.lab.Kubeconfig(),
		CgroupRoot: cgroupRoot,
		Node:       node, Tolerations: tolerations,
		OnStep: table.row,
	}

	fmt.Fprint(out, `
== Experiment 1: more CPU for a running container, without a restart
   A Guaranteed busybox pod (cpu 250m, memory 128Mi, resizePolicy NotRequired)
   writes a random marker to /tmp/marker at start. One JSON patch to its resize
   subresource raises cpu requests and limits to 500m.

`)
	table.begin()
	cpu, err := experiment.CPUResize(ctx, env)
	if err != nil {
		return fmt.Errorf("experiment 1: %w", err)
	}
	printCPUResize(out, cpu)

	fmt.Fprint(out, `
== Experiment 3: a resize that does not fit waits (Deferred), then completes by itself
   The same kind of pod, next to a "filler" pod requesting 1400m of the node's
   2000m. Raising the pod to 700m needs 1400m + 700m > 2000m, so the kubelet
   defers it. Then the filler is deleted.

`)
	table.begin()
	def, err := experiment.Deferred(ctx, env)
	if err != nil {
		return fmt.Errorf("experiment 3: %w", err)
	}
	printDeferred(out, def)

	fmt.Fprintln(out, "\nBoth experiments, and five more, run as e2e tests: make test (see lab/docs/experiments.md).")
	printLabLeftUp(out, alreadyUp || o.keepLab)
	return nil
}

func printLabLeftUp(out io.Writer, up bool) {
	if up {
		fmt.Fprintf(out, "The lab is up: eval \"$(snug-lab env)\" && kubectl get nodes; snug-lab down when done.\n")
	}
}

func printCPUResize(out io.Writer, r *experiment.CPUResizeResult) {
	fmt.Fprintf(out, "\n   Result: resized in place %.2fs after the patch was sent (until status showed cpu %s)\n",
		r.PatchToStatus().Seconds(), r.After.Actual.CPU())
	fmt.Fprintf(out, "     restarts      %d -> %d\n", r.Before.RestartCount, r.After.RestartCount)
	fmt.Fprintf(out, "     container ID  %s\n", sameOrChanged(r.Before.ContainerID, r.After.ContainerID))
	fmt.Fprintf(out, "     /tmp/marker   %s\n", sameOrChanged(r.MarkerBefore, r.MarkerAfter))
	if r.CgroupsBefore != nil && r.CgroupsAfter != nil {
		fmt.Fprintf(out, "     %-13s %d -> %d in the container's cgroup, %d -> %d in the pod's (read from /sys/fs/cgroup)\n",
			r.CgroupsAfter.Container.CPUQuotaFile(),
			r.CgroupsBefore.Container.CPUQuotaMicros, r.CgroupsAfter.Container.CPUQuotaMicros,
			r.CgroupsBefore.PodLevel.CPUQuotaMicros, r.CgroupsAfter.PodLevel.CPUQuotaMicros)
	}
	var resizeEvents []string
	for _, e := range experiment.EventReasons(r.Events) {
		if strings.HasPrefix(e, "Resize") {
			resizeEvents = append(resizeEvents, e)
		}
	}
	if len(resizeEvents) > 0 {
		fmt.Fprintf(out, "     events        %s (kubectl get events)\n", strings.Join(resizeEvents, ", "))
	}
}

func printDeferred(out io.Writer, r *experiment.DeferredResult) {
	fmt.Fprintf(out, "\n   Result: Deferred %.2fs after the patch; completed by itself %.2fs after the filler's deletion was sent\n",
		r.PatchToDeferred().Seconds(), r.DeleteToCompleted().Seconds())
	if c, ok := r.Deferred.Condition("PodResizePending"); ok {
		fmt.Fprintf(out, "     kubelet said     %s: %s\n", c, c.Message)
	}
	fmt.Fprintf(out, "     while deferred   desired cpu %s, actual cpu %s\n", r.Held.Desired.CPU(), r.Held.Actual.CPU())
	fmt.Fprintf(out, "     once completed   actual cpu %s, restarts %d, container ID %s\n",
		r.Completed.Actual.CPU(), r.Completed.RestartCount, sameOrChanged(r.Before.ContainerID, r.Completed.ContainerID))
	if r.CgroupsBefore != nil && r.CgroupsAfter != nil {
		fmt.Fprintf(out, "     %-16s %d -> %d\n", r.CgroupsAfter.Container.CPUQuotaFile(),
			r.CgroupsBefore.Container.CPUQuotaMicros, r.CgroupsAfter.Container.CPUQuotaMicros)
	}
}

func sameOrChanged(before, after string) string {
	if before == after {
		return "unchanged (" + shorten(after, 40) + ")"
	}
	return "changed: " + shorten(before, 24) + " -> " + shorten(after, 24)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// stepTable prints an experiment's steps as they happen.
type stepTable struct {
	out     io.Writer
	subject string // the experiment's test pod: the first pod seen
}

const stepFormat = "   %-9s %-15s %-15s %-26s %s\n"

func (t *stepTable) begin() {
	t.subject = ""
	fmt.Fprintf(t.out, stepFormat, "TIME", "DESIRED cpu", "ACTUAL cpu", "RESIZE CONDITION", "WHAT HAPPENED")
}

func (t *stepTable) row(st experiment.Step) {
	when := fmt.Sprintf("t+%.2fs", st.Since.Seconds())
	if st.Setup {
		when = "setup"
	}
	if t.subject == "" && st.Pod.Name != "" {
		t.subject = st.Pod.Name
	}
	desired, actual, conds, what := "", "", "", st.What
	switch {
	case st.Pod.Name == t.subject && st.Pod.Name != "":
		desired, actual, conds = st.Pod.Desired.CPU(), "-", st.Pod.ConditionsString()
		if st.Pod.HasActual {
			actual = st.Pod.Actual.CPU()
		}
	case st.Pod.Name != "":
		what += " (requests cpu " + st.Pod.Desired.CPURequest.String() + ")"
	}
	fmt.Fprintf(t.out, stepFormat, when, desired, actual, conds, what)
	switch {
	case st.Note == "":
	case strings.HasPrefix(st.What, "JSON patch"):
		fmt.Fprintf(t.out, "   %9s %s\n", "", "kubectl patch pod "+st.Pod.Name+" --subresource resize --type=json -p '"+st.Note+"'")
	default:
		fmt.Fprintf(t.out, "   %9s %s\n", "", st.Note)
	}
}

// prefixWriter indents every line written through it.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := strings.IndexByte(string(p.buf), '\n')
		if i < 0 {
			return len(b), nil
		}
		prefix := p.prefix
		if i == 0 {
			prefix = "" // no trailing blanks on empty lines
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", prefix, p.buf[:i]); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
}

// Flush writes a last unterminated line.
func (p *prefixWriter) Flush() {
	if len(p.buf) > 0 {
		sc := bufio.NewScanner(strings.NewReader(string(p.buf)))
		for sc.Scan() {
			fmt.Fprintf(p.w, "%s%s\n", p.prefix, sc.Text())
		}
		p.buf = nil
	}
}
