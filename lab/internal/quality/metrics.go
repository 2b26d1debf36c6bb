package quality

import (
	"math"
	"slices"

	"github.com/snug-dev/snug/lab/internal/quality/node"
	"github.com/snug-dev/snug/lab/internal/quality/trace"
)

// ThrottledSecond is the throttled fraction at and above which a second
// counts as throttled, and below which starvation has ended.
const ThrottledSecond = 0.05

// EndedSeconds is how long a container must stay under ThrottledSecond for
// starvation to have ended.
const EndedSeconds = 2

// Metrics are one replay's figures (docs/quality.md defines each).
type Metrics struct {
	Trace, Sizer string
	Pods         int
	Seconds      int

	// Request- and limit-based slack: the share of the requested (or
	// limited) capacity not used, over all container-seconds. Limit-based
	// slack counts only containers with a limit.
	CPUSlack, MemSlack           float64
	CPULimitSlack, MemLimitSlack float64
	// CPUSlackMean and MemSlackMean are, in an Overall, the plain means of
	// the traces' request-based slacks (each trace weighs the same; in
	// CPUSlack a long trace weighs by its length). NaN for one trace.
	CPUSlackMean, MemSlackMean float64
	// StarvedCoreSeconds is the CPU demand left unmet, in core-seconds.
	StarvedCoreSeconds float64
	// ThrottledShare is the share of running container-seconds throttled
	// (ThrottledSecond or more of the CFS periods).
	ThrottledShare float64
	// OOMKills counts OOM kills. OOMKillsCaused counts those the sizer
	// caused: at a working set the trace's own memory limit (the static
	// run's, the resources as written) would have held, or with no limit
	// written. The others are the workload's own: static is killed there
	// too.
	OOMKills, OOMKillsCaused int
	// Resizes counts resizes that took effect (a pod's containers resized
	// in the same second count once); ResizesPerPodHour divides by pods and
	// hours.
	Resizes           int
	ResizesPerPodHour float64
	// ResizedAt are the seconds Resizes were counted at, per pod.
	ResizedAt [][]int
	// Reasons counts the changes snug sent, by resource, action and
	// reason ("cpu Grow Throttled"); a resize of two changes counts in
	// both (snug only).
	Reasons map[string]int
	// Targets are the changes of VPA's cpu target (vpa only; the lab's
	// from the VerticalPodAutoscaler's status, the replay's from vpareplay).
	Targets []TargetChange
	// Ended is, per step of the trace, the seconds from the step to the end
	// of the first EndedSeconds seconds in which every container of every
	// pod ran throttled under ThrottledSecond (NaN: never).
	Ended []float64
	// MinMemHeadroom is the smallest (limit - working set) / limit seen
	// (request when no limit), over running seconds; 0 at an OOM kill.
	MinMemHeadroom float64
	// CPURequestCoreHours and MemRequestGiBHours are the requested capacity
	// (the cost), integrated over the trace.
	CPURequestCoreHours, MemRequestGiBHours float64

	acc   acc
	plot  *plotSeries
	usage [][]usageSeries // static run only: what KRR reads
	// lastResized is the last second each pod counted a resize.
	lastResized []int
	// endings follow each step (Ending); throttled is this second's
	// throttled fraction per container (NaN: not running), at first[pod]+c.
	steps     []int
	endings   []*Ending
	throttled []float64
	first     []int
	// written is each container's memory limit as the trace writes it, at
	// first[pod]+c (0: none).
	written []int64
}

// TargetChange is the second a recommendation's cpu target changed, and to
// what.
type TargetChange struct {
	Second    int
	CPUMillis int64
}

type usageSeries struct {
	cpu    []float64
	memMax float64
}

type acc struct {
	cpuReq, cpuUse, cpuSlack float64
	memReq, memUse, memSlack float64
	cpuLim, cpuLimSlack      float64
	memLim, memLimSlack      float64
	starved                  float64
	running, throttled       int
	minHeadroom              float64
}

func newMetrics(tr *trace.Trace, sizer string) *Metrics {
	m := &Metrics{Trace: tr.Name, Sizer: sizer, Pods: len(tr.Pods), Seconds: tr.Seconds, steps: tr.Steps, Reasons: map[string]int{}}
	m.acc.minHeadroom = math.Inf(1)
	m.lastResized = make([]int, len(tr.Pods))
	m.ResizedAt = make([][]int, len(tr.Pods))
	for i := range m.lastResized {
		m.lastResized[i] = -1
	}
	for _, p := range tr.Pods {
		m.first = append(m.first, len(m.throttled))
		for _, c := range p.Containers {
			m.throttled = append(m.throttled, math.NaN())
			m.written = append(m.written, c.MemLimitBytes)
		}
	}
	for range tr.Steps {
		m.endings = append(m.endings, NewEnding(len(m.throttled)))
	}
	if sizer == "static" {
		for _, p := range tr.Pods {
			var cs []usageSeries
			for range p.Containers {
				cs = append(cs, usageSeries{cpu: make([]float64, 0, tr.Seconds)})
			}
			m.usage = append(m.usage, cs)
		}
	}
	return m
}

// add takes in one container-second: what the node did and the resources
// it ran with (after any resize of the second).
func (m *Metrics) add(p, c, t int, s node.Second, r node.Resources) {
	a := &m.acc
	a.starved += s.StarvedMillis / 1000
	if s.OOMKilled {
		m.OOMKills++
		if w := m.written[m.first[p]+c]; w <= 0 || s.KilledAtBytes <= float64(w) {
			m.OOMKillsCaused++
		}
		a.minHeadroom = 0
	}
	if s.Resized && m.lastResized[p] != t {
		m.lastResized[p] = t
		m.Resizes++
		m.ResizedAt[p] = append(m.ResizedAt[p], t)
	}
	cpuReq, memReq := float64(r.CPURequestMillis), float64(r.MemRequestBytes)
	a.cpuReq += cpuReq
	a.memReq += memReq
	a.cpuUse += s.CPUUsageMillis
	a.memUse += s.MemBytes
	a.cpuSlack += math.Max(0, cpuReq-s.CPUUsageMillis)
	a.memSlack += math.Max(0, memReq-s.MemBytes)
	if r.CPULimitMillis > 0 {
		l := float64(r.CPULimitMillis)
		a.cpuLim += l
		a.cpuLimSlack += math.Max(0, l-s.CPUUsageMillis)
	}
	if r.MemLimitBytes > 0 {
		l := float64(r.MemLimitBytes)
		a.memLim += l
		a.memLimSlack += math.Max(0, l-s.MemBytes)
	}
	throttled := math.NaN()
	if s.Running {
		throttled = s.ThrottledFraction
	}
	m.throttled[m.first[p]+c] = throttled
	calm := Calm(throttled)
	if s.Running {
		a.running++
		if !calm {
			a.throttled++
		}
		ref := float64(r.MemLimitBytes)
		if ref <= 0 {
			ref = memReq
		}
		if ref > 0 && !s.OOMKilled {
			a.minHeadroom = math.Min(a.minHeadroom, (ref-s.MemBytes)/ref)
		}
	}
	if m.usage != nil {
		u := &m.usage[p][c]
		u.cpu = append(u.cpu, s.CPUUsageMillis)
		u.memMax = math.Max(u.memMax, s.MemBytes)
	}
}

// endSecond closes second t: each step at or before t takes in the
// second's throttled fractions (Ending).
func (m *Metrics) endSecond(t int) {
	for i, st := range m.steps {
		if t >= st {
			m.endings[i].Observe(1, m.throttled)
		}
	}
}

func (m *Metrics) finish() {
	a := &m.acc
	ratio := func(x, y float64) float64 {
		if y <= 0 {
			return math.NaN()
		}
		return x / y
	}
	m.CPUSlack, m.MemSlack = ratio(a.cpuSlack, a.cpuReq), ratio(a.memSlack, a.memReq)
	m.CPUSlackMean, m.MemSlackMean = math.NaN(), math.NaN()
	m.CPULimitSlack, m.MemLimitSlack = ratio(a.cpuLimSlack, a.cpuLim), ratio(a.memLimSlack, a.memLim)
	m.StarvedCoreSeconds = a.starved
	m.ThrottledShare = ratio(float64(a.throttled), float64(a.running))
	hours := float64(m.Seconds) / 3600
	m.ResizesPerPodHour = float64(m.Resizes) / (float64(m.Pods) * hours)
	m.MinMemHeadroom = a.minHeadroom
	if math.IsInf(a.minHeadroom, 1) {
		m.MinMemHeadroom = math.NaN()
	}
	m.CPURequestCoreHours = a.cpuReq / 1000 / 3600
	m.MemRequestGiBHours = a.memReq / (1 << 30) / 3600
	m.Ended = make([]float64, len(m.steps))
	for i := range m.steps {
		m.Ended[i], _ = m.endings[i].Ended()
	}
}

// EndedP50 is the median of Ended (NaN steps count as the trace's length).
func (m *Metrics) EndedP50() float64 {
	if len(m.Ended) == 0 {
		return math.NaN()
	}
	v := make([]float64, len(m.Ended))
	for i, e := range m.Ended {
		if math.IsNaN(e) {
			e = float64(m.Seconds)
		}
		v[i] = e
	}
	return percentile(v, 0.5)
}

// EndedMax is the longest of Ended (a step that never ended counts as the
// trace's length).
func (m *Metrics) EndedMax() float64 {
	if len(m.Ended) == 0 {
		return math.NaN()
	}
	out := 0.0
	for _, e := range m.Ended {
		if math.IsNaN(e) {
			e = float64(m.Seconds)
		}
		out = math.Max(out, e)
	}
	return out
}

// percentile is the nearest-rank percentile of v (v is not changed).
func percentile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
