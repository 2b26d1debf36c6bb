package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/snug-dev/snug/internal/cgroup"
)

// Handler serves /metrics, /healthz, /readyz and the JSON API described in
// docs/agent.md:
//
//	GET /snug/v1/containers
//	GET /snug/v1/namespaces/{namespace}/pods/{pod}
//
// Both take ?since= (RFC 3339 time, or a duration such as 30s meaning that
// long ago) and ?limit= (the newest N points) to select the history.
//
// The API is not under /api/ or /apis/: with --auth, access is a
// SubjectAccessReview of the path, and Kubernetes' default ClusterRole
// system:discovery lets every authenticated user get /api/* and /apis/*.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.Ready() {
			http.Error(w, "not ready: pods not listed or no sampling pass yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /snug/v1/containers", func(w http.ResponseWriter, r *http.Request) {
		q, err := a.parseQuery(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		a.writeList(w, a.Containers(q))
	})
	mux.HandleFunc("GET /snug/v1/namespaces/{namespace}/pods/{pod}", func(w http.ResponseWriter, r *http.Request) {
		q, err := a.parseQuery(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		vs := a.Pod(r.PathValue("namespace"), r.PathValue("pod"), q)
		if len(vs) == 0 {
			http.Error(w, fmt.Sprintf("pod %s/%s has no sampled container on node %s", r.PathValue("namespace"), r.PathValue("pod"), a.cfg.Node), http.StatusNotFound)
			return
		}
		a.writeList(w, vs)
	})
	return mux
}

func (a *Agent) parseQuery(r *http.Request) (Query, error) {
	var q Query
	if s := r.URL.Query().Get("since"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d >= 0 {
			q.Since = a.clock.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			q.Since = t
		} else {
			return q, fmt.Errorf("since=%q: want an RFC 3339 time or a non-negative duration such as 30s", s)
		}
	}
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return q, fmt.Errorf("limit=%q: want a non-negative integer", s)
		}
		q.Limit = n
	}
	return q, nil
}

// ContainerList is the JSON answer of the API.
type ContainerList struct {
	Node            string          `json:"node"`
	IntervalSeconds float64         `json:"intervalSeconds"`
	Time            time.Time       `json:"time"`
	Containers      []ContainerJSON `json:"containers"`
}

// ContainerJSON is one container in the JSON API.
type ContainerJSON struct {
	Namespace     string      `json:"namespace"`
	Pod           string      `json:"pod"`
	PodUID        string      `json:"podUID"`
	Container     string      `json:"container"`
	ContainerID   string      `json:"containerID"`
	QOSClass      string      `json:"qosClass"`
	CgroupVersion string      `json:"cgroupVersion"`
	Cgroup        string      `json:"cgroup"`
	Latest        PointJSON   `json:"latest"`
	History       []PointJSON `json:"history"`
	// Autoscale is the decision step's view, when a policy covers the pod
	// and the agent decides (Agent.Decide).
	Autoscale *AutoscaleJSON `json:"autoscale,omitempty"`
}

// PointJSON is one point in the JSON API. Rate fields are absent when
// hasRate is false; limit and headroom fields are absent when unlimited;
// pressure is absent without PSI.
type PointJSON struct {
	Time                         time.Time     `json:"time"`
	HasRate                      bool          `json:"hasRate"`
	IntervalSeconds              float64       `json:"intervalSeconds,omitempty"`
	CPUUsageMillicores           *float64      `json:"cpuUsageMillicores,omitempty"`
	CPUThrottledFraction         *float64      `json:"cpuThrottledFraction,omitempty"`
	CPUThrottledSecondsPerSecond *float64      `json:"cpuThrottledSecondsPerSecond,omitempty"`
	CPULimitMillicores           *int64        `json:"cpuLimitMillicores,omitempty"`
	MemoryUsageBytes             uint64        `json:"memoryUsageBytes"`
	MemoryWorkingSetBytes        uint64        `json:"memoryWorkingSetBytes"`
	MemoryPeakBytes              uint64        `json:"memoryPeakBytes"`
	MemoryLimitBytes             *uint64       `json:"memoryLimitBytes,omitempty"`
	MemoryHeadroomBytes          *uint64       `json:"memoryHeadroomBytes,omitempty"`
	MemoryHeadroomFraction       *float64      `json:"memoryHeadroomFraction,omitempty"`
	OOMKills                     uint64        `json:"oomKills"`
	OOMKillsDelta                *uint64       `json:"oomKillsDelta,omitempty"`
	MemoryLimitHitsDelta         *uint64       `json:"memoryLimitHitsDelta,omitempty"`
	Pressure                     *PressureJSON `json:"pressure,omitempty"`
}

// PressureJSON is PSI per resource.
type PressureJSON struct {
	CPU    PressureLineJSON `json:"cpu"`
	Memory PressureLineJSON `json:"memory"`
	IO     PressureLineJSON `json:"io"`
}

// PressureLineJSON is one PSI file: the kernel's 10 s averages (percent) and
// the share of the last interval stalled (0-1).
type PressureLineJSON struct {
	SomeAvg10Percent    float64 `json:"someAvg10Percent"`
	FullAvg10Percent    float64 `json:"fullAvg10Percent"`
	SomeStalledFraction float64 `json:"someStalledFraction"`
	FullStalledFraction float64 `json:"fullStalledFraction"`
}

func (a *Agent) writeList(w http.ResponseWriter, vs []ContainerView) {
	out := ContainerList{
		Node: a.cfg.Node, IntervalSeconds: a.cfg.Interval.Seconds(), Time: a.clock.Now(),
		Containers: make([]ContainerJSON, 0, len(vs)),
	}
	for _, v := range vs {
		c := ContainerJSON{
			Namespace: v.Namespace, Pod: v.Pod, PodUID: string(v.PodUID), Container: v.Container,
			ContainerID: v.ContainerID, QOSClass: string(v.QOSClass),
			CgroupVersion: v.Cgroup.Version.String(), Cgroup: cgroupDir(v.Cgroup),
			Latest: pointJSON(v.Latest), History: make([]PointJSON, 0, len(v.History)),
		}
		if a.decider != nil {
			c.Autoscale = a.decider.View(v.PodUID, v.Container)
		}
		for _, p := range v.History {
			c.History = append(c.History, pointJSON(p))
		}
		out.Containers = append(out.Containers, c)
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	_ = enc.Encode(out)
}

// cgroupDir is the directory that names the container: the memory
// controller's on v1, the unified one on v2.
func cgroupDir(p cgroup.Path) string {
	if p.Version == cgroup.V1 {
		return p.Memory
	}
	return p.Unified
}

func pointJSON(p Point) PointJSON {
	j := PointJSON{
		Time: p.Time, HasRate: p.HasRate,
		MemoryUsageBytes: p.MemoryUsageBytes, MemoryWorkingSetBytes: p.MemoryWorkingSetBytes, MemoryPeakBytes: p.MemoryPeakBytes,
		OOMKills: p.OOMKills,
	}
	if p.HasRate {
		j.IntervalSeconds = p.IntervalSeconds
		j.CPUUsageMillicores = ptr(p.CPUUsageMillicores)
		j.CPUThrottledFraction = ptr(p.CPUThrottledFraction)
		j.CPUThrottledSecondsPerSecond = ptr(p.CPUThrottledSecondsPerSecond)
		j.OOMKillsDelta = ptr(p.OOMKillsDelta)
		j.MemoryLimitHitsDelta = ptr(p.MemoryLimitHitsDelta)
	}
	if !p.CPUUnlimited && p.CPULimitMillicores > 0 {
		j.CPULimitMillicores = ptr(p.CPULimitMillicores)
	}
	if p.MemoryLimited {
		j.MemoryLimitBytes = ptr(p.MemoryLimitBytes)
		j.MemoryHeadroomBytes = ptr(p.MemoryHeadroomBytes)
		j.MemoryHeadroomFraction = ptr(p.MemoryHeadroomFraction)
	}
	if p.PSIPresent {
		line := func(s cgroup.PressureSignals) PressureLineJSON {
			return PressureLineJSON{s.SomeAvg10Percent, s.FullAvg10Percent, s.SomeStalledFraction, s.FullStalledFraction}
		}
		j.Pressure = &PressureJSON{CPU: line(p.CPUPressure), Memory: line(p.MemoryPressure), IO: line(p.IOPressure)}
	}
	return j
}

func ptr[T any](v T) *T { return &v }
