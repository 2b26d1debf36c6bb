package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leadConfig is one replica's part in the leader election.
type leadConfig struct {
	// Leases is where the Lease lives; Namespace and Name name it.
	Leases          coordinationv1.LeasesGetter
	Namespace, Name string
	// Identity is this replica's holder identity.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// lead runs work while this replica holds the Lease, and returns once it
// no longer does and work has returned: with ctx done (nil), with the
// Lease lost (an error), or with work's own error (the Lease is then
// released, so a standby takes over).
//
// client-go's LeaderElector starts OnStartedLeading on a goroutine it does
// not join, and with ReleaseOnCancel it releases the Lease as soon as its
// context is cancelled, while that goroutine may still be evicting pods:
// a standby could lead beside it. So the elector runs on a context of its
// own, cancelled only after work has returned, and lead waits for work
// before it returns.
func lead(ctx context.Context, log logr.Logger, c leadConfig, work func(context.Context) error) error {
	var (
		mu       sync.Mutex
		stopping bool
		working  sync.WaitGroup
		// workErr is written before working.Done and read after
		// working.Wait.
		workErr error
	)
	// begin counts a run of work unless lead is stopping; stop lets no
	// more begin and waits for the one running.
	begin := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if stopping {
			return false
		}
		working.Add(1)
		return true
	}
	stop := func() {
		mu.Lock()
		stopping = true
		mu.Unlock()
		working.Wait()
	}
	leCtx, leCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer leCancel()
	// On ctx's end (SIGTERM) work ends first (its context is ctx's too),
	// then the elector, which releases the Lease.
	unhook := context.AfterFunc(ctx, func() {
		stop()
		leCancel()
	})
	defer unhook()
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace},
			Client:     c.Leases,
			LockConfig: resourcelock.ResourceLockConfig{Identity: c.Identity},
		},
		LeaseDuration:   c.LeaseDuration,
		RenewDeadline:   c.RenewDeadline,
		RetryPeriod:     c.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            c.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				if !begin() {
					return
				}
				defer working.Done()
				log.Info("leading", "identity", c.Identity)
				wctx, cancel := context.WithCancel(lctx)
				defer cancel()
				unhookWork := context.AfterFunc(ctx, cancel)
				defer unhookWork()
				workErr = work(wctx)
				if ctx.Err() == nil {
					// Work ended on its own (an error): step down.
					leCancel()
				}
			},
			OnStoppedLeading: func() { log.Info("stopped leading", "identity", c.Identity) },
			OnNewLeader: func(leader string) {
				if leader != c.Identity {
					log.Info("another controller leads", "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	log.Info("waiting for leadership", "lease", c.Namespace+"/"+c.Name, "identity", c.Identity)
	le.Run(leCtx)
	// Lost the Lease (or stepped down): work's context is done; wait for
	// it before returning, as the process exits after.
	stop()
	switch {
	case workErr != nil:
		return workErr
	case ctx.Err() != nil:
		return nil
	}
	return errors.New("lost leadership of lease " + c.Name)
}
