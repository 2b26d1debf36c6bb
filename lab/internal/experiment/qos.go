package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/internal/trace"
)

// The field report's wall 4: a Guaranteed Deployment under a RequestsOnly
// policy, whose load steps above its cpu limit.
const (
	// QoSDeployment is the Deployment's name (and its pods' app label).
	QoSDeployment = "qos"
	// QoSReplicas is two, as in the report: VPA's updater evicts only
	// with at least minReplicas (2) pods.
	QoSReplicas = 2
	// QoSLoad is the load step written for every pod of the Deployment.
	QoSLoad = "cpu=400m"
)

// QoSWorkload is the Guaranteed Deployment of the wall-4 experiment: cpu
// 100m/100m and memory 64Mi/64Mi, burning 50m until the load step.
func QoSWorkload(loadDir string) LoadDeployment {
	return LoadDeployment{
		Name: QoSDeployment, Replicas: QoSReplicas,
		CPURequest: "100m", CPULimit: "100m", MemoryRequest: "64Mi", MemoryLimit: "64Mi",
		Args: []string{"--cpu=50m"}, LoadDir: loadDir,
	}
}

// QoSOptions configures RunQoS.
type QoSOptions struct {
	// Client talks to the cluster. Required.
	Client kubernetes.Interface
	// LoadDir is the host directory of snug-load's control files. Required.
	LoadDir string
	// Attach puts the workload under the autoscaler (creates its policy or
	// VerticalPodAutoscaler) in namespace ns. It runs once the pods run,
	// just before the load step. Required.
	Attach func(ctx context.Context, ns string) error
	// Observe is how long to watch after the load step. Required.
	Observe time.Duration
	// Done, when set, ends the observation early: it is asked after every
	// change with the summary so far.
	Done func(QoSSummary) bool
	// Timeout bounds the set-up waits; zero means DefaultTimeout.
	Timeout time.Duration
}

// QoSRun is what RunQoS saw.
type QoSRun struct {
	// Namespace is the namespace the run used (deleted when it returns).
	Namespace string
	// Step is when the load step was written; the timeline counts from it.
	Step time.Time
	// Initial are the UIDs of the pods that ran before the step.
	Initial []string
	// Recording is every sample and event of the Deployment's pods, from
	// before the step to the end of the observation.
	Recording *trace.Recording
}

// Summary summarizes the run.
func (r *QoSRun) Summary() QoSSummary { return SummarizeQoS(r.Recording, r.Initial) }

// RunQoS runs the wall-4 experiment in a new namespace: it creates the
// Guaranteed Deployment, waits for its pods, attaches the autoscaler,
// writes the load step for every pod (and for every pod that replaces one)
// and records the pods until Observe has passed or Done says so. It deletes
// the namespace and the load files before it returns.
func RunQoS(ctx context.Context, o QoSOptions) (run *QoSRun, err error) {
	if o.Client == nil || o.LoadDir == "" || o.Attach == nil || o.Observe <= 0 {
		return nil, errors.New("run qos: Client, LoadDir, Attach and Observe are required")
	}
	timeout := Env{Timeout: o.Timeout}.timeout()
	ns, err := o.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "snug-bench-qos-"}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating namespace: %w", err)
	}
	run = &QoSRun{Namespace: ns.Name}
	written := map[string]bool{}
	defer func() {
		for name := range written {
			_ = os.Remove(filepath.Join(o.LoadDir, name))
		}
		err = errors.Join(err, DeleteNamespace(context.WithoutCancel(ctx), o.Client, ns.Name, cleanupTimeout))
	}()
	if err := qosWaitServiceAccount(ctx, o.Client, ns.Name, timeout); err != nil {
		return run, err
	}
	pods, err := QoSWorkload(o.LoadDir).Create(ctx, o.Client, ns.Name, timeout)
	if err != nil {
		return run, err
	}
	for _, p := range pods {
		run.Initial = append(run.Initial, string(p.UID))
	}
	rec, err := trace.NewRecorder(o.Client, trace.Options{Namespace: ns.Name, Selector: "app=" + QoSDeployment})
	if err != nil {
		return run, err
	}
	if err := rec.Start(ctx); err != nil {
		return run, err
	}
	defer func() {
		r, serr := rec.Stop()
		run.Recording = r
		err = errors.Join(err, serr)
	}()
	if err := o.Attach(ctx, ns.Name); err != nil {
		return run, err
	}
	load := func(r *trace.Recording) error {
		for _, t := range r.Pods() {
			if written[t.Pod] {
				continue
			}
			if _, err := WriteLoad(o.LoadDir, t.Pod, QoSLoad); err != nil {
				return fmt.Errorf("writing the load step: %w", err)
			}
			written[t.Pod] = true
		}
		return nil
	}
	if err := load(rec.Recording()); err != nil {
		return run, err
	}
	run.Step = time.Now()
	rec.Mark("load step " + QoSLoad)
	octx, cancel := context.WithTimeout(ctx, o.Observe)
	defer cancel()
	var loadErr error
	err = rec.Wait(octx, func(r *trace.Recording) bool {
		// A pod that replaces an evicted one gets the same load.
		if loadErr = load(r); loadErr != nil {
			return true
		}
		return o.Done != nil && o.Done(SummarizeQoS(r, run.Initial))
	})
	if loadErr != nil {
		return run, loadErr
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = nil // observed for the whole --observe
	}
	return run, err
}

func qosWaitServiceAccount(ctx context.Context, client kubernetes.Interface, ns string, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := poll(wctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the default service account in %s: %w", ns, err)
	}
	return nil
}

// QoSSummary is what happened to the Deployment's pods, read from a
// recording.
type QoSSummary struct {
	// Pods is how many pods ran before the step.
	Pods int
	// ResizedInPlace counts the original pods that are still there with a
	// cpu request other than their first and their actual resources equal
	// to the desired ones.
	ResizedInPlace int
	// Replaced counts the original pods deleted (or being deleted).
	Replaced int
	// NewPods counts pods that were not there before the step.
	NewPods int
	// Evictions counts eviction events (VPA's EvictedByVPA, snug's
	// Evicted*).
	Evictions int
	// QoSClasses are the distinct QoS classes of the pods alive at the end.
	QoSClasses []string
	// MaxRestarts is the highest container restart count seen.
	MaxRestarts int32
	// CPUBefore and CPUAfter are the cpu request/limit of the first
	// original pod at the start and at the end (desired).
	CPUBefore, CPUAfter string
	// SameUIDs is true when every original pod is still there and no other.
	SameUIDs bool
}

// SummarizeQoS reads a wall-4 recording; initial are the UIDs of the pods
// that ran before the step.
func SummarizeQoS(r *trace.Recording, initial []string) QoSSummary {
	s := QoSSummary{Pods: len(initial)}
	if r == nil {
		return s
	}
	classes := map[string]bool{}
	alive := 0
	for _, t := range r.Pods() {
		first, last := t.Samples[0], t.Samples[len(t.Samples)-1]
		orig := slices.Contains(initial, t.UID)
		gone := last.Deleted || last.Deleting
		for _, smp := range t.Samples {
			for _, c := range smp.Containers {
				s.MaxRestarts = max(s.MaxRestarts, c.RestartCount)
			}
		}
		switch {
		case orig && gone:
			s.Replaced++
		case !orig:
			s.NewPods++
		}
		if !gone {
			alive++
			if last.QOSClass != "" {
				classes[last.QOSClass] = true
			}
		}
		if !orig || len(first.Containers) == 0 || len(last.Containers) == 0 {
			continue
		}
		before, now := first.Containers[0], last.Containers[0]
		if s.CPUBefore == "" {
			s.CPUBefore, s.CPUAfter = qosCPU(before.Desired), qosCPU(now.Desired)
		}
		if !gone && now.Desired.CPURequestMillis != before.Desired.CPURequestMillis &&
			now.Actual != nil && *now.Actual == now.Desired && !resizePending(last) {
			s.ResizedInPlace++
		}
	}
	for _, e := range r.Events {
		if e.Reason == "EvictedByVPA" || strings.HasPrefix(e.Reason, "Evicted") {
			s.Evictions++
		}
	}
	for c := range classes {
		s.QoSClasses = append(s.QoSClasses, c)
	}
	slices.Sort(s.QoSClasses)
	s.SameUIDs = s.Replaced == 0 && s.NewPods == 0 && alive == s.Pods
	return s
}

// pending reports a resize the kubelet has not finished: a
// PodResizePending or PodResizeInProgress condition that is True.
func resizePending(s trace.Sample) bool {
	for _, c := range s.Conditions {
		if c.Status == string(corev1.ConditionTrue) {
			return true
		}
	}
	return false
}

// QoSTimeline renders a recording as rows relative to origin: a row for a
// pod when its QoS class, desired or actual resources, restart count,
// resize conditions or existence change, and a row per event.
func QoSTimeline(r *trace.Recording, origin time.Time) []string {
	type row struct {
		at   time.Time
		text string
	}
	var rows []row
	short := map[string]string{}
	name := func(pod, uid string) string {
		if n, ok := short[uid]; ok {
			return n
		}
		n := pod
		if i := strings.LastIndex(pod, "-"); i >= 0 {
			n = pod[i+1:]
		}
		if len(uid) >= 8 {
			n += " (uid " + uid[:8] + ")"
		}
		short[uid] = n
		return n
	}
	for _, t := range r.Pods() {
		prev := ""
		for i, s := range t.Samples {
			line := sampleLine(s)
			if line == prev {
				continue
			}
			note := ""
			if i == 0 {
				note = "  [new pod]"
			}
			prev = line
			rows = append(rows, row{s.At, fmt.Sprintf("%-22s %s%s", name(t.Pod, t.UID), line, note)})
		}
	}
	for _, e := range r.Events {
		src := e.Source
		if src == "" {
			src = "-"
		}
		rows = append(rows, row{e.At, fmt.Sprintf("%-22s event %s (%s): %s", name(e.Pod, e.PodUID), e.Reason, src, qosLine(e.Message, 160))})
	}
	for _, m := range r.Marks {
		rows = append(rows, row{m.At, "-- " + m.Name})
	}
	slices.SortStableFunc(rows, func(a, b row) int { return a.at.Compare(b.at) })
	out := make([]string, 0, len(rows))
	for _, rw := range rows {
		out = append(out, fmt.Sprintf("t%+6.1fs  %s", rw.at.Sub(origin).Seconds(), rw.text))
	}
	return out
}

// QoSTimelineHeader names the columns of QoSTimeline's pod rows.
var QoSTimelineHeader = fmt.Sprintf("%-8s  %-22s %-12s %-24s %-24s %-9s %s", "t", "pod", "qos", "desired cpu mem", "actual cpu mem", "restarts", "resize")

func sampleLine(s trace.Sample) string {
	if s.Deleted {
		return "deleted"
	}
	qos := s.QOSClass
	if qos == "" {
		qos = "-"
	}
	desired, actual, restarts := "-", "-", int32(0)
	if len(s.Containers) > 0 {
		c := s.Containers[0]
		desired = qosCPU(c.Desired) + " " + qosMem(c.Desired)
		if c.Actual != nil {
			actual = qosCPU(*c.Actual) + " " + qosMem(*c.Actual)
		}
		restarts = c.RestartCount
	}
	var conds []string
	for _, c := range s.Conditions {
		if c.Status != string(corev1.ConditionTrue) {
			continue
		}
		cs := strings.TrimPrefix(c.Type, "PodResize")
		if c.Reason != "" {
			cs += "/" + c.Reason
		}
		if c.Message != "" {
			cs += ": " + qosLine(c.Message, 100)
		}
		conds = append(conds, cs)
	}
	if s.Deleting {
		conds = append(conds, "terminating")
	}
	cond := "-"
	if len(conds) > 0 {
		cond = strings.Join(conds, "; ")
	}
	return fmt.Sprintf("%-12s %-24s %-24s %-9d %s", qos, desired, actual, restarts, cond)
}

func qosCPU(r trace.Resources) string {
	return qosMillis(r.CPURequestMillis) + "/" + qosMillis(r.CPULimitMillis)
}

func qosMem(r trace.Resources) string {
	return qosMebi(r.MemoryRequestBytes) + "/" + qosMebi(r.MemoryLimitBytes)
}

func qosMillis(m int64) string {
	if m == 0 {
		return "-"
	}
	return fmt.Sprintf("%dm", m)
}

func qosMebi(b int64) string {
	switch {
	case b == 0:
		return "-"
	case b%(1<<20) == 0:
		return fmt.Sprintf("%dMi", b>>20)
	}
	return fmt.Sprintf("%.1fMi", float64(b)/(1<<20))
}

func qosLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
