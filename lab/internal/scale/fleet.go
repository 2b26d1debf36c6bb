package scale

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/kube"
)

// Fleet runs hollow agents in this process, one per node (agent.RunHollow),
// against the API server at Base. Their containers are read through one
// Sampler whose limits come from one shared pod informer (the node's
// applied limits, as the pods' status shows them), not from one watch per
// agent beyond the agents' own.
type Fleet struct {
	// Base is the API server's client config; each agent gets its own
	// clients on a copy.
	Base *rest.Config
	// Nodes are the node names, one agent each.
	Nodes []string
	// Options are the agents' options (Node is set per agent).
	Options agent.Options
	// Demand is each container's load model.
	Demand func(ref agent.ContainerRef) Demand
	// Seed seeds the samplers' draws.
	Seed uint64

	mu       sync.Mutex
	requests map[string]map[Request]float64
	ready    int
}

// Request is a kind of request to the API server, named as the API
// server's apiserver_request_total names it.
type Request struct{ Verb, Resource string }

// Write reports whether the request writes.
func (r Request) Write() bool {
	switch r.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// Run runs the fleet until ctx is done. It returns the first agent's
// error, or nil when ctx ended them all.
func (f *Fleet) Run(ctx context.Context) error {
	if len(f.Nodes) == 0 || f.Base == nil || f.Demand == nil {
		return errors.New("a fleet needs nodes, an API server and a demand model")
	}
	f.mu.Lock()
	f.requests = map[string]map[Request]float64{}
	for _, n := range f.Nodes {
		f.requests[n] = map[Request]float64{}
	}
	f.mu.Unlock()

	cfg := rest.CopyConfig(f.Base)
	cfg.UserAgent = "snug-lab-fleet"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTransform(kube.StripManagedFields))
	pods := factory.Core().V1().Pods().Informer()
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), pods.HasSynced) {
		return fmt.Errorf("listing pods for the fleet's limits: %w", syncCtx.Err())
	}
	sampler := &Sampler{Demand: f.Demand, Limits: limitsFrom(pods.GetStore()), Seed: f.Seed}

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, len(f.Nodes))
	for _, n := range f.Nodes {
		o := f.Options
		o.Node = n
		acfg := o.Config()
		acfg.Sampler = sampler
		count := func(verb, resource string) {
			f.mu.Lock()
			f.requests[n][Request{verb, resource}]++
			f.mu.Unlock()
		}
		ready := func() {
			f.mu.Lock()
			f.ready++
			f.mu.Unlock()
		}
		go func() {
			err := agent.RunHollow(ctx, &o, acfg, f.Base, clock.RealClock{}, count, ready)
			if err != nil {
				err = fmt.Errorf("hollow agent of node %s: %w", n, err)
			}
			errs <- err
		}()
	}
	var first error
	for range f.Nodes {
		if err := <-errs; err != nil && first == nil {
			first = err
			stop()
		}
	}
	return first
}

// Ready is how many agents have synced their watches.
func (f *Fleet) Ready() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ready
}

// Requests returns a copy of each node's agent's requests so far.
func (f *Fleet) Requests() map[string]map[Request]float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]map[Request]float64, len(f.requests))
	for n, r := range f.requests {
		out[n] = maps.Clone(r)
	}
	return out
}

// Writes sums the writes in requests, by kind.
func Writes(requests map[string]map[Request]float64) map[Request]float64 {
	out := map[Request]float64{}
	for _, byKind := range requests {
		for r, n := range byKind {
			if r.Write() {
				out[r] += n
			}
		}
	}
	return out
}

// limitsFrom reads a container's applied limits from the pods in store:
// its status resources (what the kubelet, or kwok's stage, applied), for
// the container instance the agent tracks.
func limitsFrom(store cache.Store) Limits {
	return func(ref agent.ContainerRef) (int64, int64, bool) {
		obj, ok, err := store.GetByKey(ref.Namespace + "/" + ref.Pod)
		if err != nil || !ok {
			return 0, 0, false
		}
		pod := obj.(*corev1.Pod)
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name != ref.Container || cs.ContainerID != ref.ContainerID || cs.Resources == nil {
				continue
			}
			l := cs.Resources.Limits
			return l.Cpu().MilliValue(), l.Memory().Value(), true
		}
		return 0, 0, false
	}
}
