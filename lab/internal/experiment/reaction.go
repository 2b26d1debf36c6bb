package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/trace"
	"github.com/snug-dev/snug/lab/internal/lab/vpa"
)

// The field report's wall-3 experiment, as `snug-lab bench reaction` runs it:
// two replicas of snug-load at cpu 50m (limit 100m), under an autoscaler,
// then a load step to 400m, and how long each autoscaler takes to resize.
const (
	// ReactionContainer is the workload's one container.
	ReactionContainer = "app"
	// ReactionStep is the load step written to each pod's control file.
	ReactionStep = "cpu=400m"
	// ReactionMark names the load step in a run's trace.
	ReactionMark = "load step"
	// ReactionEndedWindow is how long after T3 a run waits for starvation
	// to end (T4) before it says the pods are still throttled.
	ReactionEndedWindow = 30 * time.Second
)

// ReactionLoad returns the wall-3 workload: a Deployment "load" of two
// snug-load replicas burning 50m at cpu 50m/100m, memory 64Mi/128Mi,
// steered through control files in loadDir.
func ReactionLoad(loadDir string) LoadDeployment {
	return LoadDeployment{
		Name: "load", Replicas: 2,
		CPURequest: "50m", CPULimit: "100m", MemoryRequest: "64Mi", MemoryLimit: "128Mi",
		Args: []string{"--cpu=50m"}, LoadDir: loadDir,
	}
}

// ReactionEnv is what one run needs.
type ReactionEnv struct {
	// Client talks to the cluster.
	Client kubernetes.Interface
	// Policies creates SnugPolicies (snug runs); Dynamic creates
	// VerticalPodAutoscalers (VPA runs).
	Policies *policyclient.Client
	Dynamic  dynamic.Interface
	// AgentURL is the snug-agent's HTTP base (snug runs; optional for VPA
	// runs, where it only gives the trace its usage line).
	AgentURL string
	// AgentToken is the bearer token for AgentURL (Snug.Token); empty
	// sends none.
	AgentToken string
	// AgentHTTP is the client for AgentURL (Snug.HTTP: HTTPS with a
	// self-signed certificate in-cluster); nil means a plain one.
	AgentHTTP *http.Client
	// LoadDir is the host directory of snug-load's control files.
	LoadDir string
	// CgroupRoot is where this machine's cgroups are mounted (the lab's
	// node is this machine): the replicas' throttling is read there for
	// T4. Empty measures no T4.
	CgroupRoot string
	// Timeout bounds the settling before the step and, separately, the
	// wait for the resize after it; zero means DefaultTimeout.
	Timeout time.Duration
	// Log receives a line per stage; nil discards them.
	Log io.Writer
}

func (e ReactionEnv) timeout() time.Duration { return Env{Timeout: e.Timeout}.timeout() }

func (e ReactionEnv) logf(format string, args ...any) {
	if e.Log != nil {
		fmt.Fprintf(e.Log, format+"\n", args...)
	}
}

// ReactionRun is one run of the wall-3 experiment. Times are zero when not
// seen.
type ReactionRun struct {
	// Autoscaler is "snug" or "vpa".
	Autoscaler string
	// Namespace is the run's own namespace (deleted at the end).
	Namespace string
	// Step is when the load step was written.
	Step time.Time
	// Decision is snug's decision to grow (the agent's sample time); VPA
	// has none.
	Decision time.Time
	// Change is snug's patch (the API server's answer to it) or VPA's
	// first change of its recommended cpu target.
	Change time.Time
	// ChangeNote says what changed: snug's plan or VPA's target.
	ChangeNote string
	// Reaction is the first replica whose actual resources moved.
	Reaction Reaction
	// TimedOut is true when no replica moved within the timeout.
	TimedOut bool
	// Ended is when starvation ended (T4): the end of the first 2 s in
	// which every replica's container ran throttled under 5 % of its CFS
	// periods (quality.Ending), read from their cgroups. Zero when it had
	// not within ReactionEndedWindow of T3, or was not measured.
	Ended time.Time
	// StillThrottled is, when Ended is zero, the share of the replicas'
	// periods throttled in the last 2 s read; NaN when unknown.
	StillThrottled float64
	// EndedMeasured is true when the run watched for T4 (a CgroupRoot,
	// a T3, replicas resized in place).
	EndedMeasured bool
	// Recording is the run's trace, from before the Deployment was created
	// until the end.
	Recording *trace.Recording
}

// Reaction is when a replica's resources reflected a resize: in place
// (status.containerStatuses[].resources moved) or by a new pod created with
// other resources.
type Reaction struct {
	// Pod and UID name the replica (the new pod when recreated).
	Pod, UID string
	// Recreated is true when the replica was replaced rather than resized.
	Recreated bool
	// At is when the watch saw the actual resources move (T3).
	At time.Time
	// KubeletStart is when the kubelet took the resize up: the first
	// version with allocatedResources changed or PodResizeInProgress. It
	// equals At when both came in one status update; zero when recreated.
	KubeletStart time.Time
	// From is the replica's actual resources at the step, To those at At.
	From, To trace.Resources
}

// Kubelet is At minus KubeletStart; ok is false when recreated.
func (r Reaction) Kubelet() (time.Duration, bool) {
	if r.Recreated || r.At.IsZero() || r.KubeletStart.IsZero() {
		return 0, false
	}
	return r.At.Sub(r.KubeletStart), true
}

// FindReaction looks in rec, after step, for the first replica whose
// container's actual cpu differs from what it was at step (in place), or
// the first new pod running with a cpu request other than the replicas'
// at step (recreated). ok is false while neither happened.
func FindReaction(rec *trace.Recording, step time.Time, container string) (r Reaction, ok bool) {
	type base struct{ actual, allocated trace.Resources }
	at := map[string]base{}
	var anyBase *trace.Resources
	var after []trace.Sample
	for _, s := range rec.Samples {
		c, found := containerOf(s, container)
		if !found {
			continue
		}
		if s.At.After(step) {
			after = append(after, s)
			continue
		}
		if s.Deleted || s.Deleting || c.Actual == nil {
			delete(at, s.UID)
			continue
		}
		b := base{actual: *c.Actual}
		if c.Allocated != nil {
			b.allocated = *c.Allocated
		}
		at[s.UID] = b
		a := *c.Actual
		anyBase = &a
	}
	if anyBase == nil {
		return Reaction{}, false
	}
	started := map[string]time.Time{}
	for _, s := range after {
		c, _ := containerOf(s, container)
		if s.Deleted || s.Deleting || c.Actual == nil {
			continue
		}
		b, known := at[s.UID]
		if !known {
			if c.State == "running" && c.Actual.CPURequestMillis != anyBase.CPURequestMillis {
				return Reaction{Pod: s.Pod, UID: s.UID, Recreated: true, At: s.At, From: *anyBase, To: *c.Actual}, true
			}
			continue
		}
		if _, seen := started[s.UID]; !seen && kubeletTookUp(s, c, b.allocated) {
			started[s.UID] = s.At
		}
		if c.Actual.CPURequestMillis != b.actual.CPURequestMillis || c.Actual.CPULimitMillis != b.actual.CPULimitMillis {
			start, seen := started[s.UID]
			if !seen {
				start = s.At
			}
			return Reaction{Pod: s.Pod, UID: s.UID, At: s.At, KubeletStart: start, From: b.actual, To: *c.Actual}, true
		}
	}
	return Reaction{}, false
}

// kubeletTookUp: the kubelet has accepted a resize of c (allocated
// requests moved) or says it is applying one.
func kubeletTookUp(s trace.Sample, c trace.Container, allocated trace.Resources) bool {
	if c.Allocated != nil && (c.Allocated.CPURequestMillis != allocated.CPURequestMillis || c.Allocated.MemoryRequestBytes != allocated.MemoryRequestBytes) {
		return true
	}
	for _, cond := range s.Conditions {
		if cond.Type == string(corev1.PodResizeInProgress) && cond.Status == string(corev1.ConditionTrue) {
			return true
		}
	}
	return false
}

func containerOf(s trace.Sample, name string) (trace.Container, bool) {
	for _, c := range s.Containers {
		if c.Name == name {
			return c, true
		}
	}
	return trace.Container{}, false
}

// SnugReaction runs the experiment once under a SnugPolicy
// (InPlaceOrRecreate) against the snug-agent at env.AgentURL, which must
// run with --autoscale on the pods' node. The run is never nil.
func SnugReaction(ctx context.Context, env ReactionEnv) (*ReactionRun, error) {
	if env.Policies == nil || env.AgentURL == "" {
		return &ReactionRun{Autoscaler: "snug"}, errors.New("snug reaction: Policies and AgentURL are required")
	}
	policy := &v1alpha1.SnugPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "load"},
		Spec: v1alpha1.SnugPolicySpec{
			TargetRef:    &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: "load"},
			UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlaceOrRecreate},
		},
	}
	return runReaction(ctx, env, "snug", reactionHooks{prepare: func(ctx context.Context, ns string) error {
		return CreateSnugPolicy(ctx, env.Policies, ns, policy, env.timeout())
	}, settle: func(ctx context.Context, ns string, pods []corev1.Pod) error {
		for _, p := range pods {
			env.logf("  waiting for the agent to decide on %s", p.Name)
			if _, err := waitAgent(ctx, env.agentAPI(), ns, p.Name, env.timeout(), func(c agent.ContainerJSON) bool {
				rated := 0
				for _, h := range c.History {
					if h.HasRate {
						rated++
					}
				}
				return rated >= 3 && Settled(c.Autoscale)
			}); err != nil {
				return err
			}
		}
		return nil
	}, finish: func(ctx context.Context, run *ReactionRun, rec *trace.Recorder) {
		// The agent lists a resize once its outcome is known, just after
		// the status shows it.
		var first *agent.ResizeJSON
		_, err := waitAgent(ctx, env.agentAPI(), run.Namespace, run.Reaction.Pod, 10*time.Second, func(c agent.ContainerJSON) bool {
			if c.Autoscale == nil {
				return false
			}
			for _, r := range c.Autoscale.Resizes {
				if r.DecidedAt.After(run.Step) {
					first = &r
					return true
				}
			}
			return false
		})
		if err != nil || first == nil {
			env.logf("  the agent lists no resize of %s after the step: %v", run.Reaction.Pod, err)
			return
		}
		run.Decision = first.DecidedAt
		run.Change = first.DecidedAt.Add(time.Duration(first.DecisionToPatchSeconds * float64(time.Second)))
		run.ChangeNote = first.Plan
		// T3 is the status showing this resize, which the wait may not
		// have been about.
		target := first.Containers[ReactionContainer]
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var got Reaction
		err = rec.Wait(wctx, func(r *trace.Recording) bool {
			var ok bool
			got, ok = reactionTo(r, run.Reaction.Pod, first.SentAt, ReactionContainer, target.CPURequestMillicores, target.CPULimitMillicores)
			return ok
		})
		if err != nil {
			env.logf("  the trace never showed %s's resize to %s: %v", run.Reaction.Pod, first.Plan, err)
			run.TimedOut = true
			return
		}
		run.Reaction = got
	}})
}

// Settled: the agent decides on the container, has no resize in flight and
// has changed nothing for the last few samples. A load step measured from
// a settled pod is a reaction to the step, not to what came before it.
func Settled(v *agent.AutoscaleJSON) bool {
	const quiet = 3 * time.Second
	if v == nil || v.LastDecision == nil || v.LastDecision.CPU.Why == "InFlight" {
		return false
	}
	if v.LastChange != nil && v.LastDecision.Time.Sub(v.LastChange.Time) < quiet {
		return false
	}
	for _, r := range v.Resizes {
		if r.AppliedAt != nil && v.LastDecision.Time.Sub(*r.AppliedAt) < quiet {
			return false
		}
	}
	return true
}

// reactionTo finds the first version of pod, after sent, whose container's
// actual cpu is requestMillis/limitMillis (0 matches anything), and when
// the kubelet took that resize up.
func reactionTo(rec *trace.Recording, pod string, sent time.Time, container string, requestMillis, limitMillis int64) (Reaction, bool) {
	var from *trace.Resources
	var start time.Time
	for _, s := range rec.Samples {
		c, ok := containerOf(s, container)
		if s.Pod != pod || !ok || c.Actual == nil {
			continue
		}
		if !s.At.After(sent) {
			a := *c.Actual
			from = &a
			continue
		}
		if from == nil {
			continue
		}
		if start.IsZero() {
			alloc := trace.Resources{}
			if c.Allocated != nil {
				alloc = *c.Allocated
			}
			if (alloc.CPURequestMillis == requestMillis && requestMillis != 0 && requestMillis != from.CPURequestMillis) || kubeletTookUp(s, trace.Container{}, trace.Resources{}) {
				start = s.At
			}
		}
		if (requestMillis == 0 || c.Actual.CPURequestMillis == requestMillis) && (limitMillis == 0 || c.Actual.CPULimitMillis == limitMillis) {
			if start.IsZero() {
				start = s.At
			}
			return Reaction{Pod: s.Pod, UID: s.UID, At: s.At, KubeletStart: start, From: *from, To: *c.Actual}, true
		}
	}
	return Reaction{}, false
}

// VPAReaction runs the experiment once under an InPlaceOrRecreate
// VerticalPodAutoscaler; VPA and metrics-server must run. Before the step it
// waits for VPA's first recommendation, so that T2 is a change of it. The
// run is never nil.
func VPAReaction(ctx context.Context, env ReactionEnv) (*ReactionRun, error) {
	if env.Dynamic == nil {
		return &ReactionRun{Autoscaler: "vpa"}, errors.New("vpa reaction: Dynamic is required")
	}
	obj := VPAObject{Name: "load", Deployment: "load", UpdateMode: "InPlaceOrRecreate"}
	var baseline int64
	return runReaction(ctx, env, "vpa", reactionHooks{settle: func(ctx context.Context, ns string, _ []corev1.Pod) error {
		if err := obj.Create(ctx, env.Dynamic, ns); err != nil {
			return err
		}
		env.logf("  waiting for VPA's first recommendation (its loops run every minute)")
		var err error
		baseline, err = waitVPATarget(ctx, env.Dynamic, ns, obj.Name, env.timeout(), func(int64) bool { return true })
		if err != nil {
			return err
		}
		// Settled means VPA has nothing left to do: its updater has
		// applied that recommendation, so that a resize after the step
		// answers the step (it runs every minute too).
		env.logf("  VPA recommends cpu %dm; waiting for its updater to apply it", baseline)
		ctx, cancel := context.WithTimeout(ctx, env.timeout())
		defer cancel()
		return poll(ctx, time.Second, func(ctx context.Context) (bool, error) {
			if m, err := waitVPATarget(ctx, env.Dynamic, ns, obj.Name, env.timeout(), func(int64) bool { return true }); err == nil {
				baseline = m
			}
			pods, err := RunningPods(ctx, env.Client, ns, "app=load", 2, env.timeout())
			if err != nil {
				return false, err
			}
			for _, p := range pods {
				cs := p.Status.ContainerStatuses
				if len(cs) == 0 || cs[0].Resources == nil || cs[0].Resources.Requests.Cpu().MilliValue() != baseline {
					return false, nil
				}
			}
			return true, nil
		})
	}, watchChange: func(ctx context.Context, ns string) (time.Time, string) {
		target, err := waitVPATarget(ctx, env.Dynamic, ns, obj.Name, 0, func(m int64) bool { return m != baseline })
		if err != nil {
			return time.Time{}, ""
		}
		return time.Now(), fmt.Sprintf("target cpu %dm -> %dm", baseline, target)
	}})
}

// reactionHooks are an autoscaler's parts of a run; nil ones are skipped.
type reactionHooks struct {
	// prepare runs in the new namespace before the Deployment is created.
	prepare func(ctx context.Context, ns string) error
	// settle returns once the autoscaler is ready for the step.
	settle func(ctx context.Context, ns string, pods []corev1.Pod) error
	// watchChange runs from the step until the resize (or the timeout)
	// and returns when the autoscaler's recommendation changed (T2).
	watchChange func(ctx context.Context, ns string) (time.Time, string)
	// finish fills in what is known only after the resize (snug's T1
	// and T2, and T3 for that resize).
	finish func(ctx context.Context, run *ReactionRun, rec *trace.Recorder)
}

// runReaction is one run: namespace, trace, prepare (before the
// Deployment), Deployment, settle, step, wait for the reaction, finish,
// cleanup.
func runReaction(ctx context.Context, env ReactionEnv, name string, hooks reactionHooks) (run *ReactionRun, err error) {
	run = &ReactionRun{Autoscaler: name, StillThrottled: math.NaN()}
	ns, err := CreateNamespace(ctx, env.Client, "snug-bench-"+name+"-", env.timeout())
	if err != nil {
		return run, err
	}
	run.Namespace = ns
	var podNames []string
	defer func() {
		for _, p := range podNames {
			os.Remove(filepath.Join(env.LoadDir, p))
		}
		if derr := DeleteNamespace(context.WithoutCancel(ctx), env.Client, ns, max(cleanupTimeout, env.timeout())); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	if hooks.prepare != nil {
		if err := hooks.prepare(ctx, ns); err != nil {
			return run, err
		}
	}
	topts := trace.Options{Namespace: ns, Selector: "app=load"}
	if env.AgentURL != "" {
		topts.Usage = &AgentUsage{URL: env.AgentURL, Token: env.AgentToken, HTTP: env.AgentHTTP}
	}
	rec, err := trace.NewRecorder(env.Client, topts)
	if err != nil {
		return run, err
	}
	if err := rec.Start(ctx); err != nil {
		return run, fmt.Errorf("tracing %s: %w", ns, err)
	}
	defer func() { run.Recording, _ = rec.Stop() }()

	env.logf("  %s: creating 2 replicas of snug-load at cpu 50m/100m in %s", name, ns)
	pods, err := ReactionLoad(env.LoadDir).Create(ctx, env.Client, ns, env.timeout())
	if err != nil {
		return run, err
	}
	for _, p := range pods {
		podNames = append(podNames, p.Name)
	}
	if err := hooks.settle(ctx, ns, pods); err != nil {
		return run, fmt.Errorf("settling before the step: %w", err)
	}

	// The replicas may have been replaced while settling (VPA evicts).
	if pods, err = RunningPods(ctx, env.Client, ns, "app=load", 2, env.timeout()); err != nil {
		return run, err
	}
	podNames = podNames[:0]
	for _, p := range pods {
		podNames = append(podNames, p.Name)
	}
	var starve *StarvationWatch
	if env.CgroupRoot != "" {
		targets, err := StarvationTargets(pods, ReactionContainer)
		if err != nil {
			return run, err
		}
		if starve, err = WatchStarvation(ctx, env.CgroupRoot, targets); err != nil {
			return run, err
		}
		defer starve.Stop()
	}
	for i, p := range podNames {
		at, err := WriteLoad(env.LoadDir, p, ReactionStep)
		if err != nil {
			return run, fmt.Errorf("writing the load step: %w", err)
		}
		if i == 0 {
			run.Step = at
		}
	}
	rec.Mark(ReactionMark)
	env.logf("  %s: load step to %s", name, ReactionStep)
	wctx, cancel := context.WithCancel(ctx)
	changed := make(chan struct{})
	go func() {
		defer close(changed)
		if hooks.watchChange != nil {
			run.Change, run.ChangeNote = hooks.watchChange(wctx, ns)
		}
	}()
	waitCtx, waitCancel := context.WithTimeout(ctx, env.timeout())
	err = rec.Wait(waitCtx, func(r *trace.Recording) bool {
		_, ok := FindReaction(r, run.Step, ReactionContainer)
		return ok
	})
	waitCancel()
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		run.TimedOut = true
		env.logf("  %s: no replica resized within %s of the step", name, env.timeout())
	case err != nil:
		cancel()
		<-changed
		return run, fmt.Errorf("waiting for a replica to be resized: %w", err)
	default:
		run.Reaction, _ = FindReaction(rec.Recording(), run.Step, ReactionContainer)
		how := "in place"
		if run.Reaction.Recreated {
			how = "recreated"
		}
		env.logf("  %s: %s %s after %.2fs", name, run.Reaction.Pod, how, run.Reaction.At.Sub(run.Step).Seconds())
	}
	// A recommendation change after the resize is not the one that
	// caused it: the watch ends with the wait.
	cancel()
	<-changed
	if !run.TimedOut && hooks.finish != nil {
		hooks.finish(ctx, run, rec)
	}
	if starve != nil && !run.TimedOut && !run.Reaction.Recreated {
		waitEnded(ctx, env, run, starve, rec)
	}
	return run, nil
}

// waitEnded waits for T4, at most ReactionEndedWindow after T3, and
// records it or how throttled the replicas still are.
func waitEnded(ctx context.Context, env ReactionEnv, run *ReactionRun, starve *StarvationWatch, rec *trace.Recorder) {
	wctx, cancel := context.WithDeadline(ctx, run.Reaction.At.Add(ReactionEndedWindow))
	defer cancel()
	at, err := starve.Wait(wctx)
	if err != nil && ctx.Err() != nil {
		return
	}
	run.EndedMeasured = true
	if err == nil {
		run.Ended = at
		env.logf("  %s: starvation ended %.2fs after the step, at actual cpu %s", run.Autoscaler, at.Sub(run.Step).Seconds(), actualCPUs(rec.Recording(), ReactionContainer))
		return
	}
	if f, ok := starve.Throttled(); ok {
		run.StillThrottled = f
	}
	note := ""
	if rerr := starve.Err(); rerr != nil {
		note = " (last read failed: " + rerr.Error() + ")"
	}
	env.logf("  %s: still throttled %s after the resize: %.0f%% of periods in the last 2 s, at actual cpu %s%s",
		run.Autoscaler, ReactionEndedWindow, 100*run.StillThrottled, actualCPUs(rec.Recording(), ReactionContainer), note)
}

// actualCPUs is each pod's latest actual cpu request/limit for container
// in rec, in the order the pods first appear: "110m/220m, 313m/626m".
func actualCPUs(rec *trace.Recording, container string) string {
	var order []string
	last := map[string]string{}
	for _, s := range rec.Samples {
		c, ok := containerOf(s, container)
		if !ok || c.Actual == nil || s.Deleted {
			continue
		}
		if _, seen := last[s.Pod]; !seen {
			order = append(order, s.Pod)
		}
		last[s.Pod] = fmt.Sprintf("%dm/%dm", c.Actual.CPURequestMillis, c.Actual.CPULimitMillis)
	}
	if len(order) == 0 {
		return "unknown"
	}
	out := make([]string, len(order))
	for i, p := range order {
		out[i] = last[p]
	}
	return strings.Join(out, ", ")
}

// CreateSnugPolicy creates p in ns, retrying while the SnugPolicy CRD is
// not served yet (the controller installs it as it starts).
func CreateSnugPolicy(ctx context.Context, pc *policyclient.Client, ns string, p *v1alpha1.SnugPolicy, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	err := poll(wctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, last = pc.SnugPolicies(ns).Create(ctx, p.DeepCopy(), metav1.CreateOptions{})
		switch {
		case last == nil:
			return true, nil
		case apierrors.IsNotFound(last) || meta.IsNoMatchError(last):
			return false, nil
		}
		return false, last
	})
	if err != nil {
		return fmt.Errorf("creating SnugPolicy %s/%s: %w", ns, p.Name, errors.Join(err, last))
	}
	return nil
}

// CreateNamespace creates a namespace named from prefix and waits for its
// default service account, without which pods are refused.
func CreateNamespace(ctx context.Context, client kubernetes.Interface, prefix string, timeout time.Duration) (string, error) {
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: map[string]string{"snug.dev/experiment": prefix[:len(prefix)-1]}},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating namespace: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = poll(wctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return ns.Name, fmt.Errorf("waiting for the default service account in %s: %w", ns.Name, err)
	}
	return ns.Name, nil
}

// waitVPATarget polls the VerticalPodAutoscaler every half second until its
// cpu target for the workload's container satisfies cond, and returns it.
// A zero timeout waits until ctx ends.
func waitVPATarget(ctx context.Context, dyn dynamic.Interface, ns, name string, timeout time.Duration, cond func(cpuMillis int64) bool) (int64, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var got int64
	err := poll(ctx, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(vpa.VPAResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // transient; the deadline reports a lasting failure
		}
		m, _, ok := VPATarget(u, ReactionContainer)
		got = m
		return ok && cond(m), nil
	})
	if err != nil {
		return 0, fmt.Errorf("waiting for VerticalPodAutoscaler %s/%s's cpu target: %w", ns, name, err)
	}
	return got, nil
}

// waitAgent polls the agent's JSON API for the pod's workload container
// until cond holds.
func waitAgent(ctx context.Context, api *agent.APIClient, ns, pod string, timeout time.Duration, cond func(agent.ContainerJSON) bool) (agent.ContainerJSON, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var got agent.ContainerJSON
	var last error
	err := poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		c, ok, err := agentContainer(ctx, api, ns, pod, agent.Query{Limit: 30})
		last = err
		if err != nil || !ok {
			return false, nil
		}
		got = c
		return cond(c), nil
	})
	if err != nil {
		return got, fmt.Errorf("waiting for the agent's view of %s/%s: %w", ns, pod, errors.Join(err, last))
	}
	return got, nil
}

// agentContainer reads the workload container of a pod from the agent's
// JSON API; ok is false when the agent does not know the pod (yet).
func agentContainer(ctx context.Context, api *agent.APIClient, ns, pod string, q agent.Query) (agent.ContainerJSON, bool, error) {
	ct, err := api.Container(ctx, ns, pod, ReactionContainer, q)
	if errors.Is(err, agent.ErrNotSampled) {
		return agent.ContainerJSON{}, false, nil
	}
	if err != nil {
		return agent.ContainerJSON{}, false, err
	}
	return *ct, true, nil
}

// AgentUsage is a trace.UsageSource that asks a snug-agent's JSON API for
// a container's latest sample. It is safe for concurrent use.
type AgentUsage struct {
	// URL is the agent's HTTP base.
	URL string
	// Token is its bearer token; empty sends none.
	Token string
	// HTTP is the client to use; nil means a plain one.
	HTTP *http.Client
}

// agentClient is a client of the agent's JSON API at url.
func agentClient(url, token string, h *http.Client) *agent.APIClient {
	c := agent.NewAPIClient(url, token)
	if h != nil {
		c = c.WithHTTPClient(h)
	}
	return c
}

// Usage implements trace.UsageSource.
func (a *AgentUsage) Usage(ns, pod, container string) (trace.Usage, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	c, err := agentClient(a.URL, a.Token, a.HTTP).Container(ctx, ns, pod, container, agent.Query{Limit: 1})
	if err != nil || !c.Latest.HasRate || c.Latest.CPUUsageMillicores == nil {
		return trace.Usage{}, false
	}
	u := trace.Usage{CPUMillis: *c.Latest.CPUUsageMillicores, MemoryBytes: int64(c.Latest.MemoryWorkingSetBytes)}
	if c.Latest.CPUThrottledFraction != nil {
		u.ThrottledFraction = *c.Latest.CPUThrottledFraction
	}
	return u, true
}

// agentAPI is a client of the agent at e.AgentURL with e.AgentToken.
func (e ReactionEnv) agentAPI() *agent.APIClient {
	return agentClient(e.AgentURL, e.AgentToken, e.AgentHTTP)
}
