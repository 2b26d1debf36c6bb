package agent

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/snug-dev/snug/internal/cgroup"
)

// Metrics is the agent's Prometheus registry: the agent's own health and
// one gauge per container and signal.
//
// Per-container series carry namespace, pod and container labels (and
// the requests gauges the pod's policy); counters never carry a pod. That
// breaks the project's rule of no pod names in labels on purpose: one agent
// serves one node, which the kubelet caps at 110 pods by default, and the
// agent deletes a container's series as soon as it stops tracking it, so a
// node's agent exports at most a few thousand series that do not pile up.
// Aggregate per namespace in queries, not here.
type Metrics struct {
	reg *prometheus.Registry

	passDuration prometheus.Histogram
	tracked      prometheus.Gauge
	readErrors   prometheus.Counter
	gone         prometheus.Counter
	findErrors   prometheus.Counter

	// Deciding and resizing (decide.go).
	decisions       *prometheus.CounterVec
	outcomes        *prometheus.CounterVec
	appliedLatency  prometheus.Histogram
	budgetHits      prometheus.Counter
	resizesLastHour prometheus.Histogram
	deferredActions *prometheus.CounterVec
	boosts          *prometheus.CounterVec
	unboostDelay    prometheus.Histogram
	restartResizes  *prometheus.CounterVec

	// Learnt history (checkpoint.go).
	snapshots        *prometheus.CounterVec
	snapshotsHeld    prometheus.Counter
	snapshotsDelayed prometheus.Counter
	seeds            *prometheus.CounterVec

	cpuUsage       *prometheus.GaugeVec
	cpuLimit       *prometheus.GaugeVec
	throttledRatio *prometheus.GaugeVec
	throttledRate  *prometheus.GaugeVec
	workingSet     *prometheus.GaugeVec
	memoryLimit    *prometheus.GaugeVec
	headroom       *prometheus.GaugeVec
	oomKills       *prometheus.CounterVec
	pressure       *prometheus.GaugeVec

	// Per container and pod under a policy (decide.go): the actual
	// requests, and a pod's pending resize.
	cpuRequest    *prometheus.GaugeVec
	memoryRequest *prometheus.GaugeVec
	pendingSince  *prometheus.GaugeVec
}

var containerLabels = []string{"namespace", "pod", "container"}

// newRequestsCounter is snug_agent_api_requests_total, counted by the
// clients' transport (kube.CountRequests).
func newRequestsCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "snug", Subsystem: "agent", Name: "api_requests_total",
		Help: "Requests the agent sent to the API server, by verb (get, list, watch, create, update, patch, delete) and resource[/subresource], as the API server's apiserver_request_total names them: what one node's agent asks of the API server.",
	}, []string{"verb", "resource"})
}

func newMetrics() *Metrics {
	gauge := func(name, help string, extra ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "snug", Subsystem: "agent", Name: name, Help: help,
		}, append(append([]string(nil), containerLabels...), extra...))
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		passDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "snug", Subsystem: "agent", Name: "pass_duration_seconds",
			Help: "Time one sampling pass over every tracked container took.",
			// From a handful of containers on tmpfs to a slow, loaded node.
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1},
		}),
		tracked: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "snug", Subsystem: "agent", Name: "tracked_containers",
			Help: "Containers whose cgroup the agent samples.",
		}),
		readErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "read_errors_total",
			Help: "Cgroup reads that failed for a reason other than the cgroup being gone.",
		}),
		gone: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "cgroups_gone_total",
			Help: "Cgroups that vanished while being read (the container exited); normal.",
		}),
		findErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "find_errors_total",
			Help: "Attempts to find or open a running container's cgroup that failed (often: not created yet).",
		}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "decisions_total",
			Help: "Decisions to grow or shrink a container's resource (holds are not counted), by action and resource.",
		}, []string{"action", "resource"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "resize_outcomes_total",
			Help: "What became of the resizes the agent planned, by the pod's namespace and policy: Applied, Deferred, Infeasible, Error, Rejected, Conflict, Timeout, Unknown, Refused (by the planner), NoOp.",
		}, []string{"namespace", "policy", "outcome"}),
		appliedLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "snug", Subsystem: "agent", Name: "decision_to_applied_seconds",
			Help: "Time from the sample that decided a resize to the agent seeing the pod's actual resources reflect it.",
			// The goal is 2 s at the median and 5 s at p95; 30 s is the in-flight timeout.
			Buckets: []float64{0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 20, 30},
		}),
		budgetHits: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "resize_budget_hits_total",
			Help: "Decisions held back because the pod used up its resizes for the hour (behavior.maxResizesPerHour).",
		}),
		resizesLastHour: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "snug", Subsystem: "agent", Name: "pod_hourly_resizes",
			Help:    "Resizes of the pod in the sliding hour, observed each time one is sent.",
			Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 20, 30, 60},
		}),
		deferredActions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "deferred_actions_total",
			Help: "behavior.deferred actions on resizes the kubelet deferred: Wait (left pending, once per deferral), FitToNode (lowered to the node's room), Revert (nothing fitted; back to the actual resources).",
		}, []string{"action"}),
		boosts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "startup_boosts_total",
			Help: "Startup boosts of containers, by event: boosted (applied), ended (set back).",
		}, []string{"namespace", "policy", "event"}),
		restartResizes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "restart_resizes_total",
			Help: "Resizes of RestartContainer resources in a restart window, by event: Sent (the resize that restarts the container), Restarted (the new instance Ready).",
		}, []string{"namespace", "policy", "event"}),
		unboostDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "snug", Subsystem: "agent", Name: "unboost_delay_seconds",
			Help: "Time from a boosted pod's containers being Ready (plus the policy's durationSeconds) to the end of the boost applied.",
			// The goal is 2 s; VPA's updater loop is 60 s.
			Buckets: []float64{0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 20, 30, 60},
		}),
		snapshots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "snapshots_published_total",
			Help: "Snapshots of what a pod's containers learnt, published in the pod's annotation, by result (ok, error) and reason (first, moved, learnt, final).",
		}, []string{"result", "reason"}),
		snapshotsHeld: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "snapshots_held_total",
			Help: "Snapshots due but not published: the pod's checkpoint would not change materially.",
		}),
		snapshotsDelayed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "snapshots_delayed_total",
			Help: "Snapshot looks put off to a later pass: the pass had started its most snapshot patches (MaxSnapshotsPerPass).",
		}),
		seeds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "checkpoint_seeds_total",
			Help: "Containers started under a policy, by whether they started from the policy's checkpoint: seeded, none, empty, unreadable, bad, incompatible.",
		}, []string{"result"}),
		cpuUsage:       gauge("container_cpu_usage_cores", "CPU used over the last interval."),
		cpuLimit:       gauge("container_cpu_limit_cores", "CFS quota over period; absent when unlimited."),
		throttledRatio: gauge("container_cpu_throttled_ratio", "Share of the interval's runnable CFS periods that were throttled (0-1)."),
		throttledRate:  gauge("container_cpu_throttled_seconds_per_second", "Throttled time per second of the interval."),
		workingSet:     gauge("container_memory_working_set_bytes", "Memory usage minus inactive file pages, as the kubelet computes it."),
		memoryLimit:    gauge("container_memory_limit_bytes", "Memory limit; absent when unlimited."),
		headroom:       gauge("container_memory_headroom_bytes", "Memory limit minus working set; absent when unlimited."),
		oomKills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "snug", Subsystem: "agent", Name: "container_oom_kills_total",
			Help: "OOM kills in the container's cgroup (it starts at the cgroup's count when tracking begins).",
		}, containerLabels),
		pressure:      gauge("container_pressure_stalled_ratio", "PSI: share of the interval some or all tasks stalled on a resource (0-1); cgroup v2 only.", "resource", "kind"),
		cpuRequest:    gauge("container_cpu_request_cores", "The container's actual cpu request (status.containerStatuses[].resources, else the spec), for containers under a policy.", "policy"),
		memoryRequest: gauge("container_memory_request_bytes", "The container's actual memory request, for containers under a policy.", "policy"),
		pendingSince: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "snug", Subsystem: "agent", Name: "pod_resize_pending_since_timestamp_seconds",
			Help: "When the pod's resize became pending (PodResizePending's lastTransitionTime), by reason (Deferred, Infeasible); absent while none is pending. Pods under a policy only.",
		}, []string{"namespace", "pod", "policy", "reason"}),
	}
	m.reg.MustRegister(m.passDuration, m.tracked, m.readErrors, m.gone, m.findErrors,
		m.decisions, m.outcomes, m.appliedLatency, m.budgetHits, m.resizesLastHour, m.deferredActions, m.boosts, m.unboostDelay, m.restartResizes, m.snapshots, m.snapshotsHeld, m.snapshotsDelayed, m.seeds,
		m.cpuUsage, m.cpuLimit, m.throttledRatio, m.throttledRate, m.workingSet, m.memoryLimit, m.headroom, m.oomKills, m.pressure,
		m.cpuRequest, m.memoryRequest, m.pendingSince,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry to serve.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// series holds one container's gauges, so that a pass sets them without
// hashing labels or allocating.
type series struct {
	cpuUsage, throttledRatio, throttledRate, workingSet prometheus.Gauge
	oomKills                                            prometheus.Counter
	// oomSeen is the cgroup's OOM kill count already added to oomKills.
	oomSeen uint64
	// psi is [resource][some, full], made on the first PSI reading.
	psi *[3][2]prometheus.Gauge
}

func (m *Metrics) newSeries(r ContainerRef) *series {
	l := prometheus.Labels{"namespace": r.Namespace, "pod": r.Pod, "container": r.Container}
	return &series{
		cpuUsage:       m.cpuUsage.With(l),
		throttledRatio: m.throttledRatio.With(l),
		throttledRate:  m.throttledRate.With(l),
		workingSet:     m.workingSet.With(l),
		oomKills:       m.oomKills.With(l),
	}
}

func (m *Metrics) observe(r ContainerRef, s *series, p Point) {
	s.workingSet.Set(float64(p.MemoryWorkingSetBytes))
	if p.OOMKills > s.oomSeen {
		s.oomKills.Add(float64(p.OOMKills - s.oomSeen))
		s.oomSeen = p.OOMKills
	}
	// Limits change rarely (on a resize) and may come and go, so they
	// take the slower labelled path.
	if p.MemoryLimited {
		m.memoryLimit.WithLabelValues(r.Namespace, r.Pod, r.Container).Set(float64(p.MemoryLimitBytes))
		m.headroom.WithLabelValues(r.Namespace, r.Pod, r.Container).Set(float64(p.MemoryHeadroomBytes))
	} else {
		m.memoryLimit.DeleteLabelValues(r.Namespace, r.Pod, r.Container)
		m.headroom.DeleteLabelValues(r.Namespace, r.Pod, r.Container)
	}
	if p.CPUUnlimited || p.CPULimitMillicores == 0 {
		m.cpuLimit.DeleteLabelValues(r.Namespace, r.Pod, r.Container)
	} else {
		m.cpuLimit.WithLabelValues(r.Namespace, r.Pod, r.Container).Set(float64(p.CPULimitMillicores) / 1000)
	}
	if !p.HasRate {
		return
	}
	s.cpuUsage.Set(p.CPUUsageMillicores / 1000)
	s.throttledRatio.Set(p.CPUThrottledFraction)
	s.throttledRate.Set(p.CPUThrottledSecondsPerSecond)
	if !p.PSIPresent {
		return
	}
	if s.psi == nil {
		s.psi = new([3][2]prometheus.Gauge)
		for i, res := range [...]string{"cpu", "memory", "io"} {
			for j, kind := range [...]string{"some", "full"} {
				s.psi[i][j] = m.pressure.WithLabelValues(r.Namespace, r.Pod, r.Container, res, kind)
			}
		}
	}
	for i, ps := range [...]cgroup.PressureSignals{p.CPUPressure, p.MemoryPressure, p.IOPressure} {
		s.psi[i][0].Set(ps.SomeStalledFraction)
		s.psi[i][1].Set(ps.FullStalledFraction)
	}
}

// forget deletes every series of r's container.
func (m *Metrics) forget(r ContainerRef) {
	l := prometheus.Labels{"namespace": r.Namespace, "pod": r.Pod, "container": r.Container}
	for _, v := range []*prometheus.GaugeVec{m.cpuUsage, m.cpuLimit, m.throttledRatio, m.throttledRate, m.workingSet, m.memoryLimit, m.headroom, m.pressure, m.cpuRequest, m.memoryRequest} {
		v.DeletePartialMatch(l)
	}
	m.oomKills.Delete(l)
}

// forgetPod deletes the series the decider keeps for a pod: its
// containers' requests and its pending resize.
func (m *Metrics) forgetPod(namespace, pod string) {
	l := prometheus.Labels{"namespace": namespace, "pod": pod}
	m.cpuRequest.DeletePartialMatch(l)
	m.memoryRequest.DeletePartialMatch(l)
	m.pendingSince.DeletePartialMatch(l)
}

// policyName is the name part of a "namespace/name" policy key.
func policyName(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[i+1:]
	}
	return key
}
