package cgroup

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// NotFoundError lists every directory Find or FindPod looked at. It matches
// fs.ErrNotExist: the container may not have started yet, or may have exited.
type NotFoundError struct {
	// What names the thing looked for, e.g. `container "containerd://abc"`.
	What string
	// Tried holds the absolute directories probed, in order.
	Tried []string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("finding cgroup of %s: none of %s exists", e.What, strings.Join(e.Tried, ", "))
}

func (e *NotFoundError) Unwrap() error { return fs.ErrNotExist }

type qosClass uint8

const (
	qosGuaranteed qosClass = iota + 1
	qosBurstable
	qosBestEffort
)

// parseQOS accepts the corev1.PodQOSClass values ("Guaranteed", "Burstable",
// "BestEffort") in any case. The package does not import k8s.io/api.
func parseQOS(s string) (qosClass, error) {
	switch strings.ToLower(s) {
	case "guaranteed":
		return qosGuaranteed, nil
	case "burstable":
		return qosBurstable, nil
	case "besteffort":
		return qosBestEffort, nil
	}
	return 0, fmt.Errorf("finding cgroup: unknown QoS class %q (want Guaranteed, Burstable or BestEffort)", s)
}

// dir is the kubelet's name for the QoS level: kubepods/<dir> (cgroupfs),
// kubepods-<dir>.slice (systemd).
func (q qosClass) dir() string {
	switch q {
	case qosBurstable:
		return "burstable"
	case qosBestEffort:
		return "besteffort"
	}
	return ""
}

// Kubelet cgroup drivers.
type driver uint8

const (
	cgroupfs driver = iota
	systemd
)

var drivers = [...]driver{cgroupfs, systemd}

// podRel is the pod's cgroup relative to a hierarchy root, as the kubelet
// names it with the default cgroupRoot and cgroupsPerQOS=true.
func podRel(d driver, uid string, q qosClass) string {
	if d == systemd {
		// systemd unit names use '-' for nesting, so the kubelet
		// escapes the UID's dashes.
		u := strings.ReplaceAll(uid, "-", "_")
		if q == qosGuaranteed {
			return "kubepods.slice/kubepods-pod" + u + ".slice"
		}
		return "kubepods.slice/kubepods-" + q.dir() + ".slice/kubepods-" + q.dir() + "-pod" + u + ".slice"
	}
	if q == qosGuaranteed {
		return "kubepods/pod" + uid
	}
	return "kubepods/" + q.dir() + "/pod" + uid
}

// containerLeaves is the container's directory name inside its pod cgroup,
// as each runtime names it under each driver. An unknown runtime gets every
// known form.
func containerLeaves(d driver, runtime, id string) []string {
	if d == systemd {
		switch runtime {
		case "containerd":
			return []string{"cri-containerd-" + id + ".scope"}
		case "cri-o":
			return []string{"crio-" + id + ".scope"}
		case "docker":
			return []string{"docker-" + id + ".scope"}
		}
		return []string{"cri-containerd-" + id + ".scope", "crio-" + id + ".scope", "docker-" + id + ".scope"}
	}
	switch runtime {
	case "containerd", "docker":
		return []string{id}
	case "cri-o":
		return []string{"crio-" + id}
	}
	return []string{id, "crio-" + id}
}

// splitContainerID splits a pod status containerID such as
// "containerd://0123abc" into runtime and ID. An ID without a scheme has an
// empty runtime.
func splitContainerID(s string) (runtime, id string) {
	if rt, id, ok := strings.Cut(s, "://"); ok {
		return rt, id
	}
	return "", s
}

// validName guards the path building below against traversal. UIDs,
// container IDs and the names built from them use only these characters.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// v1 controller mount names, in the order to try. Debian and others co-mount
// cpu and cpuacct at "cpu,cpuacct" with "cpu" and "cpuacct" symlinks. Some
// hosts mount them separately (as on the lab's VM). The order the kernel
// lists co-mounted controllers in depends on the tool that mounted them.
var (
	cpuMounts     = [...]string{"cpu", "cpu,cpuacct", "cpuacct,cpu"}
	cpuacctMounts = [...]string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"}
)

// Find locates a container's cgroup from the pod UID, the pod's QoS class
// ("Guaranteed", "Burstable" or "BestEffort", any case) and the container ID
// from the pod status (with its runtime scheme, e.g. "containerd://<id>" or
// "cri-o://<id>"; without a scheme every runtime's naming is tried). It
// tries the cgroupfs and systemd driver layouts and returns the first that
// exists. If none does, the error is a *NotFoundError naming every directory
// it tried.
func (r Reader) Find(podUID, qos, containerID string) (Path, error) {
	q, err := parseQOS(qos)
	if err != nil {
		return Path{}, err
	}
	runtime, id := splitContainerID(containerID)
	if !validName(podUID) || !validName(id) {
		return Path{}, fmt.Errorf("finding cgroup: invalid pod UID %q or container ID %q", podUID, containerID)
	}
	var rels []string
	for _, d := range drivers {
		pod := podRel(d, podUID, q)
		for _, leaf := range containerLeaves(d, runtime, id) {
			rels = append(rels, pod+"/"+leaf)
		}
	}
	return r.find(fmt.Sprintf("container %q of pod %s", containerID, podUID), rels)
}

// FindPod locates a pod's cgroup, the parent of its containers' cgroups,
// which carries the pod-level limits. It works like Find.
func (r Reader) FindPod(podUID, qos string) (Path, error) {
	q, err := parseQOS(qos)
	if err != nil {
		return Path{}, err
	}
	if !validName(podUID) {
		return Path{}, fmt.Errorf("finding cgroup: invalid pod UID %q", podUID)
	}
	rels := make([]string, 0, len(drivers))
	for _, d := range drivers {
		rels = append(rels, podRel(d, podUID, q))
	}
	return r.find("pod "+podUID, rels)
}

// find returns the Path of the first candidate, given relative to a
// hierarchy root, that exists.
func (r Reader) find(what string, rels []string) (Path, error) {
	layout, err := r.Layout()
	if err != nil {
		return Path{}, err
	}
	nf := &NotFoundError{What: what}
	if layout == LayoutUnified {
		for _, rel := range rels {
			dir := filepath.Join(r.Root, rel)
			if isDir(dir) {
				return Path{Version: V2, Unified: dir}, nil
			}
			nf.Tried = append(nf.Tried, dir)
		}
		return Path{}, nf
	}
	// v1 and hybrid: the memory hierarchy decides which layout matches,
	// then every controller must hold the same relative path.
	for _, rel := range rels {
		mem := filepath.Join(r.Root, "memory", rel)
		if !isDir(mem) {
			nf.Tried = append(nf.Tried, mem)
			continue
		}
		p := Path{Version: V1, Memory: mem}
		if p.CPU = firstDir(r.Root, cpuMounts[:], rel, &nf.Tried); p.CPU == "" {
			return Path{}, nf
		}
		if p.CPUAcct = firstDir(r.Root, cpuacctMounts[:], rel, &nf.Tried); p.CPUAcct == "" {
			return Path{}, nf
		}
		if layout == LayoutHybrid {
			if u := filepath.Join(r.Root, "unified", rel); isDir(u) {
				p.Unified = u
			}
		}
		return p, nil
	}
	return Path{}, nf
}

// firstDir returns root/<mount>/rel for the first mount where it exists,
// recording misses in tried.
func firstDir(root string, mounts []string, rel string, tried *[]string) string {
	for _, m := range mounts {
		dir := filepath.Join(root, m, rel)
		if isDir(dir) {
			return dir
		}
		*tried = append(*tried, dir)
	}
	return ""
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
