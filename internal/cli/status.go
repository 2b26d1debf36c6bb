package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/resize"
)

const statusLong = `Show the resize state of every container: one row per container with its
pod's QoS class, desired (spec), allocated (status allocatedResources) and
actual (status resources) cpu and memory, the resize state and restarts.

CPU and MEMORY show the desired request/limit; when the kubelet has not
allocated or applied it yet, the allocated request and the actual
request/limit follow in parentheses. STATE is Synced, Deferred 3m12s,
Infeasible 40s, InProgress 2s or Error 5s: message, with how long the
condition has lasted; RestartWanted or RestartGranted for a synced container
whose RestartContainer change snug holds for a restart window. Stuck containers (Infeasible, Error, Deferred, then
InProgress, longest first) sort first.`

// statusOptions configures `snug status`.
type statusOptions struct {
	kube          kubeOptions
	allNamespaces bool
	selector      string
	output        string
	watch         bool
}

func (o *statusOptions) AddFlags(fs *pflag.FlagSet) {
	o.kube.AddFlags(fs)
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "pods of every namespace")
	fs.StringVarP(&o.selector, "selector", "l", "", "label selector, e.g. app=web")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table, wide or json")
	fs.BoolVarP(&o.watch, "watch", "w", false, "print again whenever a pod changes (Ctrl-C ends)")
}

func (o *statusOptions) Validate() error {
	var errs []error
	switch o.output {
	case "table", "wide", "json":
	default:
		errs = append(errs, fmt.Errorf("-o %q: use table, wide or json", o.output))
	}
	if _, err := labels.Parse(o.selector); err != nil {
		errs = append(errs, fmt.Errorf("-l %q: %w", o.selector, err))
	}
	if o.allNamespaces && o.kube.namespaceFlag() != "" {
		errs = append(errs, errors.New("-A and -n exclude each other"))
	}
	return errors.Join(errs...)
}

// statusRow is one container's line; it is also the JSON output.
type statusRow struct {
	Namespace string                       `json:"namespace"`
	Pod       string                       `json:"pod"`
	Container string                       `json:"container"`
	Sidecar   bool                         `json:"sidecar,omitempty"`
	Node      string                       `json:"node,omitempty"`
	Phase     corev1.PodPhase              `json:"phase"`
	QoS       corev1.PodQOSClass           `json:"qosClass"`
	Desired   corev1.ResourceRequirements  `json:"desired"`
	Allocated corev1.ResourceList          `json:"allocated,omitempty"`
	Actual    *corev1.ResourceRequirements `json:"actual,omitempty"`
	// State is what the STATE column shows; Outcome the resize outcome
	// behind it (Applied when synced).
	State   string `json:"state"`
	Outcome string `json:"outcome"`
	// Since is when the resize condition began; Message its message.
	Since      *time.Time `json:"since,omitempty"`
	AgeSeconds float64    `json:"ageSeconds,omitempty"`
	Message    string     `json:"message,omitempty"`
	Restarts   int32      `json:"restarts"`

	rank int
	age  time.Duration
}

// stateRank orders rows: stuck first.
var stateRank = map[resize.Outcome]int{
	resize.Infeasible: 0,
	resize.Error:      1,
	resize.Deferred:   2,
	resize.InProgress: 3,
	resize.Unknown:    4,
	resize.Applied:    5,
}

// statusRows builds the rows of the given pods at time now, sorted stuck
// first, then by namespace, pod and container order.
func statusRows(pods []corev1.Pod, now time.Time) []statusRow {
	var rows []statusRow
	for i := range pods {
		pod := &pods[i]
		st := resize.State(pod, now)
		restarts := map[string]int32{}
		for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
			for _, cs := range list {
				restarts[cs.Name] = cs.RestartCount
			}
		}
		var cond *resize.ResizeCondition
		switch {
		case st.Pending != nil:
			cond = st.Pending
		case st.InProgress != nil:
			cond = st.InProgress
		}
		for _, c := range st.Containers {
			row := statusRow{
				Namespace: pod.Namespace, Pod: pod.Name, Container: c.Name, Sidecar: c.Sidecar,
				Node: pod.Spec.NodeName, Phase: pod.Status.Phase, QoS: qosOf(pod),
				Desired: c.Desired, Allocated: c.Allocated, Actual: c.Actual, Restarts: restarts[c.Name],
			}
			outcome := st.Outcome
			if c.Settled() && cond == nil {
				outcome = resize.Applied
			}
			switch {
			case pod.Status.Phase != corev1.PodRunning:
				outcome = resize.Unknown
				row.State = string(pod.Status.Phase)
				if pod.DeletionTimestamp != nil {
					row.State = "Terminating"
				}
			case c.Actual == nil:
				outcome = resize.Unknown
				row.State = "NotRunning"
				if w := waitingReason(pod, c.Name); w != "" {
					row.State = w
				}
			case outcome == resize.Applied:
				row.State = "Synced"
				if state, msg := restartWindowState(pod, c.Name); state != "" {
					row.State, row.Message = state, msg
				}
			case cond != nil:
				row.State = cond.String()
				row.Message = cond.Message
				if !cond.Since.IsZero() {
					since := cond.Since
					row.Since, row.age = &since, cond.Age
					row.AgeSeconds = cond.Age.Seconds()
				}
				if cond.Outcome == resize.Error && cond.Message != "" {
					row.State += ": " + cond.Message
				}
			default:
				row.State = outcome.String()
			}
			row.Outcome = outcome.String()
			row.rank = stateRank[outcome]
			rows = append(rows, row)
		}
	}
	slices.SortStableFunc(rows, func(a, b statusRow) int {
		return cmp.Or(
			cmp.Compare(a.rank, b.rank),
			-cmp.Compare(a.age, b.age),
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Pod, b.Pod),
		)
	})
	return rows
}

// restartWindowState is a synced container's restart window, from the
// pod conditions snug's agent and controller write: RestartWanted while
// the agent holds a change to a RestartContainer resource of it for a
// window, RestartGranted while the controller lets it restart the
// container; "" otherwise. msg is the condition's message.
func restartWindowState(pod *corev1.Pod, container string) (state, msg string) {
	var wanted, granted *corev1.PodCondition
	for i := range pod.Status.Conditions {
		switch c := &pod.Status.Conditions[i]; c.Type {
		case v1alpha1.PodConditionRestartWanted:
			wanted = c
		case v1alpha1.PodConditionRestartGranted:
			granted = c
		}
	}
	if wanted == nil || wanted.Status != corev1.ConditionTrue {
		return "", ""
	}
	// The agent's message: "resized only with a restart: app (memory); ...".
	_, list, _ := strings.Cut(wanted.Message, ": ")
	named := false
	for _, entry := range strings.Split(list, "; ") {
		named = named || strings.HasPrefix(entry, container+" (")
	}
	if !named {
		return "", ""
	}
	if granted != nil && granted.Status == corev1.ConditionTrue {
		return "RestartGranted", granted.Message
	}
	return "RestartWanted", wanted.Message
}

func waitingReason(pod *corev1.Pod, container string) string {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, cs := range list {
			if cs.Name == container && cs.State.Waiting != nil {
				return cs.State.Waiting.Reason
			}
		}
	}
	return ""
}

// pairOf is "request/limit" of r in rr, "-" for a missing value.
func pairOf(rr corev1.ResourceRequirements, r corev1.ResourceName) string {
	return qtyOf(rr.Requests, r) + "/" + qtyOf(rr.Limits, r)
}

func qtyOf(l corev1.ResourceList, r corev1.ResourceName) string {
	if q, ok := l[r]; ok {
		return q.String()
	}
	return "-"
}

func sameQty(a, b corev1.ResourceList, r corev1.ResourceName) bool {
	qa, okA := a[r]
	qb, okB := b[r]
	return okA == okB && (!okA || qa.Cmp(qb) == 0)
}

// cell is the table's CPU or MEMORY cell: desired request/limit, then what
// differs of allocated and actual.
func (row statusRow) cell(r corev1.ResourceName) string {
	s := pairOf(row.Desired, r)
	var diff []string
	if row.Allocated != nil && !sameQty(row.Desired.Requests, row.Allocated, r) {
		diff = append(diff, "alloc "+qtyOf(row.Allocated, r))
	}
	if row.Actual != nil && (!sameQty(row.Desired.Requests, row.Actual.Requests, r) || !sameQty(row.Desired.Limits, row.Actual.Limits, r)) {
		diff = append(diff, "actual "+pairOf(*row.Actual, r))
	}
	if len(diff) > 0 {
		s += " (" + strings.Join(diff, ", ") + ")"
	}
	return s
}

func (row statusRow) actualPair(r corev1.ResourceName) string {
	if row.Actual == nil {
		return "-"
	}
	return pairOf(*row.Actual, r)
}

func (row statusRow) containerName() string {
	if row.Container == resize.PodLevel {
		return resize.PodLevelDisplay
	}
	if row.Sidecar {
		return row.Container + " (sidecar)"
	}
	return row.Container
}

// printStatus writes the rows as a table (wide adds columns) or JSON.
func printStatus(out io.Writer, rows []statusRow, format string, allNamespaces bool) error {
	if format == "json" {
		if rows == nil {
			rows = []statusRow{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	var head []string
	if allNamespaces {
		head = append(head, "NAMESPACE")
	}
	head = append(head, "POD", "CONTAINER", "QOS")
	if format == "wide" {
		head = append(head, "CPU DESIRED", "CPU ALLOC", "CPU ACTUAL", "MEM DESIRED", "MEM ALLOC", "MEM ACTUAL", "STATE", "RESTARTS", "NODE", "MESSAGE")
	} else {
		head = append(head, "CPU", "MEMORY", "STATE", "RESTARTS", "NODE")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range rows {
		var f []string
		if allNamespaces {
			f = append(f, row.Namespace)
		}
		f = append(f, row.Pod, row.containerName(), string(row.QoS))
		if format == "wide" {
			f = append(f,
				pairOf(row.Desired, corev1.ResourceCPU), qtyOf(row.Allocated, corev1.ResourceCPU), row.actualPair(corev1.ResourceCPU),
				pairOf(row.Desired, corev1.ResourceMemory), qtyOf(row.Allocated, corev1.ResourceMemory), row.actualPair(corev1.ResourceMemory),
				stateWithoutMessage(row), fmt.Sprint(row.Restarts), row.Node, orDash(row.Message))
		} else {
			f = append(f, row.cell(corev1.ResourceCPU), row.cell(corev1.ResourceMemory), truncate(row.State, 70), fmt.Sprint(row.Restarts), orDash(row.Node))
		}
		fmt.Fprintln(tw, strings.Join(f, "\t"))
	}
	return tw.Flush()
}

func stateWithoutMessage(row statusRow) string {
	s, _, _ := strings.Cut(row.State, ": ")
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newStatusCommand(stdout io.Writer) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status [-n NS | -A] [-l SELECTOR] [-o table|wide|json] [--watch]",
		Short: "Show desired, allocated and actual resources and the resize state of every container",
		Long:  statusLong,
		Example: `  snug status -A
  snug status -n shop -l app=web -o wide
  kubectl snug status --watch`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return runStatus(cmd.Context(), o, stdout)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func runStatus(ctx context.Context, o *statusOptions, out io.Writer) error {
	cl, err := o.kube.connect()
	if err != nil {
		return err
	}
	ns := cl.namespace
	if o.allNamespaces {
		ns = ""
	} else if _, err := cl.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return fmt.Errorf("namespace %q does not exist", ns)
	} else if err != nil && !apierrors.IsForbidden(err) {
		return cl.explain(fmt.Errorf("reading namespace %s: %w", ns, err))
	}
	pods := cl.client.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: o.selector})
	if err != nil {
		return cl.explain(fmt.Errorf("listing pods: %w", err))
	}
	current := map[string]corev1.Pod{}
	for _, p := range list.Items {
		current[p.Namespace+"/"+p.Name] = p
	}
	print := func() error {
		items := make([]corev1.Pod, 0, len(current))
		for _, p := range current {
			items = append(items, p)
		}
		rows := statusRows(items, time.Now())
		if o.watch && o.output != "json" {
			fmt.Fprintf(out, "\n%s\n", time.Now().Format("15:04:05"))
		}
		if len(rows) == 0 && o.output != "json" {
			where := "namespace " + ns
			if ns == "" {
				where = "any namespace"
			}
			fmt.Fprintf(out, "no pods in %s\n", where)
			return nil
		}
		return printStatus(out, rows, o.output, o.allNamespaces)
	}
	if err := print(); err != nil || !o.watch {
		return err
	}
	return watchStatus(ctx, cl, pods, o, list.ResourceVersion, current, print)
}

// podLister is the part of the pods client watchStatus uses.
type podLister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// watchStatus follows the pods and prints again on every change, at most
// twice a second and at least every ten seconds (ages move). Watches that
// end are restarted from the last version; an expired version re-lists.
func watchStatus(ctx context.Context, cl *cluster, pods podLister, o *statusOptions, rv string, current map[string]corev1.Pod, print func() error) error {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	failures := 0
	for ctx.Err() == nil {
		w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: o.selector, ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if failures++; failures > 5 {
				return cl.explain(fmt.Errorf("watching pods: %w", err))
			}
			time.Sleep(time.Duration(failures) * 200 * time.Millisecond)
			continue
		}
		failures = 0
		relist, err := func() (bool, error) {
			defer w.Stop()
			dirty := false
			flush := time.NewTicker(500 * time.Millisecond)
			defer flush.Stop()
			for {
				select {
				case <-ctx.Done():
					return false, nil
				case <-tick.C:
					dirty = true
				case <-flush.C:
					if dirty {
						dirty = false
						if err := print(); err != nil {
							return false, err
						}
					}
				case ev, ok := <-w.ResultChan():
					if !ok {
						return false, nil
					}
					switch ev.Type {
					case watch.Error:
						return true, nil
					case watch.Bookmark:
						if p, ok := ev.Object.(*corev1.Pod); ok {
							rv = p.ResourceVersion
						}
						continue
					}
					p, ok := ev.Object.(*corev1.Pod)
					if !ok {
						continue
					}
					rv = p.ResourceVersion
					if ev.Type == watch.Deleted {
						delete(current, p.Namespace+"/"+p.Name)
					} else {
						current[p.Namespace+"/"+p.Name] = *p
					}
					dirty = true
				}
			}
		}()
		if err != nil {
			return err
		}
		if relist {
			list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: o.selector})
			if err != nil {
				return cl.explain(fmt.Errorf("listing pods: %w", err))
			}
			clear(current)
			for _, p := range list.Items {
				current[p.Namespace+"/"+p.Name] = p
			}
			rv = list.ResourceVersion
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
