package controller

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the controller's Prometheus metrics. Labels are bounded:
// namespace and policy, never a pod's name.
type Metrics struct {
	reconciles        *prometheus.CounterVec
	reconcileDuration *prometheus.HistogramVec
	pods              *prometheus.GaugeVec
	conditions        *prometheus.GaugeVec
	evictions         *prometheus.CounterVec
	restartWindows    *prometheus.CounterVec
	checkpointWrites  *prometheus.CounterVec
	// Leader is 1 while this process leads, else 0; Run sets it.
	Leader prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snug_controller_reconciles_total",
			Help: "Policy reconciles, by concern (checkpoints, status, disruption) and result (ok, requeue, conflict, error).",
		}, []string{"concern", "result"}),
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "snug_controller_reconcile_duration_seconds",
			Help:    "Time one policy reconcile of one concern (checkpoints, status, disruption) took.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}, []string{"concern"}),
		pods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snug_controller_policy_pods",
			Help: "Pods a policy governs (shared pods of a younger overlapping policy excluded).",
		}, []string{"namespace", "policy"}),
		conditions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snug_controller_policy_condition",
			Help: "1 while the policy's condition of this type is True, else 0.",
		}, []string{"namespace", "policy", "type"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snug_controller_evictions_total",
			Help: "Evictions for a resize that stayed Deferred, by result (evicted, blocked, error).",
		}, []string{"namespace", "policy", "result"}),
		restartWindows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snug_controller_restart_windows_total",
			Help: "Restart windows (updatePolicy.restartWindow), by event: granted; closed (the agent restarted the container or no longer asks), expired (unused for 5 minutes), revoked (the policy no longer has a window); and refusals: pdb (a PodDisruptionBudget allows no disruption), notready (another pod of the policy is not Ready), single (the only running pod, without singleReplica), inflight (a restarting resize the kubelet has not applied), error.",
		}, []string{"namespace", "policy", "event"}),
		checkpointWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snug_controller_checkpoint_writes_total",
			Help: "Writes of checkpoint ConfigMaps, by result (ok, error).",
		}, []string{"result"}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snug_controller_leader",
			Help: "1 while this process is the elected leader.",
		}),
	}
	reg.MustRegister(m.reconciles, m.reconcileDuration, m.pods, m.conditions, m.evictions, m.restartWindows, m.checkpointWrites, m.Leader)
	return m
}

// forget drops the series of a deleted policy.
func (m *Metrics) forget(namespace, policy string) {
	m.pods.DeleteLabelValues(namespace, policy)
	m.conditions.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "policy": policy})
	m.evictions.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "policy": policy})
	m.restartWindows.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "policy": policy})
}
