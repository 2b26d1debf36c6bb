package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
)

// setupV2Network makes the cgroup-v2 node's namespace, its tap, the veth
// pair to the lab's namespace and the routes (see V2Node). It fails,
// naming the cause, when the namespace exists already.
func setupV2Network(ctx context.Context, o *Options) error {
	v := o.V2
	if _, err := os.Stat(filepath.Join("/run/netns", v.NetNS)); err == nil {
		return fmt.Errorf("network namespace %s already exists; run 'snug-lab down' first", v.NetNS)
	}
	p30 := func(a string) string { return a + "/30" }
	steps := [][]string{
		{"netns", "add", v.NetNS},
		{"-n", v.NetNS, "link", "set", "lo", "up"},
		{"-n", o.NetNS, "link", "add", v2LinkLab, "type", "veth", "peer", "name", v2LinkNode, "netns", v.NetNS},
		{"-n", o.NetNS, "addr", "add", p30(v.LinkIP), "dev", v2LinkLab},
		{"-n", o.NetNS, "link", "set", v2LinkLab, "up"},
		{"-n", v.NetNS, "addr", "add", p30(v.LinkPeerIP), "dev", v2LinkNode},
		{"-n", v.NetNS, "link", "set", v2LinkNode, "up"},
		{"-n", v.NetNS, "tuntap", "add", "dev", v2Tap, "mode", "tap"},
		{"-n", v.NetNS, "addr", "add", p30(v.TapIP), "dev", v2Tap},
		{"-n", v.NetNS, "link", "set", v2Tap, "up"},
		{"-n", v.NetNS, "route", "add", "default", "via", v.LinkIP},
		{"-n", v.NetNS, "route", "add", v.PodCIDR, "via", v.IP},
		{"-n", o.NetNS, "route", "add", subnet30(v.TapIP), "via", v.LinkPeerIP},
		{"-n", o.NetNS, "route", "add", v.PodCIDR, "via", v.LinkPeerIP},
	}
	// From this machine's namespace, through the lab's.
	for _, dst := range v2HostRoutes(o) {
		steps = append(steps, []string{"route", "add", dst, "via", o.NodeIP})
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			return fmt.Errorf("setting up the cgroup-v2 node's network: %w", err)
		}
	}
	return enableForwarding(ctx, v.NetNS)
}

func v2HostRoutes(o *Options) []string {
	return []string{subnet30(o.V2.TapIP), subnet30(o.V2.LinkIP), o.V2.PodCIDR}
}

// subnet30 is the /30 that holds addr, e.g. 10.216.0.0/30 for 10.216.0.1.
func subnet30(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr + "/30"
	}
	return netip.PrefixFrom(a, 30).Masked().String()
}

// teardownV2Network removes what setupV2Network made; parts already gone
// are not an error. Deleting the namespace takes the tap and the veth pair
// (both ends) with it; the lab namespace's routes go with its end.
func teardownV2Network(ctx context.Context, o *Options) error {
	var errs []error
	for _, dst := range v2HostRoutes(o) {
		if out, err := exec.CommandContext(ctx, "ip", "route", "show", dst).Output(); err == nil && len(out) > 0 {
			if err := ip(ctx, "route", "del", dst); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join("/run/netns", o.V2.NetNS)); err == nil {
		if err := ip(ctx, "netns", "del", o.V2.NetNS); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
