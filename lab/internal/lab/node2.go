package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/lab/internal/lab/pki"
)

// V2Node configures the lab's second node: Debian 12 in a User-Mode Linux
// guest with systemd, unified cgroup v2, containerd with SystemdCgroup and
// the kubelet's systemd cgroup driver, the way production nodes run.
//
// Network: a namespace of its own (NetNS) holds the guest's tap (TapIP on
// the namespace's side, IP in the guest, a /30) and one end of a veth pair
// whose other end is in the lab's namespace (LinkIP there, LinkPeerIP
// here, a /30); routes both ways, and from this machine, make the guest
// and its pods (PodCIDR) reachable from the API server, the first node's
// pods and the host, and the other way round. The subnets miss the first
// node's (10.213.0.0/30, pods 10.214.0.0/24, services 10.215.0.0/24).
type V2Node struct {
	Name, NetNS                   string
	TapIP, IP, LinkIP, LinkPeerIP string
	PodCIDR                       string
	MemoryMiB                     int
}

// v2Component is the name the guest's process is recorded under (its PID
// file, and its console's log).
const v2Component = "v2-node"

// v2Taint keeps pods off the cgroup-v2 node unless they tolerate it: the
// tests written for the first node read that node's cgroups, and a pod
// that landed on the guest would not be there. snug's agent tolerates
// every taint, so it runs on both nodes.
var v2Taint = corev1.Taint{Key: "snug.dev/lab-node", Value: "cgroup-v2", Effect: corev1.TaintEffectNoSchedule}

// V2Taint is the taint the cgroup-v2 node registers with.
func V2Taint() corev1.Taint { return v2Taint }

// V2Tolerations let a pod onto the cgroup-v2 node.
func V2Tolerations() []corev1.Toleration {
	return []corev1.Toleration{{Key: v2Taint.Key, Operator: corev1.TolerationOpExists, Effect: v2Taint.Effect}}
}

// The guest's tap and the veth pair between the two namespaces.
const (
	v2Tap      = "snugtap0"
	v2LinkLab  = "snug2a" // in the lab's namespace
	v2LinkNode = "snug2b" // in the node's namespace
)

func defaultV2Node() V2Node {
	return V2Node{
		Name: "snug-lab-v2", NetNS: "snuglab-v2",
		TapIP: "10.216.0.1", IP: "10.216.0.2",
		LinkIP: "10.217.0.1", LinkPeerIP: "10.217.0.2",
		PodCIDR: "10.218.0.0/24", MemoryMiB: 2048,
	}
}

func (v V2Node) validate() error {
	var errs []error
	if !netnsRE.MatchString(v.NetNS) {
		errs = append(errs, fmt.Errorf("cgroup-v2 node: network namespace name %q is not valid", v.NetNS))
	}
	pairs := [][2]string{{v.TapIP, v.IP}, {v.LinkIP, v.LinkPeerIP}}
	for _, p := range pairs {
		a, err1 := netip.ParseAddr(p[0])
		b, err2 := netip.ParseAddr(p[1])
		if err1 != nil || err2 != nil {
			errs = append(errs, fmt.Errorf("cgroup-v2 node: bad address in %v", p))
			continue
		}
		if netip.PrefixFrom(a, 30).Masked() != netip.PrefixFrom(b, 30).Masked() {
			errs = append(errs, fmt.Errorf("cgroup-v2 node: %s and %s are not in one /30", p[0], p[1]))
		}
	}
	if _, err := netip.ParsePrefix(v.PodCIDR); err != nil {
		errs = append(errs, fmt.Errorf("cgroup-v2 node: bad pod CIDR %q", v.PodCIDR))
	}
	if v.MemoryMiB < 1024 {
		errs = append(errs, fmt.Errorf("--v2-node-memory must be at least 1024 (MiB), got %d", v.MemoryMiB))
	}
	return errors.Join(errs...)
}

func (o *Options) v2Path(elem ...string) string {
	return o.path(append([]string{"nodes", o.V2.Name}, elem...)...)
}

// v2Share is the host directory the guest mounts at /snug (hostfs).
func (o *Options) v2Share(elem ...string) string {
	return o.v2Path(append([]string{"share"}, elem...)...)
}

// guestShare is where the guest mounts the share.
const guestShare = "/snug"

func v2Runtime(o *Options) nodeRuntime {
	g := func(elem ...string) string { return filepath.Join(append([]string{guestShare}, elem...)...) }
	return nodeRuntime{
		name: o.V2.Name, ip: o.V2.IP, podCIDR: o.V2.PodCIDR, systemd: true,
		containerdRoot: "/var/lib/containerd", containerdState: "/run/containerd",
		containerdSock: "/run/containerd/containerd.sock", containerdOpt: "/opt/containerd",
		cniConfDir: "/etc/cni/net.d", ipamDir: "/var/lib/cni/networks",
		registryHostsDir: "/etc/containerd/certs.d", podLogsDir: "/var/log/pods",
		kubeletCert: g("pki", "kubelet.crt"), kubeletKey: g("pki", "kubelet.key"), caCert: g("pki", "ca.crt"),
		kubeProxyKubeconfig: g("pki", "kube-proxy.kubeconfig"),
		taints:              []corev1.Taint{v2Taint},
	}
}

// v2MirrorInterval is how often the guest copies its pods' cgroup files
// to the share (V2CgroupRoot).
const v2MirrorInterval = 200 * time.Millisecond

// V2CgroupRoot is a copy, at most v2MirrorInterval old plus a write, of
// the cgroup-v2 node's /sys/fs/cgroup: the root's files and every cgroup
// under kubepods.slice, with the files snug's cgroup reader and PSI use
// (loadgen.MirrorFiles). The guest's own cgroup tree cannot be seen from
// this machine; the tests read this one with the same cgroup.Reader.
func (o *Options) V2CgroupRoot() string { return o.v2Share("cgroup") }

// bootScript is what the guest's snug-node.service runs from the share:
// the network, the clock-speed line the kubelet needs in /proc/cpuinfo
// (UML's has none), snug-load's control directory from the host (hostfs,
// at the path the first node uses), containerd with the lab's config, the
// lab's images, then the kubelet and kube-proxy as systemd units, and the
// cgroup mirror, which also writes the guest's heartbeat (V2Stalled). Each
// step's time goes to state/boot.log, what the guest has (cgroup
// filesystem, controllers, PSI) to state/.
func bootScript(o *Options) string {
	return fmt.Sprintf(`#!/bin/sh
# Written by snug-lab for node %[1]s; run by snug-node.service at boot.
set -eu
S=%[2]s
mark() { echo "$(cut -d' ' -f1 /proc/uptime) $1" >> $S/state/boot.log; }
: > $S/state/boot.log
mark share-mounted
# The kernel's text symbols, to name the addresses of a hung kernel's stack
# (V2KernelState); UML has no address randomisation.
grep ' [tT] ' /proc/kallsyms > $S/state/kallsyms || true
hostname %[1]s
ip link set lo up
ip addr add %[3]s/30 dev eth0
ip link set eth0 up
ip route add default via %[4]s
sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
if ! grep -q '^cpu MHz' /proc/cpuinfo; then
  awk '{print} /^processor/ {print "cpu MHz\t\t: 1000.000"}' /proc/cpuinfo > /run/cpuinfo
  mount --bind /run/cpuinfo /proc/cpuinfo
fi
mkdir -p %[5]s
mount -t hostfs -o %[5]s none %[5]s
install -D -m 0644 $S/config/containerd.toml /etc/containerd/config.toml
install -D -m 0644 $S/config/cni.conflist /etc/cni/net.d/10-snug-lab.conflist
install -D -m 0644 $S/config/hosts.toml /etc/containerd/certs.d/%[6]s/hosts.toml
install -m 0755 $S/bin/kubelet $S/bin/kube-proxy /usr/local/bin/
mkdir -p /run/systemd/system/containerd.service.d
printf '[Service]\nStandardOutput=append:%%s\nStandardError=inherit\n' $S/logs/containerd.log > /run/systemd/system/containerd.service.d/snug.conf
systemctl daemon-reload
systemctl start containerd
until [ -S /run/containerd/containerd.sock ]; do sleep 0.1; done
mark containerd
ctr -n k8s.io images import $S/images/lab.tar > $S/logs/images.log 2>&1
mark images
{ stat -fc %%T /sys/fs/cgroup; cat /sys/fs/cgroup/cgroup.controllers; } > $S/state/cgroup
if [ -e /proc/pressure/cpu ]; then echo yes; else echo no; fi > $S/state/psi
systemd-run --unit=kubelet -p Restart=on-failure -p StandardOutput=append:$S/logs/kubelet.log -p StandardError=inherit \
  /usr/local/bin/kubelet --config=$S/config/kubelet.yaml --kubeconfig=$S/pki/kubelet.kubeconfig \
  --root-dir=/var/lib/kubelet --node-ip=%[3]s --hostname-override=%[1]s
systemd-run --unit=kube-proxy -p Restart=on-failure -p StandardOutput=append:$S/logs/kube-proxy.log -p StandardError=inherit \
  /usr/local/bin/kube-proxy --config=$S/config/kube-proxy.yaml
systemd-run --unit=snug-cgroup-mirror -p StandardOutput=append:$S/logs/cgroup-mirror.log -p StandardError=inherit \
  $S/bin/snug-load mirror-cgroups --to $S/cgroup --interval %[7]s --heartbeat $S/state/heartbeat
mark kubelet
`, o.V2.Name, guestShare, o.V2.IP, o.V2.TapIP, o.LoadDir(), o.Registry(), v2MirrorInterval)
}

// writeV2Share lays out the share: the boot script, configs, the node's
// identity, the Kubernetes binaries and the lab's images (hard links where
// they can be, copies otherwise).
func writeV2Share(o *Options, p *pki.Set, ns *pki.NodeSet, loadBin string) error {
	if err := removeAll(o, o.v2Share()); err != nil {
		return err
	}
	r := v2Runtime(o)
	files := map[string]string{
		o.v2Share("boot.sh"):                   bootScript(o),
		o.v2Share("config", "containerd.toml"): containerdConfig(r),
		o.v2Share("config", "cni.conflist"):    cniConfig(r),
		o.v2Share("config", "hosts.toml"):      registryHosts(o),
		o.v2Share("config", "kubelet.yaml"):    kubeletConfig(r),
		o.v2Share("config", "kube-proxy.yaml"): kubeProxyConfig(r),
	}
	if err := writeFiles(files); err != nil {
		return err
	}
	links := map[string]string{
		o.v2Share("pki", "ca.crt"):                p.CACert,
		o.v2Share("pki", "kubelet.crt"):           ns.KubeletCert,
		o.v2Share("pki", "kubelet.key"):           ns.KubeletKey,
		o.v2Share("pki", "kubelet.kubeconfig"):    ns.KubeletKubeconfig,
		o.v2Share("pki", "kube-proxy.kubeconfig"): p.KubeProxyKubeconfig,
		o.v2Share("bin", "kubelet"):               filepath.Join(o.BinDir(), "kubelet"),
		o.v2Share("bin", "kube-proxy"):            filepath.Join(o.BinDir(), "kube-proxy"),
		o.v2Share("images", "lab.tar"):            o.path("images", "lab.tar"),
		o.v2Share("bin", "snug-load"):             loadBin,
	}
	for dst, src := range links {
		if err := linkOrCopy(src, dst); err != nil {
			return err
		}
	}
	for _, d := range []string{"state", "logs", "cgroup"} {
		if err := os.MkdirAll(o.v2Share(d), 0o755); err != nil {
			return err
		}
	}
	return nil
}

func linkOrCopy(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, fi.Mode().Perm())
}

// umlArgv is the guest's command line: the cached root filesystem behind a
// copy-on-write file of this start, the tap, the console on the log,
// systemd as init and the share's host path for snug-node.service.
func umlArgv(o *Options) []string {
	return inNetNSNamed(o.V2.NetNS,
		"env", "TMPDIR=/dev/shm",
		o.KernelPath(),
		"ubd0="+o.v2Path("disk.cow")+","+o.RootfsPath(),
		"root=/dev/ubda", "rw",
		fmt.Sprintf("mem=%dM", o.V2.MemoryMiB),
		"eth0=tuntap,"+v2Tap+",fe:fd:0a:d8:00:02",
		"con=null", "con0=null,fd:1",
		"umid="+o.V2.Name, "uml_dir="+o.v2Path("uml"),
		"init=/lib/systemd/systemd",
		"snug.share="+o.v2Share(),
		"systemd.show_status=false", "printk.time=1",
	)
}

// AddV2Node starts the cgroup-v2 node and joins it to the running lab; it
// returns once the node is Ready. Everything it made is undone on failure.
func AddV2Node(ctx context.Context, o *Options, log io.Writer) (err error) {
	if err := o.V2.validate(); err != nil {
		return err
	}
	if V2Running(o) {
		return fmt.Errorf("the cgroup-v2 node %s already runs ('snug-lab v2-node remove' first)", o.V2.Name)
	}
	if api, ok := readProc(o, "kube-apiserver"); !ok || !api.alive() {
		return errors.New("the lab is not up: the cgroup-v2 node joins a running lab ('snug-lab up' first, or 'snug-lab up --v2-node')")
	}
	if err := EnsureV2Node(ctx, o, log); err != nil {
		return err
	}
	start := time.Now()
	// The running lab's own set, as it is: never regenerated under it.
	p := pki.Paths(o.path("pki"))
	ns, err := pki.EnsureNode(o.path("pki"), o.V2.Name, []net.IP{net.ParseIP(o.V2.IP)}, o.ServerURL(), time.Now())
	if err != nil {
		return err
	}
	loadBin, err := o.loadBinary()
	if err != nil {
		return err
	}
	if err := writeV2Share(o, p, ns, loadBin); err != nil {
		return fmt.Errorf("writing the cgroup-v2 node's share: %w", err)
	}
	defer func() {
		if err != nil {
			fmt.Fprintf(log, "cgroup-v2 node failed to join; removing it (console: %s, guest logs: %s)\n", logFile(o, v2Component), o.v2Share("logs"))
			if rerr := RemoveV2Node(context.Background(), o, io.Discard); rerr != nil {
				err = fmt.Errorf("%w; cleanup: %v", err, rerr)
			}
		}
	}()
	if err := setupV2Network(ctx, o); err != nil {
		return err
	}
	fmt.Fprintf(log, "starting the cgroup-v2 node %s (User-Mode Linux, %d MiB)\n", o.V2.Name, o.V2.MemoryMiB)
	if err := bootV2Guest(ctx, o, log); err != nil {
		return err
	}
	client, err := o.Client()
	if err != nil {
		return err
	}
	err = o.waitFor(ctx, "node "+o.V2.Name+" Ready", o.ReadyTimeout, func(ctx context.Context) bool {
		if g, ok := readProc(o, v2Component); !ok || !g.alive() {
			return false
		}
		return nodeReady(ctx, client, o.V2.Name)
	})
	if g, ok := readProc(o, v2Component); err != nil && ok && !g.alive() {
		return fmt.Errorf("the cgroup-v2 node's kernel exited; last lines of %s:\n%s", logFile(o, v2Component), Tail(logFile(o, v2Component), 15))
	}
	if err != nil {
		return fmt.Errorf("%w; last lines of the guest's kubelet log:\n%s", err, Tail(o.v2Share("logs", "kubelet.log"), 10))
	}
	fmt.Fprintf(log, "node %s (%s, %s) Ready in %.1fs\n", o.V2.Name, o.V2.IP, V2CgroupMode(o), time.Since(start).Seconds())
	return nil
}

// A guest whose boot script has not begun v2BootStall after its start is
// killed and booted again, v2BootAttempts times in all. It normally
// begins after about 6 s; about one boot in five here stopped for good in
// the kernel's early start (the console's last line was the tap's
// backend), which a new boot does not repeat.
const (
	v2BootStall    = 60 * time.Second
	v2BootAttempts = 3
)

// bootV2Guest starts the guest and waits until its boot script runs.
func bootV2Guest(ctx context.Context, o *Options, log io.Writer) error {
	marks := o.v2Share("state", "boot.log")
	for attempt := 1; ; attempt++ {
		for _, p := range []string{o.v2Path("disk.cow"), o.v2Path("uml"), marks, o.v2Heartbeat()} {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
		start := time.Now()
		g, err := startProc(o, v2Component, umlArgv(o))
		if err != nil {
			return err
		}
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, v2BootStall, true, func(context.Context) (bool, error) {
			if !g.alive() {
				return false, fmt.Errorf("the cgroup-v2 node's kernel exited; last lines of %s:\n%s", logFile(o, v2Component), Tail(logFile(o, v2Component), 15))
			}
			_, err := os.Stat(marks)
			return err == nil, nil
		})
		if err == nil {
			fmt.Fprintf(log, "  the guest's boot script began %.1fs after its start\n", time.Since(start).Seconds())
			return nil
		}
		if !wait.Interrupted(err) {
			return err
		}
		last := strings.TrimSpace(Tail(logFile(o, v2Component), 1))
		if kerr := killSession(g); kerr != nil {
			return kerr
		}
		if attempt == v2BootAttempts {
			return fmt.Errorf("the cgroup-v2 node's boot stalled %d times (no boot script %s after the start; console: %s)", attempt, v2BootStall, logFile(o, v2Component))
		}
		fmt.Fprintf(log, "  the guest's boot stalled (no boot script %s after its start; the console's last line: %q); booting it again (%d of %d)\n",
			v2BootStall, last, attempt+1, v2BootAttempts)
	}
}

// RemoveV2Node takes the cgroup-v2 node out of the lab: its Node and pods
// from the API server (when it answers), the guest's processes, and the
// network made for it. A node that is not there is not an error; one whose
// guest crashed is cleaned up the same way.
func RemoveV2Node(ctx context.Context, o *Options, log io.Writer) error {
	var errs []error
	if c, err := o.Client(); err == nil {
		if api, ok := readProc(o, "kube-apiserver"); ok && api.alive() {
			errs = append(errs, deleteNode(ctx, c, o.V2.Name))
		}
	}
	if g, ok := readProc(o, v2Component); ok {
		if g.alive() {
			fmt.Fprintf(log, "stopping the cgroup-v2 node %s (pid %d)\n", o.V2.Name, g.PID)
		}
		errs = append(errs, killSession(g))
		_ = os.Remove(pidFile(o, v2Component))
	}
	errs = append(errs, teardownV2Network(ctx, o))
	return errors.Join(errs...)
}

// deleteNode deletes the Node, then every pod bound to it at once (its
// kubelet is about to go; nothing else would end them).
func deleteNode(ctx context.Context, c kubernetes.Interface, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	return deleteNodePods(ctx, c, name)
}

// deleteNodePods deletes every pod bound to the node at once, with no
// grace period: its kubelet is gone, so nothing else would end them.
func deleteNodePods(ctx context.Context, c kubernetes.Interface, name string) error {
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", name).String()})
	if err != nil {
		return fmt.Errorf("listing the pods of node %s: %w", name, err)
	}
	zero := int64(0)
	var errs []error
	for _, pod := range pods.Items {
		err := c.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killSession ends the guest: UML runs each guest address space as a host
// process of the kernel's session, so every process of that session goes.
func killSession(g *proc) error {
	if !g.alive() {
		return nil
	}
	for _, pid := range sessionMembers(g.PID) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if len(sessionMembers(g.PID)) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the cgroup-v2 node's processes (session %d) did not exit after SIGKILL", g.PID)
}

// sessionMembers lists the live processes whose session is sid.
func sessionMembers(sid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := procStat(pid)
		if err != nil || len(f) < 4 || f[0] == "Z" {
			continue
		}
		if s, _ := strconv.Atoi(f[3]); s == sid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// V2CgroupMode is what the guest found at /sys/fs/cgroup, e.g.
// "cgroup2fs, controllers cpu io memory pids, PSI".
func V2CgroupMode(o *Options) string {
	data, err := os.ReadFile(o.v2Share("state", "cgroup"))
	if err != nil {
		return "cgroup mode unknown"
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	s := lines[0]
	if len(lines) > 1 {
		s += ", controllers " + lines[1]
	}
	if psi, _ := os.ReadFile(o.v2Share("state", "psi")); strings.TrimSpace(string(psi)) == "yes" {
		s += ", PSI"
	} else {
		s += ", no PSI"
	}
	return s
}

// V2Running reports whether the cgroup-v2 node's guest runs.
func V2Running(o *Options) bool {
	g, ok := readProc(o, v2Component)
	return ok && g.alive()
}

// v2StatusStall is how long a silent heartbeat makes Status call the
// guest hung (it beats once a second).
const v2StatusStall = 20 * time.Second

// v2Health is the cgroup-v2 node's line in Status: the guest's PID, its
// memory and CPU on this machine, the node's readiness and what the guest
// found at /sys/fs/cgroup. ok is false when no such node was started.
func v2Health(ctx context.Context, o *Options) (Health, bool) {
	g, ok := readProc(o, v2Component)
	if !ok {
		return Health{}, false
	}
	h := Health{Name: v2Component, PID: g.PID, Running: g.alive()}
	if !h.Running {
		h.Detail = "not running (crashed? 'snug-lab down' cleans up)"
		return h, true
	}
	if stall, ok := V2Stalled(o, time.Time{}, v2StatusStall); ok {
		h.Detail = "hung: " + stall.String() + " ('snug-lab v2-node reboot' starts it afresh)"
		return h, true
	}
	cost := MeasureV2Cost(o, time.Second)
	h.RSSBytes = cost.PSSBytes
	ready := false
	if c, err := o.Client(); err == nil {
		ready = nodeReady(ctx, c, o.V2.Name)
	}
	h.Healthy = ready
	state := "NotReady"
	if ready {
		state = "Ready"
	}
	h.Detail = fmt.Sprintf("node %s %s %s; %s; %.1f%% of a core", o.V2.Name, o.V2.IP, state, V2CgroupMode(o), cost.CPUPercent)
	return h, true
}

// V2Cost is what the guest costs this machine.
type V2Cost struct {
	// Processes is how many host processes the guest runs as (UML: one
	// per guest address space, plus the kernel's).
	Processes int
	// PSSBytes is their proportional set size, summed (their memory is
	// mostly one shared mapping, which RSS would count once per process).
	PSSBytes uint64
	// CPUPercent is their CPU time over the window, in % of one core.
	CPUPercent float64
}

// MeasureV2Cost measures the guest's processes over window.
func MeasureV2Cost(o *Options, window time.Duration) V2Cost {
	g, ok := readProc(o, v2Component)
	if !ok || !g.alive() {
		return V2Cost{}
	}
	before, t0 := sessionCPUTicks(g.PID), time.Now()
	time.Sleep(window)
	after, t1 := sessionCPUTicks(g.PID), time.Now()
	var c V2Cost
	members := sessionMembers(g.PID)
	c.Processes = len(members)
	for _, pid := range members {
		c.PSSBytes += pssBytes(pid)
	}
	const ticksPerSecond = 100 // USER_HZ
	c.CPUPercent = 100 * float64(after-before) / ticksPerSecond / t1.Sub(t0).Seconds()
	return c
}

// sessionCPUTicks sums utime and stime of the session's processes.
func sessionCPUTicks(sid int) uint64 {
	var total uint64
	for _, pid := range sessionMembers(sid) {
		f, err := procStat(pid)
		if err != nil || len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseUint(f[11], 10, 64)
		s, _ := strconv.ParseUint(f[12], 10, 64)
		total += u + s
	}
	return total
}

// pssBytes is Pss from /proc/PID/smaps_rollup, 0 when it cannot be read.
func pssBytes(pid int) uint64 { return procKB(pid, "smaps_rollup", "Pss:") }
