package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/cgroup"
	"github.com/snug-dev/snug/lab/internal/lab/vpa"
	"github.com/snug-dev/snug/lab/internal/loadgen"
	"github.com/snug-dev/snug/lab/internal/quality"
	"github.com/snug-dev/snug/lab/internal/quality/node"
	"github.com/snug-dev/snug/lab/internal/quality/trace"
)

// CalibrationLead is how long before each second's boundary its demand is
// written: snug-load applies a control file 50-100 ms after it changes (two
// equal 50 ms polls), so the new demand starts about at the boundary.
const CalibrationLead = 75 * time.Millisecond

// CalibrationEnv is what a calibration run needs: the lab's clients, its
// load directory, and its cgroups on this machine.
type CalibrationEnv struct {
	Client kubernetes.Interface
	// Policies creates the SnugPolicy (snug side); Dynamic the
	// VerticalPodAutoscaler (vpa side).
	Policies *policyclient.Client
	Dynamic  dynamic.Interface
	// LoadDir is the host directory of snug-load's control files.
	LoadDir string
	// CgroupRoot is where this machine, the lab's node, mounts cgroups.
	CgroupRoot string
	// Timeout bounds each wait before the run (pods running).
	Timeout time.Duration
	// Log receives a line per stage and a progress line a minute.
	Log io.Writer
}

func (e CalibrationEnv) logf(format string, args ...any) {
	if e.Log != nil {
		fmt.Fprintf(e.Log, format+"\n", args...)
	}
}

// CalibrationSide is one autoscaler's workload in a calibration run.
type CalibrationSide struct {
	// Autoscaler is "snug" or "vpa"; Namespace the side's own namespace.
	Autoscaler, Namespace string
	// Seconds are the measurements per pod of the trace and second.
	Seconds [][]quality.LabSecond
	// Pods are, per pod of the trace, the pods that played it (more than
	// one when the autoscaler replaced it).
	Pods [][]string
	// Foreign lists what the other autoscaler left on this side's pods
	// (annotations, events): empty when the two did not fight.
	Foreign []string
	// Events counts this side's namespace's events by reason.
	Events map[string]int
	// Targets are the changes of the VerticalPodAutoscaler's cpu target
	// for the container, read every second (vpa side only).
	Targets []quality.TargetChange
}

// CalibrationRun is one lab run of a trace, every autoscaler side by side.
type CalibrationRun struct {
	// Trace and Seed name the scenario played (trace.Sustained's name and
	// seed), so that a saved run is replayed on the same trace; Trace is
	// empty in a run saved before they were recorded.
	Trace string `json:",omitempty"`
	Seed  int64
	Sides []*CalibrationSide
	// Start is second 0's boundary.
	Start time.Time
	// LateBoundaries counts boundaries whose readings were taken more than
	// 100 ms late (the host was busy).
	LateBoundaries int
	// NodeAllocatableMillis and PeakRequestedMillis are the node's
	// allocatable cpu and the most its pods requested at once (checked
	// every 30 s): the room both sides shared.
	NodeAllocatableMillis, PeakRequestedMillis int64
}

// slot is one pod of the trace on one side: the pod playing it now.
type slot struct {
	uid, pod string
	path     cgroup.Path
	prev     cgroup.Sample
	res      node.Resources
	hasRes   bool
}

type side struct {
	*CalibrationSide
	slots []slot
	dyn   dynamic.Interface // vpa side: reads the VPA object's target
}

// Calibrate plays tr into snug-load on the lab once per autoscaler, all at
// the same time: per autoscaler a namespace with a Deployment "load" of
// tr's pods (tr must have one container per pod, all with the same starting
// resources) under an InPlaceOrRecreate SnugPolicy (snug, which must be
// installed and autoscaling) or VerticalPodAutoscaler (vpa, which must be
// up). Each second every pod's control file gets that second's demand, and
// every container's cgroup and pod status are read at the second's end.
// The namespaces are deleted at the end.
func Calibrate(ctx context.Context, env CalibrationEnv, tr *trace.Trace, autoscalers []string) (run *CalibrationRun, err error) {
	if err := tr.Validate(); err != nil {
		return nil, err
	}
	c0 := tr.Pods[0].Containers[0]
	for _, p := range tr.Pods {
		if len(p.Containers) != 1 || p.Containers[0].CPURequestMillis != c0.CPURequestMillis || p.Containers[0].CPULimitMillis != c0.CPULimitMillis ||
			p.Containers[0].MemRequestBytes != c0.MemRequestBytes || p.Containers[0].MemLimitBytes != c0.MemLimitBytes {
			return nil, fmt.Errorf("calibrating %s: the lab's Deployment needs one container per pod, all starting alike", tr.Name)
		}
	}
	timeout := Env{Timeout: env.Timeout}.timeout()
	run = &CalibrationRun{Trace: tr.Name, Seed: tr.Seed}
	var sides []*side
	defer func() {
		for _, s := range sides {
			for _, names := range s.Pods {
				for _, n := range names {
					os.Remove(filepath.Join(env.LoadDir, n))
				}
			}
			if derr := DeleteNamespace(context.WithoutCancel(ctx), env.Client, s.Namespace, max(cleanupTimeout, timeout)); derr != nil {
				err = errors.Join(err, derr)
			}
		}
	}()
	load := LoadDeployment{
		Name: "load", Replicas: int32(len(tr.Pods)),
		CPURequest: fmt.Sprintf("%dm", c0.CPURequestMillis), CPULimit: fmt.Sprintf("%dm", c0.CPULimitMillis),
		MemoryRequest: fmt.Sprint(c0.MemRequestBytes), MemoryLimit: fmt.Sprint(c0.MemLimitBytes),
		Args:    []string{"--cpu=0m", "--memory=" + loadgen.FormatMemory(int64(c0.MemBytes[0]))},
		LoadDir: env.LoadDir,
	}
	for _, a := range autoscalers {
		ns, err := CreateNamespace(ctx, env.Client, "snug-calibrate-"+a+"-", timeout)
		if err != nil {
			return run, err
		}
		s := &side{CalibrationSide: &CalibrationSide{Autoscaler: a, Namespace: ns}, slots: make([]slot, len(tr.Pods))}
		s.Seconds = make([][]quality.LabSecond, len(tr.Pods))
		s.Pods = make([][]string, len(tr.Pods))
		sides = append(sides, s)
		run.Sides = append(run.Sides, s.CalibrationSide)
		switch a {
		case "snug":
			if env.Policies == nil {
				return run, errors.New("calibrating snug: no SnugPolicy client")
			}
			err = CreateSnugPolicy(ctx, env.Policies, ns, &v1alpha1.SnugPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: "load"},
				Spec: v1alpha1.SnugPolicySpec{
					TargetRef:    &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: "load"},
					UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate},
				},
			}, timeout)
		case "vpa":
			s.dyn = env.Dynamic
			if env.Dynamic == nil {
				return run, errors.New("calibrating vpa: no dynamic client")
			}
			err = VPAObject{Name: "load", Deployment: "load", UpdateMode: "InPlaceOrRecreate"}.Create(ctx, env.Dynamic, ns)
		default:
			err = fmt.Errorf("calibrating: no autoscaler %q", a)
		}
		if err != nil {
			return run, err
		}
		if _, err := env.Client.AppsV1().Deployments(ns).Create(ctx, load.Build(), metav1.CreateOptions{}); err != nil {
			return run, fmt.Errorf("creating deployment %s/load: %w", ns, err)
		}
		env.logf("  %s: %d replicas of snug-load at cpu %s/%s, memory %s/%s in %s, under a %s", a, len(tr.Pods),
			load.CPURequest, load.CPULimit, loadgen.FormatMemory(c0.MemRequestBytes), loadgen.FormatMemory(c0.MemLimitBytes), ns,
			map[string]string{"snug": "SnugPolicy", "vpa": "VerticalPodAutoscaler"}[a])
	}
	reader := cgroup.Reader{Root: env.CgroupRoot}
	for _, s := range sides {
		pods, err := RunningPods(ctx, env.Client, s.Namespace, "app=load", len(tr.Pods), timeout)
		if err != nil {
			return run, err
		}
		for i, p := range pods {
			if err := s.take(reader, i, &p, time.Now()); err != nil {
				return run, err
			}
		}
	}
	if node, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil && len(node.Items) > 0 {
		run.NodeAllocatableMillis = node.Items[0].Status.Allocatable.Cpu().MilliValue()
	}

	run.Start = time.Now().Add(time.Second).Truncate(100 * time.Millisecond)
	env.logf("  playing %s (%d s) into %d pods per side from %s", tr.Name, tr.Seconds, len(tr.Pods), run.Start.UTC().Format("15:04:05"))
	for k := 0; k <= tr.Seconds; k++ {
		boundary := run.Start.Add(time.Duration(k) * time.Second)
		if k < tr.Seconds {
			if err := sleepUntil(ctx, boundary.Add(-CalibrationLead)); err != nil {
				return run, err
			}
			for _, s := range sides {
				for p := range s.slots {
					if s.slots[p].pod == "" {
						continue
					}
					c := tr.Pods[p].Containers[0]
					targets := fmt.Sprintf("cpu=%dm memory=%s", int64(c.CPUMillis[k]), loadgen.FormatMemory(int64(c.MemBytes[k])))
					if _, err := WriteLoad(env.LoadDir, s.slots[p].pod, targets); err != nil {
						return run, fmt.Errorf("writing the load: %w", err)
					}
				}
			}
		}
		if err := sleepUntil(ctx, boundary); err != nil {
			return run, err
		}
		if time.Since(boundary) > 100*time.Millisecond {
			run.LateBoundaries++
		}
		for _, s := range sides {
			if err := s.boundary(ctx, env.Client, reader, k, tr.Seconds); err != nil {
				return run, err
			}
		}
		if k%30 == 0 {
			if req, err := nodeRequestedMillis(ctx, env.Client); err == nil {
				run.PeakRequestedMillis = max(run.PeakRequestedMillis, req)
			}
		}
		if k > 0 && k%60 == 0 {
			var b strings.Builder
			for _, s := range sides {
				fmt.Fprintf(&b, " %s:", s.Autoscaler)
				for p := range s.slots {
					r := s.slots[p].res
					fmt.Fprintf(&b, " %dm/%dm", r.CPURequestMillis, r.CPULimitMillis)
				}
			}
			env.logf("  t=%ds%s", k, b.String())
		}
	}
	for _, s := range sides {
		s.Foreign, s.Events = foreign(ctx, env.Client, s.Namespace, s.Autoscaler)
	}
	return run, nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// take makes pod the one playing slot p, from its cgroup's reading now.
func (s *side) take(r cgroup.Reader, p int, pod *corev1.Pod, now time.Time) error {
	if len(pod.Status.ContainerStatuses) == 0 {
		return fmt.Errorf("pod %s/%s has no container status", pod.Namespace, pod.Name)
	}
	cs := pod.Status.ContainerStatuses[0]
	path, err := r.Find(string(pod.UID), string(pod.Status.QOSClass), cs.ContainerID)
	if err != nil {
		return fmt.Errorf("finding the cgroup of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	sample, err := r.Read(path, now)
	if err != nil {
		return fmt.Errorf("reading the cgroup of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	s.slots[p] = slot{uid: string(pod.UID), pod: pod.Name, path: path, prev: sample, res: actualResources(pod), hasRes: true}
	s.Pods[p] = append(s.Pods[p], pod.Name)
	return nil
}

// boundary reads every slot's cgroup at the end of second k-1 (the start
// of k), then the pods' status, and records second k-1.
func (s *side) boundary(ctx context.Context, client kubernetes.Interface, r cgroup.Reader, k, seconds int) error {
	now := time.Now()
	secs := make([]quality.LabSecond, len(s.slots))
	for p := range s.slots {
		sl := &s.slots[p]
		if sl.pod == "" {
			continue
		}
		cur, err := r.Read(sl.path, now)
		if err != nil {
			sl.pod = "" // gone (replaced); found again from the list below
			continue
		}
		sig := cgroup.Rate(sl.prev, cur)
		sl.prev = cur
		if sig.HasRate {
			secs[p] = quality.LabSecond{
				Running: true, CPUUsageMillis: sig.CPUUsageMillicores, ThrottledFraction: sig.CPUThrottledFraction,
				ThrottledSeconds: sig.CPUThrottledSecondsPerSecond, MemBytes: float64(sig.MemoryWorkingSetBytes),
			}
		}
	}
	list, err := client.CoreV1().Pods(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=load"})
	if err != nil {
		return fmt.Errorf("listing %s's pods: %w", s.Namespace, err)
	}
	byUID := map[string]*corev1.Pod{}
	var fresh []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		running := p.DeletionTimestamp == nil && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil
		if !running {
			continue
		}
		byUID[string(p.UID)] = p
		if !slices.ContainsFunc(s.slots, func(sl slot) bool { return sl.uid == string(p.UID) }) {
			fresh = append(fresh, p)
		}
	}
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].Name < fresh[j].Name })
	for p := range s.slots {
		sl := &s.slots[p]
		pod, ok := byUID[sl.uid]
		if ok && sl.pod != "" {
			res := actualResources(pod)
			secs[p].Resized = sl.hasRes && res != sl.res
			sl.res, sl.hasRes = res, true
		} else {
			sl.pod = ""
			if len(fresh) > 0 {
				// A replacement with other resources is a resize (the
				// recreate half of InPlaceOrRecreate), as the model counts.
				old, hadRes := sl.res, sl.hasRes
				if err := s.take(r, p, fresh[0], now); err == nil {
					secs[p].Resized = hadRes && sl.res != old
				}
				fresh = fresh[1:]
			}
		}
		secs[p].Resources = sl.res
	}
	if s.dyn != nil && k > 0 {
		if u, err := s.dyn.Resource(vpa.VPAResource).Namespace(s.Namespace).Get(ctx, "load", metav1.GetOptions{}); err == nil {
			if m, _, ok := VPATarget(u, ReactionContainer); ok {
				if n := len(s.Targets); n == 0 || s.Targets[n-1].CPUMillis != m {
					s.Targets = append(s.Targets, quality.TargetChange{Second: k - 1, CPUMillis: m})
				}
			}
		}
	}
	if k > 0 && k <= seconds {
		for p := range s.slots {
			s.Seconds[p] = append(s.Seconds[p], secs[p])
		}
	}
	return nil
}

// actualResources are the pod's first container's resources as its status
// shows them (the spec's when the status has none).
func actualResources(p *corev1.Pod) node.Resources {
	rr := p.Spec.Containers[0].Resources
	if len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].Resources != nil {
		rr = *p.Status.ContainerStatuses[0].Resources
	}
	return node.Resources{
		CPURequestMillis: rr.Requests.Cpu().MilliValue(), CPULimitMillis: rr.Limits.Cpu().MilliValue(),
		MemRequestBytes: rr.Requests.Memory().Value(), MemLimitBytes: rr.Limits.Memory().Value(),
	}
}

// nodeRequestedMillis sums the cpu requests of every pod that is not done.
func nodeRequestedMillis(ctx context.Context, client kubernetes.Interface) (int64, error) {
	list, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for i, c := range p.Spec.Containers {
			q := c.Resources.Requests.Cpu().MilliValue()
			if i < len(p.Status.ContainerStatuses) && p.Status.ContainerStatuses[i].Resources != nil {
				q = max(q, p.Status.ContainerStatuses[i].Resources.Requests.Cpu().MilliValue())
			}
			sum += q
		}
	}
	return sum, nil
}

// foreign lists what the other autoscaler left in ns: VPA's annotations
// (vpaUpdates, vpaObservedContainers, ...) on a snug side's pods, snug's
// (autoscaling.snug.dev/...) on a VPA side's, and events whose reason
// (InPlaceResizedByVPA, EvictedByVPA) or reporter (snug-agent,
// vpa-updater) belongs to the other. It also counts the events by
// reason.
func foreign(ctx context.Context, client kubernetes.Interface, ns, autoscaler string) ([]string, map[string]int) {
	isOther := func(s string) bool {
		l := strings.ToLower(s)
		if autoscaler == "snug" {
			return strings.Contains(l, "vpa") || strings.Contains(l, "vertical-pod-autoscaler")
		}
		return strings.Contains(l, "snug")
	}
	var out []string
	if list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range list.Items {
			for k := range p.Annotations {
				if isOther(k) {
					out = append(out, fmt.Sprintf("pod %s: annotation %s", p.Name, k))
				}
			}
		}
	}
	events := map[string]int{}
	if list, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range list.Items {
			events[e.Reason] += int(max(1, e.Count))
			// Not the message: the kubelet's name snug-load's image
			// (snug.dev/snug-load) on both sides.
			if isOther(e.Reason) || isOther(e.Source.Component) || isOther(e.ReportingController) {
				out = append(out, fmt.Sprintf("event %s from %s: %s", e.Reason, cmpOr(e.ReportingController, e.Source.Component), e.Message))
			}
		}
	}
	slices.Sort(out)
	return out, events
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
