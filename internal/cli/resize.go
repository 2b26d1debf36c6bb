package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/snug-dev/snug/internal/actuate"
	"github.com/snug-dev/snug/internal/resize"
)

// Exit codes of `snug resize`; one per outcome, documented in its help and
// in docs/resize.md.
const (
	exitOK         = 0 // Applied; or accepted (without --wait); or a dry run the API server accepted; or nothing to change
	exitFailed     = 1 // bad input, pod not found or deleted, API server unreachable
	exitRefused    = 2 // the planner refused: nothing was sent
	exitDeferred   = 3
	exitInfeasible = 4
	exitKubelet    = 5 // the kubelet failed to actuate (PodResizeInProgress, reason Error)
	exitRejected   = 6 // the API server or an admission plugin refused the patch
	exitConflict   = 7 // the pod changed since it was read (a test operation failed)
	exitTimeout    = 8
)

var outcomeExit = map[resize.Outcome]int{
	resize.Applied:    exitOK,
	resize.InProgress: exitOK,
	resize.Deferred:   exitDeferred,
	resize.Infeasible: exitInfeasible,
	resize.Error:      exitKubelet,
	resize.Rejected:   exitRejected,
	resize.Conflict:   exitConflict,
	resize.Timeout:    exitTimeout,
}

const resizeLong = `Resize one container of a running pod in place, safely.

snug reads the pod, its node's allocatable and what the other pods on the
node claim, and plans the resize first (internal/resize): the QoS class never
changes, limit:request ratios are kept, a memory limit is never lowered
without a usage figure, containers that would restart are named, and a resize
that would not fit on the node is refused (or cut to fit with --cap-to-node).
Then it sends the plan as a JSON patch to the pod's resize subresource; the
patch starts with test operations, so a concurrent change makes it fail
(Conflict) instead of being overwritten.

Values:
  --cpu 500m          set the request; an existing limit keeps its
                      limit:request ratio (a Guaranteed pod's limit moves
                      with it). With --requests-only limits never move and
                      the request is capped at its limit.
  --cpu 500m:1        set request and limit explicitly
  --cpu :1            set only the limit
  --memory takes the same forms (256Mi, 256Mi:512Mi, :512Mi).

Exit codes:
  0  Applied (with --wait); accepted by the API server (without --wait);
     a --dry-run the API server accepted; nothing to change
  1  bad input, pod/container/namespace not found, pod not running or
     deleted while waiting, API server unreachable
  2  refused by the planner: nothing was sent
  3  Deferred: the node lacks room now; the kubelet retries by itself
  4  Infeasible: the node can never grant it (Kubernetes <= 1.35)
  5  Error: the kubelet failed to actuate it (e.g. memory limit below usage)
  6  Rejected by the API server or an admission plugin (1.36+ answers 403
     above node allocatable)
  7  Conflict: the pod changed since it was read; run again
  8  Timeout: no outcome within --timeout`

const resizeExample = `  # raise the cpu request of the only container; the limit keeps its ratio
  snug resize pod/web --cpu 500m --wait

  # explicit request and limit, in another namespace, for one container
  snug resize pod/web -n shop -c app --cpu 250m:1 --memory 256Mi:512Mi --wait

  # see the plan and let the API server validate it, change nothing
  snug resize pod/web --memory 1Gi --dry-run

  # as a kubectl plugin (bin/kubectl-snug on PATH)
  kubectl snug resize pod/web --cpu 1 --cap-to-node --wait`

// resizeOptions configures `snug resize`.
type resizeOptions struct {
	kube         kubeOptions
	container    string
	cpu, memory  string
	memoryUsage  string
	requestsOnly bool
	allowRestart bool
	capToNode    bool
	sendAnyway   bool
	dryRun       bool
	wait         bool
	timeout      time.Duration
	revert       bool
}

func newResizeOptions() *resizeOptions { return &resizeOptions{timeout: actuate.DefaultTimeout} }

func (o *resizeOptions) AddFlags(fs *pflag.FlagSet) {
	o.kube.AddFlags(fs)
	fs.StringVarP(&o.container, "container", "c", "", "container to resize (default: the pod's only container, or its kubectl.kubernetes.io/default-container)")
	fs.StringVar(&o.cpu, "cpu", "", "new cpu: REQUEST (limit keeps its ratio), REQUEST:LIMIT or :LIMIT")
	fs.StringVar(&o.memory, "memory", "", "new memory: REQUEST (limit keeps its ratio), REQUEST:LIMIT or :LIMIT")
	fs.StringVar(&o.memoryUsage, "memory-usage", "", "the container's measured memory working set (e.g. from kubectl top); needed to lower a memory limit, which then stays at least 20% above it")
	fs.BoolVar(&o.requestsOnly, "requests-only", false, "change requests only; never move a limit (a request is capped at its limit)")
	fs.BoolVar(&o.allowRestart, "allow-restart", false, "allow a resize that restarts containers (resizePolicy RestartContainer)")
	fs.BoolVar(&o.capToNode, "cap-to-node", false, "cut an increase to what fits on the node instead of refusing it")
	fs.BoolVar(&o.sendAnyway, "send-anyway", false, "send a resize that does not fit on the node (expect Deferred, Infeasible or a 403)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "plan, and have the API server validate the patch (dryRun=All); change nothing")
	fs.BoolVar(&o.wait, "wait", false, "wait for the kubelet's answer (Applied, Deferred, Infeasible, Error) and print the timings")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "with --wait, how long to wait")
	fs.BoolVar(&o.revert, "revert", false, "set the spec back to the actual resources (clears an Infeasible or Deferred resize); excludes --cpu and --memory")
}

// Validate checks the flags without contacting the cluster.
func (o *resizeOptions) Validate() error {
	var errs []error
	switch {
	case o.revert && (o.cpu != "" || o.memory != ""):
		errs = append(errs, errors.New("--revert sets the actual resources back; it takes no --cpu or --memory"))
	case !o.revert && o.cpu == "" && o.memory == "":
		errs = append(errs, errors.New("nothing to change: give --cpu and/or --memory (or --revert)"))
	}
	for _, v := range []struct{ name, value string }{{"cpu", o.cpu}, {"memory", o.memory}} {
		if v.value == "" {
			continue
		}
		s, err := parseSetting(corev1.ResourceName(v.name), v.value)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if o.requestsOnly && s.limit != nil {
			errs = append(errs, fmt.Errorf("--%s %s sets a limit, but --requests-only never changes limits", v.name, v.value))
		}
	}
	if o.memoryUsage != "" {
		if _, err := parsePositive(corev1.ResourceMemory, "--memory-usage", o.memoryUsage); err != nil {
			errs = append(errs, err)
		}
	}
	if o.capToNode && o.sendAnyway {
		errs = append(errs, errors.New("--cap-to-node and --send-anyway exclude each other"))
	}
	if o.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout must be positive, got %s", o.timeout))
	}
	if o.dryRun && o.wait {
		errs = append(errs, errors.New("--dry-run changes nothing, so there is nothing to --wait for"))
	}
	return errors.Join(errs...)
}

// setting is one parsed --cpu or --memory value. A plain value is a target
// request (ratio kept); "REQ:LIM" and ":LIM" are explicit.
type setting struct {
	request, limit *resource.Quantity
	explicit       bool
}

func parseSetting(name corev1.ResourceName, value string) (setting, error) {
	flag := "--" + string(name)
	req, lim, hasColon := strings.Cut(value, ":")
	var s setting
	if !hasColon {
		q, err := parsePositive(name, flag, value)
		if err != nil {
			return s, err
		}
		s.request = &q
		return s, nil
	}
	s.explicit = true
	if lim == "" {
		return s, fmt.Errorf("%s %q: give REQUEST, REQUEST:LIMIT or :LIMIT", flag, value)
	}
	if req != "" {
		q, err := parsePositive(name, flag+" request", req)
		if err != nil {
			return s, err
		}
		s.request = &q
	}
	q, err := parsePositive(name, flag+" limit", lim)
	if err != nil {
		return s, err
	}
	s.limit = &q
	if s.request != nil && s.request.Cmp(*s.limit) > 0 {
		return s, fmt.Errorf("%s %q: the request is above the limit", flag, value)
	}
	return s, nil
}

func parsePositive(name corev1.ResourceName, what, value string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return q, fmt.Errorf("%s %q is not a quantity (examples: cpu 250m or 1.5, memory 256Mi or 1G)", what, value)
	}
	if q.Sign() <= 0 {
		return q, fmt.Errorf("%s %q must be positive", what, value)
	}
	if name == corev1.ResourceMemory && strings.HasSuffix(value, "m") {
		return q, fmt.Errorf("%s %q is %s thousandths of a byte; did you mean %sMi?", what, value, strings.TrimSuffix(value, "m"), strings.TrimSuffix(value, "m"))
	}
	return q, nil
}

// pickContainer returns the container to resize: the one named, else the
// pod's only regular container, else its default-container annotation.
func pickContainer(pod *corev1.Pod, name string) (string, error) {
	if name != "" {
		for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for _, c := range list {
				if c.Name == name {
					return name, nil
				}
			}
		}
		return "", fmt.Errorf("pod %s/%s has no container %q (it has: %s)", pod.Namespace, pod.Name, name, strings.Join(containerNames(pod), ", "))
	}
	if len(pod.Spec.Containers) == 1 {
		return pod.Spec.Containers[0].Name, nil
	}
	if d := pod.Annotations["kubectl.kubernetes.io/default-container"]; d != "" {
		return pickContainer(pod, d)
	}
	return "", fmt.Errorf("pod %s/%s has %d containers (%s): choose one with -c", pod.Namespace, pod.Name, len(pod.Spec.Containers), strings.Join(containerNames(pod), ", "))
}

func containerNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			names = append(names, c.Name+" (sidecar)")
		}
	}
	return names
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// wish turns the flags into the planner's wish for container c. Plain
// values become a target under RequestsAndLimits (or RequestsOnly); once one
// value is explicit, the wish is explicit, and a plain value beside it
// scales its existing limit here the way the policy would.
func (o *resizeOptions) wish(c *corev1.Container) (resize.ContainerWish, error) {
	w := resize.ContainerWish{Name: c.Name}
	settings := map[corev1.ResourceName]setting{}
	explicit := false
	for name, value := range map[corev1.ResourceName]string{corev1.ResourceCPU: o.cpu, corev1.ResourceMemory: o.memory} {
		if value == "" {
			continue
		}
		s, err := parseSetting(name, value)
		if err != nil {
			return w, err
		}
		settings[name] = s
		explicit = explicit || s.explicit
	}
	if !explicit {
		pol := &resize.Policy{ControlledValues: resize.RequestsAndLimits}
		if o.requestsOnly {
			pol.ControlledValues = resize.RequestsOnly
		}
		w.Target, w.Policy = corev1.ResourceList{}, pol
		for name, s := range settings {
			w.Target[name] = *s.request
			pol.ControlledResources = append(pol.ControlledResources, name)
		}
		return w, nil
	}
	w.Requests, w.Limits = corev1.ResourceList{}, corev1.ResourceList{}
	for name, s := range settings {
		if s.request != nil {
			w.Requests[name] = *s.request
		}
		if s.limit != nil {
			w.Limits[name] = *s.limit
			continue
		}
		// A plain value beside an explicit one: keep the limit's ratio.
		oldReq, hasReq := c.Resources.Requests[name]
		oldLim, hasLim := c.Resources.Limits[name]
		if !hasReq || !hasLim || oldReq.Sign() <= 0 || o.requestsOnly {
			continue
		}
		w.Limits[name] = scaleLimit(name, *s.request, oldReq, oldLim)
	}
	return w, nil
}

// scaleLimit returns ceil(req * oldLim / oldReq) in millicores (cpu) or
// bytes (memory), as the planner scales limits.
func scaleLimit(name corev1.ResourceName, req, oldReq, oldLim resource.Quantity) resource.Quantity {
	units := func(q resource.Quantity) *big.Int {
		if name == corev1.ResourceCPU {
			return big.NewInt(q.MilliValue())
		}
		return big.NewInt(q.Value())
	}
	num := new(big.Int).Mul(units(req), units(oldLim))
	den := units(oldReq)
	num.Add(num, den).Sub(num, big.NewInt(1))
	v := num.Div(num, den).Int64()
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	}
	return *resource.NewQuantity(v, oldLim.Format)
}

func (o *resizeOptions) plannerOptions() resize.Options {
	opts := resize.DefaultOptions()
	opts.AllowRestart = o.allowRestart
	// A pod with pod-level resources: planned, and the API server says
	// whether the cluster resizes such pods (1.36+ by default).
	opts.PodLevelResize = true
	switch {
	case o.capToNode:
		opts.NoRoom = resize.NoRoomCap
	case o.sendAnyway:
		opts.NoRoom = resize.NoRoomSend
	}
	return opts
}

func (o *resizeOptions) usage(container string) map[string]resize.Usage {
	if o.memoryUsage == "" {
		return nil
	}
	q := resource.MustParse(o.memoryUsage)
	return map[string]resize.Usage{container: {MemoryWorkingSetBytes: q.Value()}}
}

// parsePodRef accepts NAME, pod/NAME, pods/NAME and po/NAME.
func parsePodRef(arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		name, kind = arg, "pod"
	}
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
	default:
		return "", fmt.Errorf("%q: snug resizes pods; give pod/NAME", arg)
	}
	if name == "" {
		return "", fmt.Errorf("%q: no pod name", arg)
	}
	return name, nil
}

func newResizeCommand(stdout io.Writer) *cobra.Command {
	o := newResizeOptions()
	cmd := &cobra.Command{
		Use:     "resize pod/NAME [--cpu Q] [--memory Q] [flags]",
		Short:   "Plan and send a safe in-place resize of one container",
		Long:    resizeLong,
		Example: resizeExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := parsePodRef(args[0])
			if err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return runResize(cmd, o, name, stdout)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runResize(cmd *cobra.Command, o *resizeOptions, name string, out io.Writer) error {
	ctx := cmd.Context()
	cl, err := o.kube.connect()
	if err != nil {
		return err
	}
	act := &actuate.Actuator{Client: cl.core}
	target, err := act.Gather(ctx, cl.namespace, name)
	if err != nil {
		return cl.explain(err)
	}
	pod := target.Pod
	if pod.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("pod %s/%s is %s, not Running; only running pods are resized in place (nothing sent)", pod.Namespace, pod.Name, pod.Status.Phase)
	}
	if o.revert {
		return runRevert(ctx, act, cl, target, o, out)
	}
	container, err := pickContainer(pod, o.container)
	if err != nil {
		return err
	}
	w, err := o.wish(findContainer(pod, container))
	if err != nil {
		return err
	}
	plan, err := resize.NewPlan(target.Input(resize.Wish{Containers: []resize.ContainerWish{w}}, o.usage(container), o.plannerOptions()))
	var refusal *resize.Refusal
	if errors.As(err, &refusal) {
		printTarget(out, target)
		fmt.Fprintf(out, "refused (%s): %s\nnothing was sent\n", refusal.Reason, refusal.Message)
		return WithExitCode(exitRefused, fmt.Errorf("resize refused: %s", refusal.Reason))
	}
	if err != nil {
		return err
	}
	printPlan(out, target, plan)
	if plan.NoOp() {
		fmt.Fprintln(out, "nothing to change; nothing was sent")
		return nil
	}
	res, err := act.Apply(ctx, pod, plan, actuate.ApplyOptions{
		SendOptions: actuate.SendOptions{DryRun: o.dryRun},
		Wait:        o.wait,
		WaitOptions: actuate.WaitOptions{Timeout: o.timeout},
	})
	if err != nil {
		return cl.explain(err)
	}
	printResult(out, res, o.wait)
	if code := outcomeExit[res.Outcome]; code != exitOK {
		return WithExitCode(code, fmt.Errorf("resize %s", res.Outcome))
	}
	return nil
}

// printTarget prints the pod line: name, QoS, node and its room.
func printTarget(out io.Writer, t *actuate.Target) {
	pod := t.Pod
	fmt.Fprintf(out, "pod %s/%s  QoS %s", pod.Namespace, pod.Name, qosOf(pod))
	if pod.Spec.NodeName != "" {
		fmt.Fprintf(out, "  node %s", pod.Spec.NodeName)
		if cpu, ok := t.NodeAllocatable[corev1.ResourceCPU]; ok {
			others := t.OthersClaimed[corev1.ResourceCPU]
			fmt.Fprintf(out, " (cpu: %s allocatable, %s claimed by other pods", cpu.String(), others.String())
			if reserve := t.Reserve[corev1.ResourceCPU]; !reserve.IsZero() {
				fmt.Fprintf(out, ", %s kept for a higher-priority pod's replacement", reserve.String())
			}
			fmt.Fprint(out, ")")
		}
	}
	fmt.Fprintln(out)
}

func qosOf(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return resize.ComputeQoS(pod)
}

// printPlan prints before -> after per container and resource, the QoS,
// restarts, notes and the prediction.
func printPlan(out io.Writer, t *actuate.Target, plan *resize.Plan) {
	printTarget(out, t)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tRESOURCE\tREQUEST\tLIMIT\tRESTART")
	for _, cp := range plan.Containers {
		c := findContainer(t.Pod, cp.Name)
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cp.Name, r,
				change(c.Resources.Requests, cp.Requests, r), change(c.Resources.Limits, cp.Limits, r), yesNo(cp.Restart))
		}
	}
	tw.Flush()
	after := t.Pod.DeepCopy()
	for _, cp := range plan.Containers {
		c := findContainer(after, cp.Name)
		c.Resources.Requests, c.Resources.Limits = cp.Requests, cp.Limits
	}
	fmt.Fprintf(out, "QoS: %s -> %s\n", qosOf(t.Pod), resize.ComputeQoS(after))
	if r := plan.Restarts(); len(r) > 0 {
		fmt.Fprintf(out, "restarts: %s\n", strings.Join(r, ", "))
	} else {
		fmt.Fprintln(out, "restarts: none")
	}
	for _, n := range plan.Notes {
		fmt.Fprintf(out, "note (%s): %s\n", n.Adjustment, n.Message)
	}
	fmt.Fprintf(out, "prediction: %s\n", plan.Predicted)
}

func change(before, after corev1.ResourceList, r corev1.ResourceName) string {
	b, okB := before[r]
	a, okA := after[r]
	bs, as := "-", "-"
	if okB {
		bs = b.String()
	}
	if okA {
		as = a.String()
	}
	if okA == okB && (!okA || a.Cmp(b) == 0) {
		return bs
	}
	return bs + " -> " + as
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// printResult prints what the API server and the kubelet said, with the
// timings relative to the moment the patch was sent.
func printResult(out io.Writer, r actuate.Result, waited bool) {
	since := func(t time.Time) string { return fmt.Sprintf("%.2fs", t.Sub(r.Sent).Seconds()) }
	answered := r.Answered.Sub(r.Sent).Round(time.Millisecond)
	switch {
	case r.Outcome == resize.Rejected || r.Outcome == resize.Conflict:
		fmt.Fprintf(out, "outcome: %s by the API server in %s: %s\n", r.Outcome, answered, r.APIError)
		if r.Outcome == resize.Conflict {
			fmt.Fprintln(out, "the pod changed since it was read (a test operation failed); nothing was changed; run again")
		}
		for _, c := range r.APIError.Causes {
			fmt.Fprintf(out, "  cause: %s\n", c)
		}
		return
	case r.DryRun:
		fmt.Fprintf(out, "dry run: the API server accepted the patch in %s (dryRun=All); nothing was changed\n", answered)
		return
	case !waited:
		fmt.Fprintf(out, "sent: the API server accepted the patch in %s (generation %d); not waiting (use --wait)\n", answered, r.Generation)
		return
	}
	fmt.Fprintf(out, "sent: the API server accepted the patch in %s (generation %d)\n", answered, r.Generation)
	line := fmt.Sprintf("outcome: %s", r.Outcome)
	if r.Outcome == resize.Timeout {
		line += fmt.Sprintf(" after %s (last seen: %s)", since(r.Decided), r.Last)
	} else {
		line += " after " + since(r.Decided)
	}
	fmt.Fprintln(out, line)
	if r.Message != "" {
		fmt.Fprintf(out, "  kubelet: %s\n", r.Message)
	}
	var times []string
	if !r.AllocatedSeen.IsZero() {
		times = append(times, "allocated "+since(r.AllocatedSeen))
	}
	if !r.ActualSeen.IsZero() {
		times = append(times, "actual "+since(r.ActualSeen))
	}
	if len(times) > 0 {
		fmt.Fprintf(out, "  seen after the patch: %s\n", strings.Join(times, ", "))
	}
	switch r.Outcome {
	case resize.Deferred:
		fmt.Fprintln(out, "  the kubelet retries by itself when room appears on the node")
	case resize.Infeasible:
		fmt.Fprintln(out, "  the kubelet will not retry; the spec stays ahead of the actual resources until reverted")
	}
}

// runRevert sends resize.Revert's patch: the spec goes back to what runs.
func runRevert(ctx context.Context, act *actuate.Actuator, cl *cluster, t *actuate.Target, o *resizeOptions, out io.Writer) error {
	printTarget(out, t)
	res, err := act.Revert(ctx, t.Pod, actuate.ApplyOptions{
		SendOptions: actuate.SendOptions{DryRun: o.dryRun},
		Wait:        o.wait,
		WaitOptions: actuate.WaitOptions{Timeout: o.timeout},
	})
	if err != nil {
		return cl.explain(err)
	}
	if res.Sent.IsZero() {
		fmt.Fprintln(out, "the spec already equals the actual resources; nothing was sent")
		return nil
	}
	fmt.Fprintln(out, "revert: spec set back to the actual resources")
	printResult(out, res, o.wait)
	if code := outcomeExit[res.Outcome]; code != exitOK {
		return WithExitCode(code, fmt.Errorf("revert %s", res.Outcome))
	}
	return nil
}
