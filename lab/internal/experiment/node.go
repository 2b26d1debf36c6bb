package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/internal/cgroup"
)

// CgroupReading is one cgroup's limits and usage as this machine's cgroup
// files held them.
type CgroupReading struct {
	// Dir is the directory read (the memory controller's on v1).
	Dir string
	// Version is "v1" or "v2".
	Version string
	// CPUQuotaMicros is v1 cpu.cfs_quota_us or the quota of v2 cpu.max;
	// -1 when unlimited. CPUPeriodMicros is the CFS period.
	CPUQuotaMicros, CPUPeriodMicros int64
	// MemoryLimitBytes is v1 memory.limit_in_bytes or v2 memory.max; -1
	// when unlimited.
	MemoryLimitBytes int64
	// MemoryUsageBytes is v1 memory.usage_in_bytes or v2 memory.current.
	MemoryUsageBytes uint64
	// OOMKills counts processes the OOM killer took from this cgroup.
	OOMKills uint64
}

// CPUQuotaFile names the file CPUQuotaMicros comes from.
func (c CgroupReading) CPUQuotaFile() string {
	if c.Version == "v2" {
		return "cpu.max"
	}
	return "cpu.cfs_quota_us"
}

// MemoryLimitFile names the file MemoryLimitBytes comes from.
func (c CgroupReading) MemoryLimitFile() string {
	if c.Version == "v2" {
		return "memory.max"
	}
	return "memory.limit_in_bytes"
}

// Cgroups is the container's and its pod's cgroup at one moment.
type Cgroups struct {
	At                  time.Time
	Container, PodLevel CgroupReading
}

// cgroupAppearWithin is how long readCgroups waits for a container's
// cgroup to show under CgroupRoot.
const cgroupAppearWithin = 3 * time.Second

// readCgroups reads the cgroups of the pod's container. It returns nil,
// nil when the Env has no CgroupRoot (the node is not this machine).
func (s *session) readCgroups(st PodState) (*Cgroups, error) {
	if s.env.CgroupRoot == "" {
		return nil, nil
	}
	r := cgroup.Reader{Root: s.env.CgroupRoot}
	// A CgroupRoot that is a copy of another machine's tree (the lab's
	// cgroup-v2 node) shows a new container's cgroup a moment late.
	var cp cgroup.Path
	var err error
	for deadline := time.Now().Add(cgroupAppearWithin); ; time.Sleep(50 * time.Millisecond) {
		if cp, err = r.Find(string(st.UID), string(st.QOSClass), st.ContainerID); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("finding the container's cgroup: %w", err)
	}
	pp, err := r.FindPod(string(st.UID), string(st.QOSClass))
	if err != nil {
		return nil, fmt.Errorf("finding the pod's cgroup: %w", err)
	}
	now := s.env.now()
	c := &Cgroups{At: now}
	for _, x := range []struct {
		path cgroup.Path
		dst  *CgroupReading
	}{{cp, &c.Container}, {pp, &c.PodLevel}} {
		sample, err := r.Read(x.path, now)
		if err != nil {
			return nil, fmt.Errorf("reading cgroup %s: %w", x.path, err)
		}
		*x.dst = readingOf(x.path.String(), sample)
	}
	return c, nil
}

func readingOf(dir string, s cgroup.Sample) CgroupReading {
	r := CgroupReading{
		Dir: dir, Version: s.Version.String(),
		CPUQuotaMicros: int64(s.CPULimit.QuotaMicros), CPUPeriodMicros: int64(s.CPULimit.PeriodMicros),
		MemoryLimitBytes: int64(s.MemoryLimit.Bytes), MemoryUsageBytes: s.MemoryUsageBytes, OOMKills: s.OOMKills,
	}
	if s.CPULimit.Unlimited {
		r.CPUQuotaMicros = -1
	}
	if s.MemoryLimit.Unlimited {
		r.MemoryLimitBytes = -1
	}
	return r
}

// waitCgroups reads the cgroups until ok holds for the reading or the
// timeout passes, and returns the last reading either way: the cgroup
// files are evidence, so a mismatch is recorded, not turned into an error.
// It returns nil, nil without a CgroupRoot.
func (s *session) waitCgroups(ctx context.Context, st PodState, timeout time.Duration, ok func(*Cgroups) bool) (*Cgroups, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last *Cgroups
	err := poll(ctx, 50*time.Millisecond, func(context.Context) (bool, error) {
		c, err := s.readCgroups(st)
		if err != nil || c == nil {
			return true, err
		}
		last = c
		return ok(c), nil
	})
	if ctx.Err() != nil && last != nil {
		err = nil
	}
	return last, err
}

// quotaFor is the CFS quota the kubelet writes for a cpu limit with the
// default 100 ms period: 250m -> 25000.
func quotaFor(cpuLimit string) int64 {
	q := resource.MustParse(cpuLimit)
	return q.MilliValue() * 100
}

// bytesOf is a quantity in bytes.
func bytesOf(s string) int64 {
	q := resource.MustParse(s)
	return q.Value()
}

// exec runs argv in the pod's container with kubectl exec and returns its
// standard output.
func (s *session) exec(ctx context.Context, pod string, argv ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args := []string{"-n", s.run.Namespace, "exec", pod, "-c", containerName, "--"}
	if s.env.Kubeconfig != "" {
		args = append([]string{"--kubeconfig", s.env.Kubeconfig}, args...)
	}
	cmd := exec.CommandContext(ctx, s.env.Kubectl, append(args, argv...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl exec %s -- %s: %w: %s", pod, strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// KubeletUsage is a pod's memory usage as the kubelet's stats summary
// reports it. The kubelet checks a memory limit decrease against these
// figures, which lag the cgroup files by up to its housekeeping interval.
type KubeletUsage struct {
	At                             time.Time
	PodBytes, ContainerBytes       uint64
	HasPodBytes, HasContainerBytes bool
}

// summary is the part of the kubelet's /stats/summary that is read here.
type summary struct {
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"podRef"`
		Memory *struct {
			UsageBytes *uint64 `json:"usageBytes"`
		} `json:"memory"`
		Containers []struct {
			Name   string `json:"name"`
			Memory *struct {
				UsageBytes *uint64 `json:"usageBytes"`
			} `json:"memory"`
		} `json:"containers"`
	} `json:"pods"`
}

// kubeletUsage reads the pod's and its container's memory usage from the
// kubelet's stats summary, through the API server's node proxy.
func (s *session) kubeletUsage(ctx context.Context, st PodState) (KubeletUsage, error) {
	u, err := ReadKubeletUsage(ctx, s.env.Client, st.Node, s.run.Namespace, st.Name, containerName)
	u.At = s.env.now()
	return u, err
}

// ReadKubeletUsage reads a pod's and one of its containers' memory usage
// from the kubelet's stats summary of node, through the API server's node
// proxy. At is left zero.
func ReadKubeletUsage(ctx context.Context, c kubernetes.Interface, node, namespace, pod, container string) (KubeletUsage, error) {
	raw, err := c.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/nodes", node, "proxy", "stats", "summary").DoRaw(ctx)
	if err != nil {
		return KubeletUsage{}, fmt.Errorf("reading the kubelet's stats summary of node %s: %w", node, err)
	}
	var sum summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		return KubeletUsage{}, fmt.Errorf("decoding the kubelet's stats summary: %w", err)
	}
	var u KubeletUsage
	for _, p := range sum.Pods {
		if p.PodRef.Namespace != namespace || p.PodRef.Name != pod {
			continue
		}
		if p.Memory != nil && p.Memory.UsageBytes != nil {
			u.PodBytes, u.HasPodBytes = *p.Memory.UsageBytes, true
		}
		for _, ct := range p.Containers {
			if ct.Name == container && ct.Memory != nil && ct.Memory.UsageBytes != nil {
				u.ContainerBytes, u.HasContainerBytes = *ct.Memory.UsageBytes, true
			}
		}
	}
	return u, nil
}

// Event is a Kubernetes event about the test pod.
type Event struct {
	Type, Reason, Message string
	// Count is how many times it was seen.
	Count int32
}

// podEvents lists the events about pod, oldest first, leaving out the
// scheduler's and the image ones. Events are recorded asynchronously, so
// it waits (up to 10s) until every reason in want is there; a missing
// event is then recorded as missing, not turned into an error.
func (s *session) podEvents(ctx context.Context, pod string, want ...string) ([]Event, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var events []Event
	err := poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		var err error
		events, err = s.listPodEvents(ctx, pod)
		reasons := EventReasons(events)
		for _, r := range want {
			if !slices.Contains(reasons, r) {
				return false, err
			}
		}
		return true, err
	})
	if ctx.Err() != nil && events != nil {
		err = nil
	}
	return events, err
}

func (s *session) listPodEvents(ctx context.Context, pod string) ([]Event, error) {
	list, err := s.env.Client.CoreV1().Events(s.run.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + pod,
	})
	if err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	items := list.Items
	ts := func(e corev1.Event) time.Time {
		if !e.EventTime.IsZero() {
			return e.EventTime.Time
		}
		return e.FirstTimestamp.Time
	}
	slices.SortStableFunc(items, func(a, b corev1.Event) int { return ts(a).Compare(ts(b)) })
	var out []Event
	for _, e := range items {
		switch e.Reason {
		case "Scheduled", "Pulled", "MissingClusterDNS":
			continue
		}
		count := e.Count
		if e.Series != nil {
			count = e.Series.Count
		}
		out = append(out, Event{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: count})
	}
	return out, nil
}

// EventReasons lists the reasons of events, in order, e.g. ResizeStarted.
func EventReasons(events []Event) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, e.Reason)
	}
	return out
}
