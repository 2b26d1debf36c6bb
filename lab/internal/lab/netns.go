package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The veth pair's two ends: hostLink stays in the root namespace, nodeLink
// is moved into the lab's namespace and carries the node's address.
const (
	hostLink = "snug0"
	nodeLink = "snug1"
)

func netnsPath(o *Options) string { return filepath.Join("/run/netns", o.NetNS) }

// ip runs the ip command and returns a readable error.
func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNetNS returns the argv that runs argv inside the lab's namespace.
// nsenter, not "ip netns exec": the latter remounts /sys, which hides the
// cgroup mounts from the kubelet.
func inNetNS(o *Options, argv ...string) []string { return inNetNSNamed(o.NetNS, argv...) }

// inNetNSNamed is inNetNS for the namespace ns (the cgroup-v2 node has
// one of its own).
func inNetNSNamed(ns string, argv ...string) []string {
	return append([]string{"nsenter", "--net=" + filepath.Join("/run/netns", ns), "--"}, argv...)
}

// enableForwarding turns IPv4 forwarding on in the namespace ns only (the
// setting is per namespace).
func enableForwarding(ctx context.Context, ns string) error {
	argv := inNetNSNamed(ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward")
	if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("enabling forwarding in %s: %v: %s", ns, err, out)
	}
	return nil
}

// InNetNS returns the argv that runs argv inside the lab's network
// namespace (nsenter execs it: the PID is argv's), for add-ons that must
// listen on the node's address and dial pods and the API server only
// there, such as the lab's Prometheus (StartProcess records it).
func (o *Options) InNetNS(argv ...string) []string { return inNetNS(o, argv...) }

// setupNetwork creates the namespace and veth pair. It fails, naming the
// cause, when a link or namespace of that name exists that is not the lab's.
func setupNetwork(ctx context.Context, o *Options) error {
	if _, err := os.Stat(netnsPath(o)); err == nil {
		return fmt.Errorf("network namespace %s already exists; run 'snug-lab down' first", o.NetNS)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", hostLink)); err == nil {
		return fmt.Errorf("network link %s already exists; run 'snug-lab down' first", hostLink)
	}
	prefix := func(addr string) string { return addr + "/30" }
	hostAddr, _ := netip.ParseAddr(o.HostIP)
	nodeAddr, _ := netip.ParseAddr(o.NodeIP)
	if netip.PrefixFrom(hostAddr, 30).Masked() != netip.PrefixFrom(nodeAddr, 30).Masked() {
		return fmt.Errorf("host address %s and node address %s are not in one /30", o.HostIP, o.NodeIP)
	}
	steps := [][]string{
		{"netns", "add", o.NetNS},
		{"link", "add", hostLink, "type", "veth", "peer", "name", nodeLink},
		{"link", "set", nodeLink, "netns", o.NetNS},
		{"addr", "add", prefix(o.HostIP), "dev", hostLink},
		{"link", "set", hostLink, "up"},
		{"-n", o.NetNS, "addr", "add", prefix(o.NodeIP), "dev", nodeLink},
		{"-n", o.NetNS, "link", "set", nodeLink, "up"},
		{"-n", o.NetNS, "link", "set", "lo", "up"},
		{"-n", o.NetNS, "route", "add", "default", "via", o.HostIP},
		// Pod addresses are reachable from the host through the node's end.
		{"route", "add", o.PodCIDR, "via", o.NodeIP},
	}
	for _, s := range steps {
		if err := ip(ctx, s...); err != nil {
			return fmt.Errorf("setting up the lab network: %w", err)
		}
	}
	return enableForwarding(ctx, o.NetNS)
}

// teardownNetwork removes what setupNetwork made; parts already gone are
// not an error.
func teardownNetwork(ctx context.Context, o *Options) error {
	var errs []error
	if _, err := os.Stat(filepath.Join("/sys/class/net", hostLink)); err == nil {
		if err := ip(ctx, "link", "del", hostLink); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := os.Stat(netnsPath(o)); err == nil {
		if err := ip(ctx, "netns", "del", o.NetNS); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
