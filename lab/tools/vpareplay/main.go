// Command vpareplay feeds a replayed workload to VPA 1.8.1's own code and
// answers, once a minute, with VPA's recommendation and what its updater
// would do. It is driven by snug-lab bench quality (lab/internal/quality/vpa.go)
// over stdin and stdout, one JSON object a line:
//
//	in:  {"time":T,"pods":[{"name":..,"startTime":T0,"resizing":false,
//	       "containers":[{"name":..,"cpuRequestMillis":..,"cpuLimitMillis":..,
//	         "memRequestBytes":..,"memLimitBytes":..,"cpuMillis":..,"memBytes":..,
//	         "sampleStart":T1,"ooms":[T2],"lastOOMStart":T3,"lastOOMEnd":T4}]}]}
//	out: {"recommendation":{"app":{"target":{..},"lowerBound":{..},"upperBound":{..}}},
//	       "updates":[{"pod":..,"containers":{"app":{..}}}]}
//
// Times are Unix seconds. Each tick is one run of the recommender's loop
// (pkg/recommender/routines/recommender.go RunOnce: the latest metrics
// sample per container, then the recommendation) and one of the updater's
// (pkg/updater/logic/updater.go RunOnce: which pods to update). Every pod of
// the workload feeds one aggregate per container name, as the pods of one
// VPA do.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vpa_types "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/logic"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/model"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/updater/priority"
	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/utils/limitrange"
	vpa_api_util "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/utils/vpa"
)

// A tick is one loop of the recommender, of the updater, or of both
// (recommender first); skipRecommend and skipUpdate leave one out, so
// that the two loops can run at their own phase as they do in a cluster.
type tick struct {
	Time          int64   `json:"time"`
	Pods          []podIn `json:"pods"`
	SkipRecommend bool    `json:"skipRecommend,omitempty"`
	SkipUpdate    bool    `json:"skipUpdate,omitempty"`
}

type podIn struct {
	Name       string        `json:"name"`
	StartTime  int64         `json:"startTime"`
	Resizing   bool          `json:"resizing"`
	Containers []containerIn `json:"containers"`
}

type containerIn struct {
	Name             string  `json:"name"`
	CPURequestMillis int64   `json:"cpuRequestMillis"`
	CPULimitMillis   int64   `json:"cpuLimitMillis"`
	MemRequestBytes  int64   `json:"memRequestBytes"`
	MemLimitBytes    int64   `json:"memLimitBytes"`
	CPUMillis        float64 `json:"cpuMillis"`
	MemBytes         int64   `json:"memBytes"`
	HasSample        bool    `json:"hasSample"`
	SampleStart      int64   `json:"sampleStart"`
	OOMs             []int64 `json:"ooms,omitempty"`
	LastOOMStart     int64   `json:"lastOOMStart,omitempty"`
	LastOOMEnd       int64   `json:"lastOOMEnd,omitempty"`
}

type amounts struct {
	CPUMillis int64 `json:"cpuMillis"`
	MemBytes  int64 `json:"memBytes"`
}

type estimate struct {
	Target     amounts `json:"target"`
	LowerBound amounts `json:"lowerBound"`
	UpperBound amounts `json:"upperBound"`
}

type resourcesOut struct {
	CPURequestMillis int64 `json:"cpuRequestMillis"`
	CPULimitMillis   int64 `json:"cpuLimitMillis,omitempty"`
	MemRequestBytes  int64 `json:"memRequestBytes"`
	MemLimitBytes    int64 `json:"memLimitBytes,omitempty"`
}

type update struct {
	Pod        string                  `json:"pod"`
	Containers map[string]resourcesOut `json:"containers"`
}

type answer struct {
	Recommendation map[string]estimate `json:"recommendation"`
	Updates        []update            `json:"updates"`
}

// The recommender's and updater's defaults in 1.8.1:
// pkg/recommender/config/config.go DefaultRecommenderConfig (lines 124-135)
// and pkg/updater/config/config.go (lines 75-80; --min-change-priority 0.1).
var recConfig = logic.RecommendationConfig{
	SafetyMarginFraction:       0.15,
	PodMinCPUMillicores:        25,
	PodMinMemoryMb:             250,
	TargetCPUPercentile:        0.9,
	LowerBoundCPUPercentile:    0.5,
	UpperBoundCPUPercentile:    0.95,
	ConfidenceIntervalCPU:      24 * time.Hour,
	TargetMemoryPercentile:     0.9,
	LowerBoundMemoryPercentile: 0.5,
	UpperBoundMemoryPercentile: 0.95,
	ConfidenceIntervalMemory:   24 * time.Hour,
}

// evictionToleranceFraction is the updater's --eviction-tolerance default
// (pkg/updater/config/config.go), which also bounds how many replicas of a
// group are resized in place in one loop.
const evictionToleranceFraction = 0.5

var updConfig = priority.UpdateConfig{
	MinChangePriority:          0.1,
	PodLifetimeUpdateThreshold: 12 * time.Hour,
	EvictAfterOOMThreshold:     10 * time.Minute,
}

type state struct {
	recommender logic.PodResourceRecommender
	aggregates  map[string]*model.AggregateContainerState
	containers  map[string]*model.ContainerState // pod/container
	processor   vpa_api_util.RecommendationProcessor
	vpa         *vpa_types.VerticalPodAutoscaler
	// last is the latest recommendation, answered on every tick.
	last map[string]estimate
}

func newState() *state {
	mode := vpa_types.UpdateModeInPlaceOrRecreate
	return &state{
		recommender: logic.CreatePodResourceRecommender(recConfig),
		aggregates:  map[string]*model.AggregateContainerState{},
		containers:  map[string]*model.ContainerState{},
		processor:   vpa_api_util.NewCappingRecommendationProcessor(limitrange.NewNoopLimitsCalculator()),
		vpa: &vpa_types.VerticalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "replay", Namespace: "replay"},
			Spec:       vpa_types.VerticalPodAutoscalerSpec{UpdatePolicy: &vpa_types.PodUpdatePolicy{UpdateMode: &mode}},
		},
	}
}

func unix(s int64) time.Time { return time.Unix(s, 0).UTC() }

func (s *state) step(t tick) (answer, error) {
	now := unix(t.Time)
	if !t.SkipRecommend {
		s.recommend(t)
	}
	out := answer{Recommendation: s.last}
	if t.SkipUpdate || s.vpa.Status.Recommendation == nil {
		// pods_inplace_restriction.go line 119: no recommendation yet,
		// nothing to update.
		return out, nil
	}
	return s.update(t, now, out)
}

// recommend is the recommender's loop.
func (s *state) recommend(t tick) {
	// The recommender's loop: feed the latest sample of each container
	// (cluster_feeder.go LoadRealTimeMetrics -> ClusterState.AddSample ->
	// ContainerState.AddSample) and the OOM events (RecordOOM).
	for _, p := range t.Pods {
		for _, c := range p.Containers {
			agg := s.aggregates[c.Name]
			if agg == nil {
				agg = model.NewAggregateContainerState()
				s.aggregates[c.Name] = agg
			}
			key := p.Name + "/" + c.Name
			cs := s.containers[key]
			if cs == nil {
				cs = model.NewContainerState(nil, agg)
				s.containers[key] = cs
			}
			cs.Request = model.Resources{
				model.ResourceCPU:    model.CPUAmountFromCores(float64(c.CPURequestMillis) / 1000),
				model.ResourceMemory: model.MemoryAmountFromBytes(float64(c.MemRequestBytes)),
			}
			if c.HasSample {
				start := unix(c.SampleStart)
				cs.AddSample(&model.ContainerUsageSample{MeasureStart: start, Usage: model.CPUAmountFromCores(c.CPUMillis / 1000), Resource: model.ResourceCPU})
				cs.AddSample(&model.ContainerUsageSample{MeasureStart: start, Usage: model.MemoryAmountFromBytes(float64(c.MemBytes)), Resource: model.ResourceMemory})
			}
			for _, o := range c.OOMs {
				// The OOM observer reports an OOM-killed container with its
				// memory request (pkg/recommender/input/oom/observer.go,
				// lines 190-197 in 1.8.1).
				_ = cs.RecordOOM(unix(o), model.MemoryAmountFromBytes(float64(c.MemRequestBytes)))
			}
		}
	}
	byName := model.ContainerNameToAggregateStateMap{}
	for name, a := range s.aggregates {
		byName[name] = a
	}
	rec := s.recommender.GetRecommendedPodResources(byName)
	list := logic.MapToListOfRecommendedContainerResources(rec, logic.RecommendationFormat{RoundCPUMillicores: 1, RoundMemoryBytes: 1})
	s.vpa.Status.Recommendation = list
	s.last = map[string]estimate{}
	for _, r := range list.ContainerRecommendations {
		s.last[r.ContainerName] = estimate{Target: amountsOf(r.Target), LowerBound: amountsOf(r.LowerBound), UpperBound: amountsOf(r.UpperBound)}
	}
}

// update is the updater's loop.
func (s *state) update(t tick, now time.Time, out answer) (answer, error) {

	// The updater's loop: the priority calculator decides which pods to
	// update (bounds, --min-change-priority, the 12 h lifetime rule, quick
	// OOMs); an update sets requests to the processed target and keeps the
	// limit:request ratio (pkg/utils/vpa/limit_and_request_scaling.go
	// GetProportionalLimit), as the in-place patch and the admission
	// controller do.
	calc := priority.NewUpdatePriorityCalculator(s.vpa, updConfig, s.processor, priority.NewProcessor())
	pods := map[string]*corev1.Pod{}
	for _, p := range t.Pods {
		if p.Resizing {
			continue // pods_inplace_restriction.go: a resize in progress is not updated again
		}
		pod := podOf(p)
		pods[pod.Name] = pod
		calc.AddPod(pod, now, nil)
	}
	// The replica group's disruption budget (pkg/updater/restriction):
	// every pod of the workload is one group of configured replicas with
	// evictionTolerance = int(configured × --eviction-tolerance)
	// (pods_restriction_factory.go line 226, truncated); a pod is approved
	// for an in-place resize while isPodDisruptable holds (lines 311-317:
	// running - initiated > configured - tolerance, or a group with no
	// tolerance that is all running and has initiated nothing), and each
	// approval counts as initiated for the rest of the loop
	// (pods_inplace_restriction.go line 283). With 2 replicas one is
	// resized per loop, the other deferred "below its configured
	// availability", as the lab shows (lab/docs/vpa-lab.md); 1 replica is
	// always approved. --min-replicas is not applied (docs/quality.md).
	configured := len(t.Pods)
	running := configured
	tolerance := int(float64(configured) * evictionToleranceFraction)
	initiated := 0
	for _, pod := range calc.GetSortedPods(priority.NewDefaultPodEvictionAdmission()) {
		disruptable := running-initiated > configured-tolerance ||
			(configured == running && tolerance == 0 && initiated == 0)
		if !disruptable {
			continue
		}
		initiated++
		processed, _, err := s.processor.Apply(s.vpa, pod)
		if err != nil {
			return answer{}, fmt.Errorf("processing the recommendation for %s: %w", pod.Name, err)
		}
		u := update{Pod: pod.Name, Containers: map[string]resourcesOut{}}
		for _, c := range pod.Spec.Containers {
			r := vpa_api_util.GetRecommendationForContainer(c.Name, processed)
			if r == nil {
				continue
			}
			req := c.Resources.Requests.DeepCopy()
			for k, v := range r.Target {
				req[k] = v
			}
			lim, _ := vpa_api_util.GetProportionalLimit(c.Resources.Limits, c.Resources.Requests, req, nil)
			newLim := c.Resources.Limits.DeepCopy()
			for k, v := range lim {
				newLim[k] = v
			}
			u.Containers[c.Name] = resourcesOut{
				CPURequestMillis: req.Cpu().MilliValue(), MemRequestBytes: req.Memory().Value(),
				CPULimitMillis: milliOr0(newLim, corev1.ResourceCPU), MemLimitBytes: valueOr0(newLim, corev1.ResourceMemory),
			}
		}
		out.Updates = append(out.Updates, u)
	}
	return out, nil
}

func milliOr0(l corev1.ResourceList, n corev1.ResourceName) int64 {
	if q, ok := l[n]; ok {
		return q.MilliValue()
	}
	return 0
}

func valueOr0(l corev1.ResourceList, n corev1.ResourceName) int64 {
	if q, ok := l[n]; ok {
		return q.Value()
	}
	return 0
}

func amountsOf(l corev1.ResourceList) amounts {
	return amounts{CPUMillis: l.Cpu().MilliValue(), MemBytes: l.Memory().Value()}
}

func podOf(p podIn) *corev1.Pod {
	start := metav1.NewTime(unix(p.StartTime))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: "replay", UID: types.UID(p.Name)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &start},
	}
	for _, c := range p.Containers {
		rr := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		if c.CPURequestMillis > 0 {
			rr.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(c.CPURequestMillis, resource.DecimalSI)
		}
		if c.MemRequestBytes > 0 {
			rr.Requests[corev1.ResourceMemory] = *resource.NewQuantity(c.MemRequestBytes, resource.BinarySI)
		}
		if c.CPULimitMillis > 0 {
			rr.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(c.CPULimitMillis, resource.DecimalSI)
		}
		if c.MemLimitBytes > 0 {
			rr.Limits[corev1.ResourceMemory] = *resource.NewQuantity(c.MemLimitBytes, resource.BinarySI)
		}
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c.Name, Resources: rr})
		st := corev1.ContainerStatus{Name: c.Name, Ready: true}
		if c.LastOOMEnd > 0 {
			st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
				Reason: "OOMKilled", StartedAt: metav1.NewTime(unix(c.LastOOMStart)), FinishedAt: metav1.NewTime(unix(c.LastOOMEnd)),
			}
		}
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, st)
	}
	return pod
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	s := newState()
	for in.Scan() {
		var t tick
		if err := json.Unmarshal(in.Bytes(), &t); err != nil {
			fmt.Fprintf(os.Stderr, "vpareplay: reading a tick: %v\n", err)
			os.Exit(1)
		}
		a, err := s.step(t)
		if err != nil {
			fmt.Fprintf(os.Stderr, "vpareplay: %v\n", err)
			os.Exit(1)
		}
		if err := enc.Encode(a); err != nil {
			fmt.Fprintf(os.Stderr, "vpareplay: writing: %v\n", err)
			os.Exit(1)
		}
		if err := out.Flush(); err != nil {
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "vpareplay: reading: %v\n", err)
		os.Exit(1)
	}
}
