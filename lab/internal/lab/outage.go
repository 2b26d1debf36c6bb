package lab

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/snug-dev/snug/lab/internal/lab/pki"
)

// APIServerOutage stops the lab's kube-apiserver (SIGTERM, as a control
// plane upgrade does), keeps it down for down, starts it again with the
// same flags and waits until it answers /readyz. It returns when the
// server stopped and when it was ready again. Chaos tests use it: what
// snug's pods do while their API server is away.
//
// The outage counts from the SIGTERM: the server stops listening at once
// (its log says "Stopped listening" in the same millisecond), whatever its
// process then takes to exit. On the lab that took the whole 30 s grace
// of a lab stop, and an outage counted from the exit was 20 s plus those
// 30 s for every client. So the process gets down to exit, then a SIGKILL,
// and is started again once down has passed since the SIGTERM.
func APIServerOutage(ctx context.Context, o *Options, down time.Duration, log io.Writer) (stopped, ready time.Time, err error) {
	const name = "kube-apiserver"
	p, ok := readProc(o, name)
	if !ok || !p.alive() {
		return stopped, ready, fmt.Errorf("the lab's %s is not running", name)
	}
	set, err := pki.Ensure(o.path("pki"), pki.Options{
		NodeName: o.NodeName, NodeIPs: o.nodeIPs(), ServiceCIDR: o.ServiceCIDR,
		ServerURL: o.ServerURL(), Now: time.Now(),
	})
	if err != nil {
		return stopped, ready, fmt.Errorf("reading the lab's certificates: %w", err)
	}
	var argv []string
	for _, c := range components(o, set) {
		if c.name == name {
			argv = c.argv
		}
	}
	client, err := o.Client()
	if err != nil {
		return stopped, ready, err
	}
	stopped = time.Now()
	if err := p.stop(down); err != nil {
		return stopped, ready, fmt.Errorf("stopping %s: %w", name, err)
	}
	fmt.Fprintf(log, "%s stopped listening (SIGTERM); its process ended %.1fs later; starting it again %s after the SIGTERM\n",
		name, time.Since(stopped).Seconds(), down)
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(stopped.Add(down))): // the outage itself, not a wait for a condition
	}
	// Started again even when ctx ended: the lab must not stay without
	// its API server.
	if _, err := startProc(o, name, inNetNS(o, argv...)); err != nil {
		return stopped, ready, fmt.Errorf("starting %s again: %w", name, err)
	}
	err = o.waitFor(context.WithoutCancel(ctx), name, 90*time.Second, func(ctx context.Context) bool {
		return client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() == nil
	})
	if err != nil {
		return stopped, ready, err
	}
	ready = time.Now()
	fmt.Fprintf(log, "%s ready again %.1fs after the SIGTERM\n", name, ready.Sub(stopped).Seconds())
	return stopped, ready, nil
}
