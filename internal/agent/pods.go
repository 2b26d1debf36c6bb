package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/snug-dev/snug/internal/kube"
)

// The agent builds its informers from cache.ListWatch over internal/kube's
// core/v1 client, not from client-go's informer factory or typed clients:
// the factory's package links an informer and a lister for every API group,
// and the typed clients a scheme of every API group, which the agent's RSS
// pays for on every node.

// podListWatch lists and watches the pods whose fields match selector.
func podListWatch(client *kube.Client, selector string) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return client.Pods(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return client.Pods(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
}

// nodeListWatch lists and watches the nodes whose fields match selector.
func nodeListWatch(client *kube.Client, selector string) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return client.Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return client.Nodes().Watch(ctx, o)
		},
	}
}

// CheckNode returns an error if the node does not exist or the API server
// cannot be reached.
func CheckNode(ctx context.Context, client *kube.Client, node string) error {
	_, err := client.Nodes().Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("node %q does not exist: %w", node, err)
	}
	if err != nil {
		return fmt.Errorf("getting node %q: %w", node, err)
	}
	return nil
}

// WatchPods feeds a with the pods bound to node, from an informer whose
// list and watch carry the field selector spec.nodeName=node. The informer
// re-lists and re-watches by itself after client timeouts and API server
// restarts. WatchPods returns once the initial list is in (and marks a
// synced), or with an error if that takes longer than syncTimeout; the
// informer runs until ctx is done. The returned lister reads the informer's
// cache of the node's pods (the Decider plans from it).
func WatchPods(ctx context.Context, client *kube.Client, node string, a *Agent, syncTimeout time.Duration) (corelisters.PodLister, error) {
	inf := cache.NewSharedIndexInformer(podListWatch(client, fields.OneTermEqualSelector("spec.nodeName", node).String()),
		&corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := inf.SetTransform(kube.StripManagedFields); err != nil {
		return nil, err
	}
	// Handlers only record what the pod says; the loop acts on it.
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { upsert(a, obj) },
		UpdateFunc: func(_, obj any) { upsert(a, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				a.DeletePod(pod.UID)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching pods of node %s: %w", node, err)
	}
	go inf.RunWithContext(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("listing pods of node %s: not done after %v: %w", node, syncTimeout, context.Cause(syncCtx))
	}
	a.SetSynced()
	return corelisters.NewPodLister(inf.GetIndexer()), nil
}

func upsert(a *Agent, obj any) {
	if pod, ok := obj.(*corev1.Pod); ok {
		a.UpsertPod(pod)
	}
}

// WatchNode runs an informer over the one node and returns a function that
// reads it from the informer's cache, for its allocatable.
func WatchNode(ctx context.Context, client *kube.Client, node string, syncTimeout time.Duration) (func() (*corev1.Node, error), error) {
	inf := cache.NewSharedIndexInformer(nodeListWatch(client, fields.OneTermEqualSelector("metadata.name", node).String()),
		&corev1.Node{}, 0, cache.Indexers{})
	if err := inf.SetTransform(kube.StripManagedFields); err != nil {
		return nil, err
	}
	go inf.RunWithContext(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("watching node %s: not listed after %v: %w", node, syncTimeout, context.Cause(syncCtx))
	}
	lister := corelisters.NewNodeLister(inf.GetIndexer())
	return func() (*corev1.Node, error) { return lister.Get(node) }, nil
}
