package labcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/cli"
	"github.com/snug-dev/snug/lab/internal/experiment"
)

const (
	// demoStabilizationSeconds is the demo policy's scale-down window: short,
	// so that --shrink shows a shrink within a couple of minutes (the
	// default is 300).
	demoStabilizationSeconds = 30
	// demoDeployment is the Deployment the demo autoscales.
	demoDeployment = "snug-load"
	// demoQuiet is how long the pod must go without a resize before the
	// load step, and demoSettleTimeout bounds that wait.
	demoQuiet         = 5 * time.Second
	demoSettleTimeout = 90 * time.Second
	// demoEndedTimeout bounds the wait, after the status shows the grow,
	// for the pod's starvation to end.
	demoEndedTimeout = 30 * time.Second
)

const demoIntro = `snug-lab demo: snug grows a running pod in place when its load steps up

snug is a vertical pod autoscaler that changes a running pod's CPU and memory
without restarting it, within seconds. Its agent (one per node) reads every
container's cgroup files each second; when a container starves (CPU
throttled, memory near its limit) it patches the pod's "resize" subresource,
and the kubelet rewrites the container's cgroup limits in place. Its
controller serves the SnugPolicy objects that say which pods snug may resize.

This demo runs both on a one-node Kubernetes on this machine, "the lab":
  1. the lab up; snug installed on it with its Helm chart
  2. a SnugPolicy (updateMode InPlace) over a Deployment of one snug-load pod
     burning 50m of CPU under a 100m limit
  3. a load step to 400m, and snug status --watch catching snug's resize
  4. a summary: seconds from the step to the agent's decision, its patch,
     the pod's status and the end of its starvation (its cgroup throttled
     under 5 % of CFS periods for 2 s); restarts; QoS class
--shrink adds the load's drop and the slow shrink; --experiments runs the
field report's experiments 1 and 3 instead.
`

// demoRun is the state of one live demo: what is running, for the steps
// and for clean-up.
type demoRun struct {
	o      *demoOptions
	out    io.Writer // safe for concurrent use
	client kubernetes.Interface
	snug   *experiment.Snug
	ns     string
	pod    string
	// shown is the SentAt of the last resize printed.
	shown time.Time
}

func runDemoLive(ctx context.Context, o *demoOptions, stdout io.Writer) (err error) {
	out := &lockedWriter{w: stdout}
	fmt.Fprint(out, demoIntro+"\n")
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the snug binary: %w", err)
	}
	client, alreadyUp, down, err := demoLab(ctx, o, out)
	defer func() { err = errors.Join(err, down()) }()
	if err != nil {
		return err
	}
	d := &demoRun{o: o, out: out, client: client}
	defer func() {
		if errors.Is(err, context.Canceled) {
			err = fmt.Errorf("interrupted: %w", err)
		}
	}()
	defer func() {
		if err == nil {
			fmt.Fprintln(out, "\nThe same proof, with memory, BestEffort and Guaranteed pods, runs as an e2e test: make test (lab/e2e/autoscale_test.go).")
			printLabLeftUp(out, alreadyUp || o.keepLab)
		}
	}()
	// Clean-up runs on a context that Ctrl-C does not cancel.
	defer func() { err = errors.Join(err, d.cleanUp(context.WithoutCancel(ctx))) }()

	if err := d.startSnug(ctx, self); err != nil {
		return err
	}
	if err := d.createWorkload(ctx); err != nil {
		return err
	}
	if err := d.settle(ctx); err != nil {
		return err
	}
	sum, err := d.step(ctx, "cpu=400m", growStop, true)
	if err != nil {
		return err
	}
	fmt.Fprint(out, sum.format())
	if o.shrink {
		if err := d.shrink(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (d *demoRun) startSnug(ctx context.Context, self string) error {
	logDir, err := os.MkdirTemp("", "snug-demo-")
	if err != nil {
		return err
	}
	fmt.Fprint(d.out, `
== snug: installing it on the lab as on any cluster: images in a registry, a Helm chart
   The images of this build (snug-agent, snug-controller: one static binary
   each, user 65532) go to the lab's registry; helm installs the chart: the
   agent a DaemonSet (the node's cgroups read-only, no capabilities), the
   controller a Deployment of two replicas, one leading. The agent's
   --cpu-half-life 10s makes its usage percentiles forget fast, for the demo.
`)
	start := time.Now()
	d.snug, err = installInLab(ctx, d.client, labInstall{
		lab: d.o.lab, binDir: filepath.Dir(self), agentArgs: []string{"--cpu-half-life=10s"},
		logDir: logDir, out: d.out,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "   agent pod %s ready (%s/snug/v1/containers), controller %s leading, in %.1fs\n",
		d.snug.AgentPod, d.snug.AgentURL, d.snug.ControllerPod, time.Since(start).Seconds())
	fmt.Fprintf(d.out, "   their /metrics and /snug/v1/ answer only bearer tokens the API server authenticates and authorizes;\n   the demo reads them as ServiceAccount default/snug-lab-reader, bound to ClusterRole snug-metrics-reader\n")
	fmt.Fprintf(d.out, "   the pods' logs go to %s when the demo uninstalls snug\n", logDir)
	return nil
}

func (d *demoRun) createWorkload(ctx context.Context) error {
	fmt.Fprintf(d.out, `
== A SnugPolicy over a Deployment of one snug-load pod
   snug-load burns the CPU its control file asks for (%s/<pod>).
   Its one container "app": cpu 50m request / 100m limit, memory 64Mi/128Mi
   (Burstable), load 50m. The policy: updateMode InPlace, and a %ds
   stabilization window before any shrink (the default is 300s).
`, d.o.lab.LoadDir(), demoStabilizationSeconds)
	ns, err := d.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "snug-demo-"}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the demo's namespace: %w", err)
	}
	d.ns = ns.Name
	cfg, err := clientcmd.BuildConfigFromFlags("", d.o.lab.Kubeconfig())
	if err != nil {
		return fmt.Errorf("loading the lab's kubeconfig: %w", err)
	}
	cfg.Timeout = requestTimeout
	pc, err := policyclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	policy := &v1alpha1.SnugPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: demoDeployment},
		Spec: v1alpha1.SnugPolicySpec{
			TargetRef:    &v1alpha1.CrossVersionObjectReference{Kind: "Deployment", Name: demoDeployment},
			UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
			Behavior: &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownBehavior{
				StabilizationWindowSeconds: ptr.To[int32](demoStabilizationSeconds),
			}},
		},
	}
	if _, err := pc.SnugPolicies(d.ns).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the SnugPolicy: %w", err)
	}
	fmt.Fprintf(d.out, "   namespace %s, snugpolicy/%s created\n", d.ns, demoDeployment)
	node, _, tolerations := workNode(d.o.lab)
	pods, err := experiment.LoadDeployment{
		Name: demoDeployment, Replicas: 1,
		CPURequest: "50m", CPULimit: "100m", MemoryRequest: "64Mi", MemoryLimit: "128Mi",
		Args: []string{"--cpu=50m"}, LoadDir: d.o.lab.LoadDir(), Node: node, Tolerations: tolerations,
	}.Create(ctx, d.client, d.ns, 2*time.Minute)
	if err != nil {
		return err
	}
	d.pod = pods[0].Name
	fmt.Fprintf(d.out, "   deployment/%s: pod %s running\n", demoDeployment, d.pod)
	c, err := d.waitAgent(ctx, time.Minute, "the agent to sample the pod under the policy", func(c *agent.ContainerJSON) bool {
		return c.Autoscale != nil && c.Autoscale.LastDecision != nil && ratePoints(c.History) >= 3
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "   the agent tracks it under policy %s: %s\n", c.Autoscale.Policy, usageLine(c.Latest))
	fmt.Fprintf(d.out, `   50m of load under a 100m limit can be throttled in bursts, so snug may grow
   the pod already. Waiting until it has gone %v without a resize (at most %v).
`, demoQuiet, demoSettleTimeout)
	return nil
}

// settle waits until the pod has gone demoQuiet without a resize, for at
// most demoSettleTimeout, so that the step starts from a quiet pod.
func (d *demoRun) settle(ctx context.Context) error {
	start := time.Now()
	_, err := d.waitAgent(ctx, demoSettleTimeout, "", func(c *agent.ContainerJSON) bool {
		rs := c.Autoscale.Resizes
		for _, r := range rs {
			if r.SentAt.After(d.shown) {
				d.shown = r.SentAt
				fmt.Fprintf(d.out, "   snug resized it meanwhile: %s (%s)\n", r.Plan, r.Outcome)
			}
		}
		if c.Autoscale.LastDecision != nil && c.Autoscale.LastDecision.CPU.Why == "InFlight" {
			return false
		}
		last := start
		if len(rs) > 0 && rs[len(rs)-1].SentAt.After(last) {
			last = rs[len(rs)-1].SentAt
		}
		return time.Since(last) >= demoQuiet
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		fmt.Fprintf(d.out, "   still resizing after %v: stepping anyway\n", demoSettleTimeout)
		return nil
	}
	return err
}

// stopWhen says, from the pod's actual cpu at the step and now, whether the
// watch after a step has seen what it waits for.
type stopWhen func(before, now podState) bool

// growStop: the actual cpu limit grew. shrinkStop: the actual cpu request
// shrank (a shrink need not lower the limit).
func growStop(before, now podState) bool   { return now.CPULimitMilli > before.CPULimitMilli }
func shrinkStop(before, now podState) bool { return now.CPURequestMilli < before.CPURequestMilli }

// step writes the load targets, shows snug status --watch until the pod's
// actual cpu satisfies stop (or the timeout) and, with ended, on until its
// starvation ended (at most demoEndedTimeout more), and returns what it
// saw.
func (d *demoRun) step(ctx context.Context, targets string, stop stopWhen, ended bool) (*demoSummary, error) {
	before, err := d.client.CoreV1().Pods(d.ns).Get(ctx, d.pod, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading pod %s: %w", d.pod, err)
	}
	sum := &demoSummary{Targets: targets, Before: podFacts(before), StillThrottled: math.NaN()}
	then := ""
	if ended {
		then = ",\n   then until its starvation ended"
	}
	var starve *experiment.StarvationWatch
	if ended {
		cgs, err := experiment.StarvationTargets([]corev1.Pod{*before}, "app")
		if err != nil {
			return nil, err
		}
		_, cgroupRoot, _ := workNode(d.o.lab)
		if starve, err = experiment.WatchStarvation(ctx, cgroupRoot, cgs); err != nil {
			return nil, err
		}
		defer starve.Stop()
	}
	fmt.Fprintf(d.out, `
== Load step: %s, and snug status --watch
   The table is snug status --watch -n %s: CPU and MEMORY are the
   desired request/limit (the pod's spec); while the kubelet has not applied
   them yet, "(alloc ..., actual ...)" follows. Lines marked >> come from the
   agent's JSON API. Watching until the pod's status (its containerStatuses'
   resources) shows the new cpu (at most %v)%s.
`, targets, d.ns, d.o.timeout, then)

	sum.Step, err = experiment.WriteLoad(d.o.lab.LoadDir(), d.pod, targets)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(d.out, "\n   %s  load step: wrote %q to %s\n", sum.Step.Format("15:04:05.000"), targets, filepath.Join(d.o.lab.LoadDir(), d.pod))
	wctx, stopWatch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopWatch(); wg.Wait() }()
	sw := &prefixWriter{w: d.out, prefix: "   "}
	wg.Add(2)
	go func() {
		defer wg.Done()
		// The user's own command, as they would run it.
		args := []string{"status", "--watch", "--kubeconfig", d.o.lab.Kubeconfig(), "-n", d.ns}
		if code := cli.Run(wctx, args, sw, sw); code != 0 && wctx.Err() == nil {
			fmt.Fprintf(d.out, "   (snug status --watch exited %d)\n", code)
		}
	}()
	go func() {
		defer wg.Done()
		d.narrate(wctx, sum.Step)
	}()

	tctx, cancel := context.WithTimeout(ctx, d.o.timeout)
	defer cancel()
	seen, after, err := waitPod(tctx, d.client, d.ns, d.pod, before.ResourceVersion, func(p *corev1.Pod) bool {
		now := podFacts(p)
		return now.CPU != "" && stop(sum.Before, now)
	})
	if err == nil && starve != nil {
		fmt.Fprintf(d.out, "\n   %s  the pod's status shows cpu %s (t+%.2fs). Is the pod still starved? Reading its cgroup's\n"+
			"   cpu.stat every second (at most %v more) until every second of 2 s ran throttled under 5 %% of its CFS periods\n",
			seen.Format("15:04:05.000"), podFacts(after).CPU, seen.Sub(sum.Step).Seconds(), demoEndedTimeout)
		if err = d.waitEnded(ctx, sum, starve, seen); err != nil {
			stopWatch()
			wg.Wait()
			return nil, err
		}
	}
	stopWatch()
	wg.Wait()
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, fmt.Errorf("the pod's status did not show a new cpu within %v of the load step (--timeout; agent log: %s)", d.o.timeout, d.snug.AgentLog)
	case err != nil:
		return nil, err
	}
	sum.StatusAt = seen
	sum.After = podFacts(after)
	// The final table, once.
	if sum.EndWatched {
		fmt.Fprintf(d.out, "\n   %s  snug status -n %s\n", time.Now().Format("15:04:05.000"), d.ns)
	} else {
		fmt.Fprintf(d.out, "\n   %s  the pod's status shows cpu %s: snug status -n %s\n", seen.Format("15:04:05.000"), sum.After.CPU, d.ns)
	}
	if code := cli.Run(ctx, []string{"status", "--kubeconfig", d.o.lab.Kubeconfig(), "-n", d.ns}, sw, sw); code != 0 {
		return nil, fmt.Errorf("snug status -n %s exited %d", d.ns, code)
	}
	sw.Flush()
	// The agent's record of the resize arrives once it has seen the outcome.
	c, err := d.waitAgent(ctx, 30*time.Second, "the agent's record of the resize", func(c *agent.ContainerJSON) bool {
		return len(c.Autoscale.ResizesAfter(sum.Step)) > 0
	})
	if err != nil {
		return nil, err
	}
	sum.Resizes = c.Autoscale.ResizesAfter(sum.Step)
	d.shown = sum.Resizes[len(sum.Resizes)-1].SentAt
	return sum, nil
}

// waitEnded waits, at most demoEndedTimeout after status, until the pod's
// starvation ended, and records when, or how throttled it still is, and
// its actual cpu then.
func (d *demoRun) waitEnded(ctx context.Context, sum *demoSummary, starve *experiment.StarvationWatch, status time.Time) error {
	wctx, cancel := context.WithDeadline(ctx, status.Add(demoEndedTimeout))
	defer cancel()
	at, err := starve.Wait(wctx)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	sum.EndWatched = true
	if err == nil {
		sum.Ended = at
		fmt.Fprintf(d.out, "   %s  starvation ended t+%.2fs\n", at.Format("15:04:05.000"), at.Sub(sum.Step).Seconds())
	} else {
		if f, ok := starve.Throttled(); ok {
			sum.StillThrottled = f
		}
		fmt.Fprintf(d.out, "   %s  %s, %v after the status showed the grow: going on\n",
			time.Now().Format("15:04:05.000"), sum.stillThrottled(), demoEndedTimeout)
	}
	if p, err := d.client.CoreV1().Pods(d.ns).Get(ctx, d.pod, metav1.GetOptions{}); err == nil {
		sum.EndCPU = podFacts(p).CPU
	}
	return nil
}

// narrate prints the agent's decisions and resizes after since as they
// appear in its JSON API, until ctx ends.
func (d *demoRun) narrate(ctx context.Context, since time.Time) {
	var lastDecision time.Time
	sent := map[time.Time]bool{}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c, err := agentContainer(ctx, d.snug, d.ns, d.pod)
		if err != nil || c == nil || c.Autoscale == nil {
			continue
		}
		if lc := c.Autoscale.LastChange; lc != nil && lc.CPU.Action != "Hold" && lc.Time.After(since) && lc.Time.After(lastDecision) {
			lastDecision = lc.Time
			fmt.Fprintf(d.out, "   >> %s  agent decided (t+%.2fs): cpu %s to request %dm limit %dm: %s\n",
				lc.Time.Format("15:04:05.000"), lc.Time.Sub(since).Seconds(), strings.ToLower(lc.CPU.Action), lc.CPU.Request, lc.CPU.Limit, lc.CPU.Reason)
		}
		for _, r := range c.Autoscale.ResizesAfter(since) {
			if sent[r.SentAt] {
				continue
			}
			sent[r.SentAt] = true
			fmt.Fprintf(d.out, "   >> %s  agent's resize %s (patched t+%.2fs): %s\n",
				r.SentAt.Format("15:04:05.000"), r.Outcome, r.DecidedAt.Sub(since).Seconds()+r.DecisionToPatchSeconds, r.Plan)
		}
	}
}

func (d *demoRun) shrink(ctx context.Context) error {
	fmt.Fprintf(d.out, `
== --shrink: the load drops back to 50m
   snug grows at once when a container starves, but shrinks slowly: only
   after the policy's stabilization window (%ds here) of lower usage, by
   bounded steps. First the grows end (no resize for %v).
`, demoStabilizationSeconds, demoQuiet)
	if err := d.settle(ctx); err != nil {
		return err
	}
	d.o.timeout = max(d.o.timeout, demoStabilizationSeconds*time.Second+4*time.Minute)
	sum, err := d.step(ctx, "cpu=50m", shrinkStop, false)
	if err != nil {
		return err
	}
	fmt.Fprint(d.out, sum.format())
	return nil
}

func (d *demoRun) cleanUp(ctx context.Context) error {
	var errs []error
	if d.ns != "" {
		fmt.Fprintf(d.out, "\n== Cleaning up: namespace %s", d.ns)
		if d.pod != "" {
			_ = os.Remove(filepath.Join(d.o.lab.LoadDir(), d.pod))
		}
		errs = append(errs, experiment.DeleteNamespace(ctx, d.client, d.ns, 2*time.Minute))
	} else if d.snug != nil {
		fmt.Fprint(d.out, "\n== Cleaning up")
	}
	if d.snug != nil {
		fmt.Fprint(d.out, ", snug's agent and controller")
		errs = append(errs, d.snug.Stop())
	}
	if d.ns != "" || d.snug != nil {
		fmt.Fprintln(d.out)
	}
	return errors.Join(errs...)
}

// waitAgent polls the agent's view of the demo pod's container until cond
// holds (Autoscale is set whenever cond is called) or timeout passes.
// what names the wait in the error; empty returns the bare deadline error.
func (d *demoRun) waitAgent(ctx context.Context, timeout time.Duration, what string, cond func(*agent.ContainerJSON) bool) (*agent.ContainerJSON, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		c, err := agentContainer(ctx, d.snug, d.ns, d.pod)
		if err != nil {
			lastErr = err
		} else if c != nil && c.Autoscale != nil && cond(c) {
			return c, nil
		}
		select {
		case <-ctx.Done():
			if what == "" || ctx.Err() != context.DeadlineExceeded {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("waiting %v for %s: %w (last error: %v; agent log: %s)", timeout, what, ctx.Err(), lastErr, d.snug.AgentLog)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// agentContainer reads the demo pod's container from the agent's JSON API;
// nil when the agent does not sample it (yet).
func agentContainer(ctx context.Context, s *experiment.Snug, ns, pod string) (*agent.ContainerJSON, error) {
	c, err := s.AgentAPI().Container(ctx, ns, pod, "app", agent.Query{Limit: 30})
	if errors.Is(err, agent.ErrNotSampled) {
		return nil, nil
	}
	return c, err
}

// waitPod watches the pod from resourceVersion rv until ok holds for it,
// and returns when the watch saw it and the pod.
func waitPod(ctx context.Context, client kubernetes.Interface, ns, name, rv string, ok func(*corev1.Pod) bool) (time.Time, *corev1.Pod, error) {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	for {
		w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv})
		if err != nil {
			if ctx.Err() != nil {
				return time.Time{}, nil, ctx.Err()
			}
			// An expired version or a broken connection: start from now.
			rv = ""
			time.Sleep(200 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			rv = p.ResourceVersion
			if ok(p) {
				w.Stop()
				return time.Now(), p, nil
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return time.Time{}, nil, ctx.Err()
		}
	}
}

func ratePoints(ps []agent.PointJSON) int {
	n := 0
	for _, p := range ps {
		if p.HasRate {
			n++
		}
	}
	return n
}

func usageLine(p agent.PointJSON) string {
	s := "no rate yet"
	if p.CPUUsageMillicores != nil {
		s = fmt.Sprintf("using %.0fm cpu", *p.CPUUsageMillicores)
	}
	if p.CPUThrottledFraction != nil {
		s += fmt.Sprintf(", %.0f%% of periods throttled", 100**p.CPUThrottledFraction)
	}
	return s
}

// podState is what the summary compares before and after a step.
type podState struct {
	// CPU is the first container's actual cpu request/limit
	// (status.containerStatuses[0].resources); empty before the kubelet
	// reports it.
	CPU                            string
	CPURequestMilli, CPULimitMilli int64
	Restarts                       int32
	ContainerID                    string
	QoS                            corev1.PodQOSClass
}

func qtyOrDash(l corev1.ResourceList, r corev1.ResourceName) string {
	if q, ok := l[r]; ok {
		return q.String()
	}
	return "-"
}

func podFacts(p *corev1.Pod) podState {
	var s podState
	s.QoS = p.Status.QOSClass
	if len(p.Status.ContainerStatuses) > 0 {
		cs := p.Status.ContainerStatuses[0]
		s.Restarts, s.ContainerID = cs.RestartCount, cs.ContainerID
		if cs.Resources != nil {
			req, lim := cs.Resources.Requests[corev1.ResourceCPU], cs.Resources.Limits[corev1.ResourceCPU]
			s.CPU = qtyOrDash(cs.Resources.Requests, corev1.ResourceCPU) + "/" + qtyOrDash(cs.Resources.Limits, corev1.ResourceCPU)
			s.CPURequestMilli, s.CPULimitMilli = req.MilliValue(), lim.MilliValue()
		}
	}
	return s
}

// demoSummary is what one load step showed.
type demoSummary struct {
	Targets string
	// Step is when the load was written; StatusAt when the pod's watch saw
	// the new cpu limit in its status.
	Step, StatusAt time.Time
	Before, After  podState
	// Resizes are the agent's resizes decided after the step, as its API
	// had them once the status showed the first.
	Resizes []agent.ResizeJSON
	// EndWatched is true when the demo waited for the pod's starvation to
	// end; Ended is when it did (zero: not within demoEndedTimeout), and
	// StillThrottled, otherwise, the share of its CFS periods throttled in
	// the last 2 s (NaN: unknown). EndCPU is the actual cpu then.
	EndWatched     bool
	Ended          time.Time
	StillThrottled float64
	EndCPU         string
}

// stillThrottled is the line for a starvation that had not ended.
func (s *demoSummary) stillThrottled() string {
	if math.IsNaN(s.StillThrottled) {
		return "still throttled"
	}
	return fmt.Sprintf("still throttled: %.0f%% of periods", 100*s.StillThrottled)
}

// format is the summary's text: the seconds from the step to the first
// resize's decision, patch and status, then what did not change.
func (s *demoSummary) format() string {
	var b strings.Builder
	verb := "grown"
	if s.After.CPURequestMilli < s.Before.CPURequestMilli {
		verb = "shrunk"
	}
	fmt.Fprintf(&b, "\n== Result: %s in place, %.2fs from the load step (%s) to the pod's status\n", verb, s.StatusAt.Sub(s.Step).Seconds(), s.Targets)
	if len(s.Resizes) > 0 {
		r := s.Resizes[0]
		decided := r.DecidedAt.Sub(s.Step).Seconds()
		fmt.Fprintf(&b, "     step -> agent's decision     %6.2fs  (%s)\n", decided, r.Plan)
		fmt.Fprintf(&b, "     step -> patch accepted       %6.2fs\n", decided+r.DecisionToPatchSeconds)
	}
	fmt.Fprintf(&b, "     step -> status shows it      %6.2fs  (actual cpu %s -> %s)\n", s.StatusAt.Sub(s.Step).Seconds(), s.Before.CPU, s.After.CPU)
	switch {
	case !s.EndWatched:
	case !s.Ended.IsZero():
		fmt.Fprintf(&b, "     step -> starvation ended     %6.2fs  (throttled under 5%% of periods for 2 s; actual cpu then %s)\n", s.Ended.Sub(s.Step).Seconds(), s.EndCPU)
	default:
		fmt.Fprintf(&b, "     starvation not ended         %s %v after the status (actual cpu then %s)\n", s.stillThrottled(), demoEndedTimeout, s.EndCPU)
	}
	if len(s.Resizes) > 1 {
		fmt.Fprintf(&b, "     resizes after the step       %d (the agent records them as they complete)\n", len(s.Resizes))
	}
	fmt.Fprintf(&b, "     restarts                     %d -> %d\n", s.Before.Restarts, s.After.Restarts)
	fmt.Fprintf(&b, "     container ID                 %s\n", sameOrChanged(s.Before.ContainerID, s.After.ContainerID))
	qos := "unchanged"
	if s.Before.QoS != s.After.QoS {
		qos = "CHANGED"
	}
	fmt.Fprintf(&b, "     QoS class                    %s -> %s (%s)\n", s.Before.QoS, s.After.QoS, qos)
	return b.String()
}

// lockedWriter serializes writes from the demo's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
