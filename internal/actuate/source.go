package actuate

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// PodSource gives Wait the versions of a pod that follow a patch. The CLI
// uses WatchSource (one watch per wait); the agent feeds Wait from its pod
// informer's cache, which it keeps anyway.
type PodSource interface {
	// Follow calls see with the versions of the pod from names (same
	// namespace, name and UID) that came after from, the pod as the
	// patch's answer returned it, until see returns true; then it returns
	// nil. A source may skip intermediate versions but must hand over the
	// latest one it knows of after every change. It returns an error
	// wrapping ErrPodDeleted when the pod is deleted (or replaced by one
	// with another UID), ctx's error when ctx ends, and any other error
	// when it can no longer follow the pod. see runs on Follow's
	// goroutine, one call at a time.
	Follow(ctx context.Context, from *corev1.Pod, see func(*corev1.Pod) bool) error
}

// watchSeconds asks the server to end each watch after this long; Follow
// starts the next one where the last ended. Client-side timeouts (a
// rest.Config Timeout) end watches too and are handled the same way.
const watchSeconds = 60

// WatchSource follows a pod with a watch of its own, from the patch's
// resourceVersion, so nothing that happened after the patch is missed. A
// watch the server or the client's timeout closes is restarted where it
// ended; when that version is too old (410 Gone) the pod is read afresh. A
// few failures in a row to (re)start the watch are retried, more end it.
type WatchSource struct {
	// Pods reads and watches pods (GetPod, WatchPods). Required.
	Pods Client
}

// Follow implements PodSource.
func (s WatchSource) Follow(ctx context.Context, from *corev1.Pod, see func(*corev1.Pod) bool) error {
	ns, name := from.Namespace, from.Name
	pods := s.Pods
	rv := from.ResourceVersion
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	get := func() (bool, error) {
		p, err := pods.GetPod(ctx, ns, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, fmt.Errorf("reading pod %s/%s: %w", ns, name, ErrPodDeleted)
		case err != nil:
			return false, fmt.Errorf("reading pod %s/%s: %w", ns, name, err)
		case from.UID != "" && p.UID != from.UID:
			return false, fmt.Errorf("reading pod %s/%s: %w (a new pod has its name)", ns, name, ErrPodDeleted)
		}
		rv = p.ResourceVersion
		return see(p), nil
	}
	failures := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		secs := int64(watchSeconds)
		w, err := pods.WatchPods(ctx, ns, metav1.ListOptions{FieldSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &secs})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				if done, err := get(); done || err != nil {
					return err
				}
				continue
			}
			// The API server may be briefly busy.
			if failures++; failures > 5 {
				return fmt.Errorf("watching pod %s/%s: %w", ns, name, err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(failures) * 200 * time.Millisecond):
			}
			continue
		}
		done, next, err := drain(ctx, w, &rv, see)
		w.Stop()
		switch {
		case errors.Is(err, ErrPodDeleted):
			return err
		case err != nil:
			// An error event (the stream broke, the server is busy): start
			// again from the last version seen, a few times.
			if failures++; failures > 5 {
				return fmt.Errorf("watching pod %s/%s: %w", ns, name, err)
			}
			continue
		case done:
			return nil
		}
		failures = 0
		if next == relist {
			if done, err := get(); done || err != nil {
				return err
			}
		}
	}
}

type afterDrain int

const (
	rewatch afterDrain = iota
	relist
)

// drain reads one watch until it ends. It returns done when see says so,
// relist when the watch's resourceVersion expired, and an error for the
// pod's deletion or a watch error.
func drain(ctx context.Context, w watch.Interface, rv *string, see func(*corev1.Pod) bool) (bool, afterDrain, error) {
	for {
		select {
		case <-ctx.Done():
			return false, rewatch, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, rewatch, nil
			}
			switch ev.Type {
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
					return false, relist, nil
				}
				return false, rewatch, err
			case watch.Deleted:
				return false, rewatch, ErrPodDeleted
			}
			if m, err := meta.Accessor(ev.Object); err == nil {
				*rv = m.GetResourceVersion()
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			if p, ok := ev.Object.(*corev1.Pod); ok && see(p) {
				return true, rewatch, nil
			}
		}
	}
}
