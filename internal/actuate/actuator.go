package actuate

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/snug-dev/snug/internal/resize"
)

// DefaultTimeout bounds Wait when WaitOptions.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// Client is the part of the core/v1 API the Actuator uses: pods (patch,
// watch, get, list), nodes and namespaces (Gather). Its methods mean what
// the typed core/v1 client's do and return the API server's errors
// (apierrors' StatusError), which ClassifyPatchError reads. internal/kube's
// Client is one; it is an interface of its own, not the typed client's
// getters, so that the agent need not link client-go's typed clients and
// their scheme of every API group.
type Client interface {
	GetPod(ctx context.Context, namespace, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	// ListPods and WatchPods take "" as namespace for every namespace.
	ListPods(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error)
	WatchPods(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error)
	PatchPod(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error)
	GetNode(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error)
	GetNamespace(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Namespace, error)
}

// Actuator sends resize patches and watches their outcome. Its fields are
// read-only once in use; it is safe for concurrent use.
type Actuator struct {
	// Client talks to the API server. Required.
	Client Client
	// Source gives Wait the pod's versions after a patch; nil means
	// WatchSource over Client (a watch per Wait). The agent passes one fed
	// by its pod informer.
	Source PodSource
	// Clock stamps what is observed; nil means the real clock.
	Clock clock.PassiveClock
}

func (a *Actuator) now() time.Time {
	if a.Clock == nil {
		return time.Now()
	}
	return a.Clock.Now()
}

// SendOptions tune Send.
type SendOptions struct {
	// DryRun sends the patch with dryRun=All: the API server validates and
	// admits it but stores nothing.
	DryRun bool
	// PatchType is the patch's content type; empty means an RFC 6902 JSON
	// patch (types.JSONPatchType), the only kind snug's planner makes.
	PatchType types.PatchType
}

// Send patches the pod's resize subresource with patch (an RFC 6902 JSON
// patch, as resize.Plan.Patch or resize.Revert make). The result's Outcome
// is InProgress when the patch was accepted, Rejected or Conflict when the
// API server refused it; an error means no answer about the patch was had
// (see ClassifyPatchError; the result's APIError then carries the Status
// if the server answered one), and then nothing was changed by this call
// unless the connection broke after the server had applied it. Only the
// pod's namespace and name are read.
func (a *Actuator) Send(ctx context.Context, pod *corev1.Pod, patch []byte, o SendOptions) (Result, error) {
	if len(patch) == 0 {
		return Result{}, errors.New("patching resize: empty patch")
	}
	opts := metav1.PatchOptions{}
	if o.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	pt := o.PatchType
	if pt == "" {
		pt = types.JSONPatchType
	}
	r := Result{Sent: a.now(), DryRun: o.DryRun}
	got, err := a.Client.PatchPod(ctx, pod.Namespace, pod.Name, pt, patch, opts, "resize")
	r.Answered = a.now()
	outcome, ae, cerr := ClassifyPatchError(err)
	if cerr != nil {
		r.APIError = ae
		return r, fmt.Errorf("resizing pod %s/%s: %w", pod.Namespace, pod.Name, cerr)
	}
	if ae != nil {
		r.Outcome, r.Last, r.APIError, r.Message, r.Decided = outcome, outcome, ae, ae.Message, r.Answered
		return r, nil
	}
	r.Outcome, r.Last, r.Pod, r.Generation = resize.InProgress, resize.InProgress, got, got.Generation
	return r, nil
}

// WaitOptions tune Wait.
type WaitOptions struct {
	// Timeout bounds the wait; zero means DefaultTimeout. When it passes
	// the outcome is Timeout and Result.Last says what was seen last.
	Timeout time.Duration
	// ThroughDeferred keeps waiting while the resize is Deferred (the
	// kubelet retries it when room appears) instead of returning Deferred.
	ThroughDeferred bool
}

// Wait follows the pod of a sent patch (r from Send, accepted) until the
// kubelet's answer is decisive for the resources want: Applied, Deferred,
// Infeasible or Error (and Conflict if someone else changes them), or
// until the timeout (Timeout). It fills in r's times and returns it.
//
// The versions come from the Actuator's Source (by default a watch from
// the patch's resourceVersion, so nothing that happened after the patch is
// missed); each is classified by the same rules (observe), gated by
// observedGeneration. The pod's deletion is an error wrapping
// ErrPodDeleted; a source that fails is an error.
func (a *Actuator) Wait(ctx context.Context, r Result, want []resize.ContainerPlan, o WaitOptions) (Result, error) {
	if r.Pod == nil || r.Outcome != resize.InProgress {
		return r, errors.New("waiting for resize: nothing was sent, or it was refused")
	}
	if r.DryRun {
		return r, errors.New("waiting for resize: a dry run changes nothing")
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pod := r.Pod
	ns, name := pod.Namespace, pod.Name

	// see records one version; it returns true when the wait is over.
	see := func(p *corev1.Pod) bool {
		at := a.now()
		r.Pod = p
		obs := observe(p, r.Generation, want)
		if obs.allocated && r.AllocatedSeen.IsZero() {
			r.AllocatedSeen = at
		}
		if obs.actual && r.ActualSeen.IsZero() {
			r.ActualSeen = at
		}
		r.Last, r.Message = obs.outcome, obs.message
		if obs.decisive(o.ThroughDeferred) {
			r.Outcome, r.Decided = obs.outcome, at
			return true
		}
		return false
	}
	if see(pod) {
		return r, nil
	}
	src := a.Source
	if src == nil {
		src = WatchSource{Pods: a.Client}
	}
	err := src.Follow(wctx, pod, see)
	switch {
	case err == nil:
		return r, nil
	case errors.Is(err, ErrPodDeleted):
		return r, fmt.Errorf("waiting for resize of pod %s/%s: %w", ns, name, err)
	case wctx.Err() != nil:
		return a.ended(ctx, r)
	}
	return r, err
}

// ended returns r as a Timeout, or the caller's own cancellation.
func (a *Actuator) ended(ctx context.Context, r Result) (Result, error) {
	if err := ctx.Err(); err != nil {
		return r, fmt.Errorf("waiting for resize of pod %s/%s: %w", r.Pod.Namespace, r.Pod.Name, err)
	}
	r.Outcome, r.Decided = resize.Timeout, a.now()
	return r, nil
}

// ApplyOptions tune Apply.
type ApplyOptions struct {
	SendOptions
	// Wait follows the pod until the outcome is decided; otherwise Apply
	// returns once the API server has answered.
	Wait bool
	WaitOptions
}

// Apply sends the plan's patch to the pod and, if asked, waits for the
// outcome. A no-op plan is Applied at once, with nothing sent.
func (a *Actuator) Apply(ctx context.Context, pod *corev1.Pod, plan *resize.Plan, o ApplyOptions) (Result, error) {
	if plan.NoOp() {
		now := a.now()
		return Result{Outcome: resize.Applied, Last: resize.Applied, Pod: pod, Generation: pod.Generation, Decided: now, DryRun: o.DryRun}, nil
	}
	r, err := a.Send(ctx, pod, plan.Patch, o.SendOptions)
	if err != nil || r.Outcome != resize.InProgress || !o.Wait || o.DryRun {
		return r, err
	}
	return a.Wait(ctx, r, plan.Containers, o.WaitOptions)
}

// Revert sets the pod's spec back to its actual resources (resize.Revert),
// to clear an Infeasible resize, and with o.Wait waits until the kubelet has
// dropped the pending resize (Applied). A pod already at its actual
// resources is Applied at once, with nothing sent.
func (a *Actuator) Revert(ctx context.Context, pod *corev1.Pod, o ApplyOptions) (Result, error) {
	patch, err := resize.Revert(pod)
	if err != nil {
		return Result{}, err
	}
	want := actualPlan(pod)
	if patch == nil {
		return Result{Outcome: resize.Applied, Last: resize.Applied, Pod: pod, Generation: pod.Generation, Decided: a.now(), DryRun: o.DryRun}, nil
	}
	r, err := a.Send(ctx, pod, patch, o.SendOptions)
	if err != nil || r.Outcome != resize.InProgress || !o.Wait || o.DryRun {
		return r, err
	}
	return a.Wait(ctx, r, want, o.WaitOptions)
}

// actualPlan is what a revert asks for: every container that reports
// actual resources, at those resources, and the pod level at what the
// kubelet reports applied (resize.PodLevelActual; a value it does not
// report stays as the spec has it, as resize.Revert leaves it).
func actualPlan(pod *corev1.Pod) []resize.ContainerPlan {
	var want []resize.ContainerPlan
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, st := range list {
			if st.Resources != nil {
				want = append(want, resize.ContainerPlan{Name: st.Name, Requests: st.Resources.Requests, Limits: st.Resources.Limits})
			}
		}
	}
	if a := resize.PodLevelActual(pod); a != nil {
		merged := func(spec, got corev1.ResourceList) corev1.ResourceList {
			out := spec.DeepCopy()
			for name, q := range got {
				if out == nil {
					out = corev1.ResourceList{}
				}
				out[name] = q
			}
			return out
		}
		want = append(want, resize.ContainerPlan{Name: resize.PodLevel, PodLevel: true, Index: -1,
			Requests: merged(pod.Spec.Resources.Requests, a.Requests), Limits: merged(pod.Spec.Resources.Limits, a.Limits)})
	}
	return want
}
