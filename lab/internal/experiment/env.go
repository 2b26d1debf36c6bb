package experiment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Images the experiments run. Both must already be on the node: pods use
// imagePullPolicy Never.
const (
	BusyboxImage = "docker.io/library/busybox:1.36"
	LoadImage    = "snug.dev/snug-load:latest"
)

// DefaultTimeout bounds each wait of an experiment unless Env.Timeout is set.
const DefaultTimeout = 2 * time.Minute

// Env is what the experiments need to reach a cluster. Fill in Client and
// Kubectl; the rest is optional. An Env is not changed by the experiments;
// do not run two experiments at once against one node.
type Env struct {
	// Client talks to the cluster.
	Client kubernetes.Interface
	// Kubectl is the path of a kubectl binary, used for exec into pods
	// (the marker file of CPUResize and MemoryRestart).
	Kubectl string
	// Kubeconfig is passed to kubectl; empty leaves kubectl to its own
	// defaults ($KUBECONFIG).
	Kubeconfig string
	// CgroupRoot is where this machine mounts cgroups (/sys/fs/cgroup),
	// set only when the pods' node is this machine. Empty skips the cgroup
	// readings.
	CgroupRoot string
	// Node, if set, is the node every pod of the experiment is placed on
	// (a nodeSelector on kubernetes.io/hostname), and Tolerations are
	// added to them (a lab node kept for some tests is tainted). Empty
	// leaves placement to the scheduler.
	Node        string
	Tolerations []corev1.Toleration
	// Timeout bounds every single wait; zero means DefaultTimeout.
	Timeout time.Duration
	// Clock stamps what is observed; nil means the real clock. It is read
	// from the watch goroutines too, so it must be safe for concurrent use.
	Clock clock.PassiveClock
	// OnStep, if set, is called with each step as it is recorded, from the
	// goroutine running the experiment. `snug-lab demo` prints from it.
	OnStep func(Step)
}

// Validate reports what is missing.
func (e Env) Validate() error {
	var errs []error
	if e.Client == nil {
		errs = append(errs, errors.New("experiment env: no client"))
	}
	if e.Kubectl == "" {
		errs = append(errs, errors.New("experiment env: no kubectl path"))
	}
	if e.Timeout < 0 {
		errs = append(errs, errors.New("experiment env: negative timeout"))
	}
	return errors.Join(errs...)
}

func (e Env) timeout() time.Duration {
	if e.Timeout == 0 {
		return DefaultTimeout
	}
	return e.Timeout
}

func (e Env) now() time.Time {
	if e.Clock == nil {
		return time.Now()
	}
	return e.Clock.Now()
}

// Run is what every experiment's result starts with.
type Run struct {
	// Name is the experiment's title.
	Name string
	// Namespace is the namespace the experiment made (and deleted).
	Namespace string
	// ServerVersion is the API server's gitVersion, e.g. v1.35.4, and
	// ServerMinor its minor version (35).
	ServerVersion string
	ServerMinor   int
	// Started is when the experiment began; Origin is t+0 of the steps:
	// the moment the experiment's pods were running, just before the first
	// patch. Finished is after the namespace was gone.
	Started, Origin, Finished time.Time
	// Steps is the timeline, in order.
	Steps []Step
}

// Step is one moment of an experiment's timeline.
type Step struct {
	// Experiment is the Run's Name.
	Experiment string
	// Setup is true for steps before the Run's Origin (pods starting).
	Setup bool
	// Since is the time since the Run's Origin, or since Started for setup
	// steps.
	Since time.Duration
	// What happened, e.g. "JSON patch accepted in 12ms" or "actual cpu
	// 250m/250m -> 500m/500m, -PodResizeInProgress".
	What string
	// Pod is the state, at that moment, of the pod the step is about: the
	// test pod, or a helper such as the filler (see Pod.Name). Zero for a
	// step about no pod's state, such as "filler pod gone".
	Pod PodState
	// Note is a detail to show under the step, such as a condition message
	// or an API error.
	Note string
}

// session is one experiment in progress.
type session struct {
	env     Env
	run     *Run
	started bool   // start was called
	held    []Step // steps recorded while holding, not yet published
	holding bool
}

// begin validates env, reads the server version and creates the
// experiment's namespace (generateName prefix).
func begin(ctx context.Context, env Env, name, prefix string) (*session, error) {
	s := &session{env: env, run: &Run{Name: name, Started: env.now()}}
	s.run.Origin = s.run.Started
	if err := env.Validate(); err != nil {
		return s, err
	}
	v, err := env.Client.Discovery().ServerVersion()
	if err != nil {
		return s, fmt.Errorf("reading server version: %w", err)
	}
	s.run.ServerVersion = v.GitVersion
	s.run.ServerMinor, _ = strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	ns, err := env.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: map[string]string{"snug.dev/experiment": prefix[:len(prefix)-1]}},
	}, metav1.CreateOptions{})
	if err != nil {
		return s, fmt.Errorf("creating namespace: %w", err)
	}
	s.run.Namespace = ns.Name
	return s, nil
}

// cleanupTimeout bounds the wait for an experiment's namespace to go,
// whatever Env.Timeout says: a namespace left behind would change the
// node's room for the next experiment.
const cleanupTimeout = 2 * time.Minute

// end deletes the namespace and waits until it is gone, so that the next
// experiment finds the node's room as it was. It runs even when ctx is
// cancelled. A cleanup error is joined to *errp.
func (s *session) end(ctx context.Context, errp *error) {
	defer func() { s.run.Finished = s.env.now() }()
	if s.run.Namespace == "" {
		return
	}
	timeout := max(cleanupTimeout, s.env.timeout())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	nsc := s.env.Client.CoreV1().Namespaces()
	err := nsc.Delete(ctx, s.run.Namespace, metav1.DeleteOptions{})
	if err == nil || apierrors.IsNotFound(err) {
		err = poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
			_, gerr := nsc.Get(ctx, s.run.Namespace, metav1.GetOptions{})
			if apierrors.IsNotFound(gerr) {
				return true, nil
			}
			return false, gerr
		})
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("still there after %s", timeout)
	}
	if err != nil {
		*errp = errors.Join(*errp, fmt.Errorf("deleting namespace %s: %w", s.run.Namespace, err))
	}
}

// start sets t+0 of the timeline to now.
func (s *session) start() { s.run.Origin, s.started = s.env.now(), true }

// step records a step about the test pod (pod may be zero).
func (s *session) step(what string, pod PodState, note string) {
	at := pod.At
	if at.IsZero() {
		at = s.env.now()
	}
	st := Step{Experiment: s.run.Name, Setup: !s.started, Since: at.Sub(s.run.Origin), What: what, Pod: pod, Note: note}
	if s.holding {
		s.held = append(s.held, st)
		return
	}
	s.publish(st)
}

func (s *session) publish(st Step) {
	s.run.Steps = append(s.run.Steps, st)
	if s.env.OnStep != nil {
		s.env.OnStep(st)
	}
}

// hold buffers steps until release, for waits on two pods at once whose
// steps may arrive out of time order.
func (s *session) hold() { s.holding = true }

// release publishes the held steps in time order.
func (s *session) release() {
	s.holding = false
	slices.SortStableFunc(s.held, func(a, b Step) int { return cmp.Compare(a.Since, b.Since) })
	for _, st := range s.held {
		s.publish(st)
	}
	s.held = nil
}

// pollFor polls cond like poll, bounded by the Env's timeout; the error
// names what was awaited.
func (s *session) pollFor(ctx context.Context, what string, interval time.Duration, cond func(context.Context) (bool, error)) error {
	timeout := s.env.timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := poll(ctx, interval, cond)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("waiting for %s: not seen within %s", what, timeout)
	}
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// poll calls cond every interval until it returns true or an error, or ctx
// ends.
func poll(ctx context.Context, interval time.Duration, cond func(context.Context) (bool, error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// String is one line for logs: "t+0.44s  status resources match the spec
// | desired cpu 500m/500m mem 128Mi/128Mi | actual ... | conditions -",
// then the note on a second line.
func (st Step) String() string {
	when := fmt.Sprintf("t%+.2fs", st.Since.Seconds())
	if st.Setup {
		when = fmt.Sprintf("setup %.1fs", st.Since.Seconds())
	}
	line := when + "  " + st.What
	if st.Pod.Name != "" || st.Pod.UID != "" {
		actual := "none"
		if st.Pod.HasActual {
			actual = st.Pod.Actual.String()
		}
		line += fmt.Sprintf(" | desired %s | actual %s | conditions %s", st.Pod.Desired, actual, st.Pod.ConditionsString())
	}
	if st.Note != "" {
		line += "\n    " + st.Note
	}
	return line
}
