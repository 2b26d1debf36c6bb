package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Down stops everything the lab started and removes the namespace, links
// and mounts it made. It also cleans up after a lab that crashed; a lab that
// is not up is not an error. Files stay (logs for a post-mortem); Purge
// removes them.
func Down(ctx context.Context, o *Options, log io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	var errs []error
	running := runningComponents(o)
	if len(running) > 0 {
		fmt.Fprintf(log, "stopping the lab (%s)\n", strings.Join(running, ", "))
	}
	// Add-ons (metrics-server, upstream VPA) first: they act on the cluster.
	for _, n := range addOns(o) {
		errs = append(errs, StopProcess(o, n, 10*time.Second))
	}
	// The cgroup-v2 node while the API server answers (its Node and pods go).
	errs = append(errs, RemoveV2Node(ctx, o, log))
	// Controllers first, so nothing recreates the pods deleted next.
	for _, n := range []string{"kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		if p, ok := readProc(o, n); ok {
			errs = append(errs, p.stop(10*time.Second))
		}
	}
	// With the API server and kubelet alive, deleting every pod makes the
	// kubelet tear sandboxes down properly (their network namespaces too).
	drainPods(ctx, o, log)
	for _, n := range []string{"kubelet", "containerd"} {
		if p, ok := readProc(o, n); ok {
			errs = append(errs, p.stop(15*time.Second))
		}
	}
	// Whatever is left of the runtime: container processes (in the kubelet's
	// pod cgroups) and the shims of the lab's containerd.
	killPIDs(podProcesses())
	killPIDs(processesWith(containerdSock(o)))
	for _, n := range []string{"registry", "kube-apiserver", "etcd"} {
		if p, ok := readProc(o, n); ok {
			errs = append(errs, p.stop(15*time.Second))
		}
	}
	for _, n := range componentNames {
		_ = os.Remove(pidFile(o, n))
	}
	errs = append(errs, unmountUnder(o.Dir))
	errs = append(errs, removePodNetNS(o))
	errs = append(errs, teardownNetwork(ctx, o))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lab down: %w", err)
	}
	return nil
}

// Purge removes the lab directory after Down.
func Purge(o *Options) error {
	if err := unmountUnder(o.Dir); err != nil {
		return err
	}
	return os.RemoveAll(o.Dir)
}

// drainPods deletes all pods and waits (bounded) until no pod process runs.
func drainPods(ctx context.Context, o *Options, log io.Writer) {
	if len(podProcesses()) == 0 {
		return
	}
	api, ok1 := readProc(o, "kube-apiserver")
	kubelet, ok2 := readProc(o, "kubelet")
	if !ok1 || !ok2 || !api.alive() || !kubelet.alive() {
		return
	}
	c, err := o.Client()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	nss, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	zero := int64(0)
	for _, ns := range nss.Items {
		_ = c.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	}
	for ctx.Err() == nil && len(podProcesses()) > 0 {
		time.Sleep(200 * time.Millisecond)
	}
	if n := len(podProcesses()); n > 0 {
		fmt.Fprintf(log, "%d pod processes still running after deleting all pods; killing them\n", n)
	}
}

// podCgroupRoots are where the kubelet (cgroupfs driver) puts pods, on
// cgroup v1 (one hierarchy is enough to find the processes) and v2.
var podCgroupRoots = []string{"/sys/fs/cgroup/pids/kubepods", "/sys/fs/cgroup/memory/kubepods", "/sys/fs/cgroup/kubepods"}

// podProcesses lists the PIDs in the kubelet's pod cgroups.
func podProcesses() []int {
	for _, root := range podCgroupRoots {
		if _, err := os.Stat(root); err != nil {
			continue
		}
		var pids []int
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
			return nil
		})
		return pids
	}
	return nil
}

func killPIDs(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// unmountUnder detaches every mount at or below dir, deepest first.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	var errs []error
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// recordNetNS notes the pod network namespaces that exist before the lab
// starts, so that down removes only the ones the lab's containerd made.
func recordNetNS(o *Options) error {
	names, _ := filepath.Glob("/run/netns/cni-*")
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(o.path("netns-before"), []byte(strings.Join(names, "\n")), 0o644)
}

func removePodNetNS(o *Options) error {
	data, err := os.ReadFile(o.path("netns-before"))
	if err != nil {
		return nil // never recorded: the lab never started anything
	}
	before := map[string]bool{}
	for _, n := range strings.Fields(string(data)) {
		before[n] = true
	}
	names, _ := filepath.Glob("/run/netns/cni-*")
	var errs []error
	for _, n := range names {
		if before[n] {
			continue
		}
		_ = syscall.Unmount(n, syscall.MNT_DETACH)
		if err := os.Remove(n); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeAll deletes a lab subdirectory, unmounting anything below it first.
func removeAll(o *Options, dir string) error {
	if err := unmountUnder(dir); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("cleaning %s: %w", dir, err)
	}
	return nil
}
