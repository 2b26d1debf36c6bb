package controller

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func testLead(cs *fake.Clientset, id string) leadConfig {
	return leadConfig{Leases: cs.CoordinationV1(), Namespace: "snug-system", Name: leaseName, Identity: id,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod}
}

func holder(t *testing.T, cs *fake.Clientset) string {
	t.Helper()
	l, err := cs.CoordinationV1().Leases("snug-system").Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestLeadReleasesOnlyAfterWork: on SIGTERM (ctx cancelled) the leader's
// work, which takes a while to wind down (evictions in flight), still
// holds the Lease until it has returned; lead returns only after it, and
// the Lease is released then, so a standby can take over at once. With
// client-go's elector on ctx itself the Lease is released as ctx ends,
// while the work still runs: this test sees that and fails.
func TestLeadReleasesOnlyAfterWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		ctx, cancel := context.WithCancel(context.Background())
		leading := make(chan struct{})
		var heldWhileWinding []string
		done := make(chan error, 1)
		go func() {
			done <- lead(ctx, logr.Discard(), testLead(cs, "a"), func(wctx context.Context) error {
				close(leading)
				<-wctx.Done()
				// Winding down for 5 s: the Lease must stay held.
				for range 5 {
					time.Sleep(time.Second)
					heldWhileWinding = append(heldWhileWinding, holder(t, cs))
				}
				return nil
			})
		}()
		<-leading
		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("lead returned (%v) while its work was winding down", err)
		default:
		}
		if err := <-done; err != nil {
			t.Fatalf("lead on SIGTERM: %v, want nil", err)
		}
		for i, h := range heldWhileWinding {
			if h != "a" {
				t.Errorf("second %d of winding down: the Lease's holder %q, want still a", i+1, h)
			}
		}
		if h := holder(t, cs); h != "" {
			t.Errorf("holder %q after lead returned, want the Lease released", h)
		}
	})
}

// TestLeadStepsDownOnWorkError: work that fails on its own ends the
// leadership (the Lease is released for a standby) and lead returns its
// error.
func TestLeadStepsDownOnWorkError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		boom := errors.New("informers never synced")
		err := lead(context.Background(), logr.Discard(), testLead(cs, "a"), func(context.Context) error { return boom })
		if !errors.Is(err, boom) {
			t.Fatalf("lead: %v, want the work's error", err)
		}
		if h := holder(t, cs); h != "" {
			t.Errorf("holder %q after stepping down, want the Lease released", h)
		}
	})
}

// TestLeadStandbyTakesOver: a standby waits while the leader works and
// leads once the leader has stepped down on SIGTERM; the two never work at
// once.
func TestLeadStandbyTakesOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset()
		working := 0
		var most int
		work := func(name string, started chan<- string) func(context.Context) error {
			return func(wctx context.Context) error {
				working++
				most = max(most, working)
				started <- name
				<-wctx.Done()
				time.Sleep(3 * time.Second) // winding down
				working--
				return nil
			}
		}
		started := make(chan string, 2)
		actx, acancel := context.WithCancel(context.Background())
		bctx, bcancel := context.WithCancel(context.Background())
		defer bcancel()
		aDone, bDone := make(chan error, 1), make(chan error, 1)
		go func() { aDone <- lead(actx, logr.Discard(), testLead(cs, "a"), work("a", started)) }()
		if first := <-started; first != "a" {
			t.Fatalf("%s led first, want a", first)
		}
		go func() { bDone <- lead(bctx, logr.Discard(), testLead(cs, "b"), work("b", started)) }()
		time.Sleep(time.Minute)
		select {
		case n := <-started:
			t.Fatalf("%s led while a held the Lease", n)
		default:
		}
		acancel()
		if err := <-aDone; err != nil {
			t.Fatal(err)
		}
		if next := <-started; next != "b" {
			t.Fatalf("%s led after a stepped down, want b", next)
		}
		bcancel()
		<-bDone
		if most != 1 {
			t.Errorf("%d replicas worked at once, want 1", most)
		}
	})
}
