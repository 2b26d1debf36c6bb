package scale

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// families parses the text exposition format; nil for "" or bad text.
func families(text string) map[string]*dto.MetricFamily {
	if text == "" {
		return nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil
	}
	return fams
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// sum adds up a counter or gauge family's samples whose labels keep says
// to keep (nil keeps all).
func sum(fams map[string]*dto.MetricFamily, name string, keep func(*dto.Metric) bool) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	s := 0.0
	for _, m := range f.GetMetric() {
		if keep != nil && !keep(m) {
			continue
		}
		switch {
		case m.Counter != nil:
			s += m.GetCounter().GetValue()
		case m.Gauge != nil:
			s += m.GetGauge().GetValue()
		case m.Untyped != nil:
			s += m.GetUntyped().GetValue()
		}
	}
	return s
}

// byKind adds up a request counter family by (verb, resource).
func byKind(fams map[string]*dto.MetricFamily, name string) map[Request]float64 {
	out := map[Request]float64{}
	f := fams[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		r := Request{Verb: label(m, "verb"), Resource: label(m, "resource")}
		out[r] += m.GetCounter().GetValue()
	}
	return out
}

// buckets adds up a histogram family's cumulative buckets, by upper bound,
// over its samples keep keeps.
func buckets(fams map[string]*dto.MetricFamily, name string, keep func(*dto.Metric) bool) map[float64]float64 {
	out := map[float64]float64{}
	f := fams[name]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		if keep != nil && !keep(m) {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			out[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	return out
}

// samples counts a histogram family's observations whose labels keep says
// to keep (nil keeps all).
func samples(fams map[string]*dto.MetricFamily, name string, keep func(*dto.Metric) bool) float64 {
	n := 0.0
	for _, m := range fams[name].GetMetric() {
		if keep == nil || keep(m) {
			n += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return n
}

// histogramQuantile is Prometheus' histogram_quantile over the
// difference of two cumulative bucket sets (linear within a bucket).
func histogramQuantile(q float64, before, after map[float64]float64) float64 {
	bounds := make([]float64, 0, len(after))
	for le := range after {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return math.NaN()
	}
	counts := make([]float64, len(bounds))
	for i, le := range bounds {
		counts[i] = after[le] - before[le]
	}
	total := counts[len(counts)-1]
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	lower, prev := 0.0, 0.0
	for i, le := range bounds {
		if counts[i] >= rank {
			if math.IsInf(le, 1) {
				return lower
			}
			if counts[i] == prev {
				return le
			}
			return lower + (le-lower)*(rank-prev)/(counts[i]-prev)
		}
		lower, prev = le, counts[i]
	}
	return bounds[len(bounds)-1]
}

func writeVerb(m *dto.Metric) bool {
	switch strings.ToUpper(label(m, "verb")) {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "CREATE", "UPDATE":
		return true
	}
	return false
}

// fromScrapes fills the figures the metrics give over the window between
// two scrapes.
func (f *Figures) fromScrapes(before, after Scrape) {
	secs := after.At.Sub(before.At).Seconds()
	if secs <= 0 {
		return
	}
	ab, aa := families(before.APIServer), families(after.APIServer)
	f.APIRequests = (sum(aa, "apiserver_request_total", nil) - sum(ab, "apiserver_request_total", nil)) / secs
	if p := histogramQuantile(0.99, buckets(ab, "apiserver_request_duration_seconds", writeVerb), buckets(aa, "apiserver_request_duration_seconds", writeVerb)); !math.IsNaN(p) {
		f.APIWriteP99 = time.Duration(p * float64(time.Second))
	}
	cb, ca := families(before.Controller), families(after.Controller)
	f.ControllerWrites = map[Request]float64{}
	kb := byKind(cb, "snug_controller_api_requests_total")
	for r, n := range byKind(ca, "snug_controller_api_requests_total") {
		if r.Write() && n > kb[r] {
			f.ControllerWrites[r] = (n - kb[r]) / secs
		}
	}
	f.Reconciles = (sum(ca, "snug_controller_reconciles_total", nil) - sum(cb, "snug_controller_reconciles_total", nil)) / secs
	const rd = "snug_controller_reconcile_duration_seconds"
	if p := histogramQuantile(0.99, buckets(cb, rd, nil), buckets(ca, rd, nil)); !math.IsNaN(p) {
		f.ReconcileP99 = time.Duration(p * float64(time.Second))
	}
	// The policies' queues (one, "snugpolicy", or one per concern,
	// "snugpolicy_<concern>"): how long a policy waited there before a
	// worker took it (client-go's workqueue metrics), over all of them,
	// and their depth at the end, summed.
	const qd = "workqueue_queue_duration_seconds"
	policies := func(m *dto.Metric) bool { return strings.HasPrefix(label(m, "name"), "snugpolicy") }
	if p := histogramQuantile(0.99, buckets(cb, qd, policies), buckets(ca, qd, policies)); !math.IsNaN(p) {
		f.QueueWaitP99 = time.Duration(p * float64(time.Second))
	}
	f.QueueDepth = sum(ca, "workqueue_depth", policies)
	f.ControllerCPU = (sum(ca, "process_cpu_seconds_total", nil) - sum(cb, "process_cpu_seconds_total", nil)) / secs
	f.ControllerRSS = sum(ca, "process_resident_memory_bytes", nil)
	eb, ea := families(before.Etcd), families(after.Etcd)
	const db = "etcd_mvcc_db_total_size_in_use_in_bytes"
	f.EtcdBytes = sum(ea, db, nil)
	// What the API server sent etcd: every write's whole object (a new
	// revision), and the reads' small requests.
	const rx = "etcd_network_client_grpc_received_bytes_total"
	f.EtcdWrittenPerHour = (sum(ea, rx, nil) - sum(eb, rx, nil)) / secs * 3600
	f.ObjectBytes = meanSizes(aa)
}

// meanSizes is each resource's mean object size in bytes, as its watch
// events carried it (apiserver_watch_events_sizes, since the API server
// started); a resource nobody watches (events, in the lab) has the mean
// body of its creates instead (apiserver_request_body_size_bytes).
func meanSizes(fams map[string]*dto.MetricFamily) map[string]float64 {
	mean := func(family string, keep func(*dto.Metric) bool) map[string]float64 {
		out, n := map[string]float64{}, map[string]float64{}
		for _, m := range fams[family].GetMetric() {
			if keep != nil && !keep(m) {
				continue
			}
			r := label(m, "resource")
			out[r] += m.GetHistogram().GetSampleSum()
			n[r] += float64(m.GetHistogram().GetSampleCount())
		}
		for r := range out {
			if n[r] == 0 {
				delete(out, r)
				continue
			}
			out[r] /= n[r]
		}
		return out
	}
	out := mean("apiserver_watch_events_sizes", nil)
	for r, v := range mean("apiserver_request_body_size_bytes", func(m *dto.Metric) bool { return label(m, "verb") == "create" }) {
		if _, ok := out[r]; !ok {
			out[r] = v
		}
	}
	return out
}

// notStored are the resources whose writes etcd never sees: reviews.
var notStored = map[string]bool{
	"tokenreviews": true, "subjectaccessreviews": true, "selfsubjectaccessreviews": true,
	"localsubjectaccessreviews": true, "selfsubjectreviews": true, "selfsubjectrulesreviews": true,
}

// EtcdBytesPerHour estimates the bytes that writes at rates put into etcd
// per hour: each create, update or patch stores the whole object again
// (a new revision, until compaction), at its resource's mean size in
// sizes. Reviews store nothing; deletes only a tombstone, counted as
// nothing. unsized lists the stored resources written without a size in
// sizes, whose writes the total leaves out.
func EtcdBytesPerHour(sizes map[string]float64, rates ...map[Request]float64) (total float64, unsized []string) {
	for _, m := range rates {
		for r, v := range m {
			if r.Verb == "delete" || r.Verb == "deletecollection" || v == 0 {
				continue
			}
			res, _, _ := strings.Cut(r.Resource, "/")
			if notStored[res] {
				continue
			}
			size, ok := sizes[res]
			if !ok && !slices.Contains(unsized, res) {
				unsized = append(unsized, res)
			}
			total += v * 3600 * size
		}
	}
	slices.Sort(unsized)
	return total, unsized
}

// Fit is a least-squares line y = A + B*x.
type Fit struct{ A, B float64 }

// At is the line's value at x.
func (l Fit) At(x float64) float64 { return l.A + l.B*x }

// FitLine fits y against x by least squares; with one point, a line
// through it and the origin.
func FitLine(xs, ys []float64) Fit {
	n := float64(len(xs))
	switch len(xs) {
	case 0:
		return Fit{}
	case 1:
		if xs[0] == 0 {
			return Fit{A: ys[0]}
		}
		return Fit{B: ys[0] / xs[0]}
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return Fit{A: sy / n}
	}
	b := (n*sxy - sx*sy) / d
	return Fit{A: (sy - b*sx) / n, B: b}
}

// column is one figure of the table: how to read it off a run, and how it
// is shown.
type column struct {
	name   string
	get    func(Figures) float64
	format func(float64) string
	// fit: extrapolate it linearly in the node count.
	fit bool
}

func num(prec int) func(float64) string {
	return func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
}

func seconds(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "s" }

func mib(v float64) string { return strconv.FormatFloat(v/(1<<20), 'f', 1, 64) + "Mi" }

var columns = []column{
	{"pods", func(f Figures) float64 { return float64(f.Pods) }, num(0), true},
	{"policies", func(f Figures) float64 { return float64(f.Policies) }, num(0), true},
	{"agent writes/s", func(f Figures) float64 { return WritesPerSec(f.AgentWrites) }, num(2), true},
	{"controller writes/s", func(f Figures) float64 { return WritesPerSec(f.ControllerWrites) }, num(2), true},
	{"busiest node writes/min", func(f Figures) float64 { return f.BusiestNodeWritesPerMin }, num(1), false},
	{"API server req/s", func(f Figures) float64 { return f.APIRequests }, num(1), true},
	{"API write p99", func(f Figures) float64 { return f.APIWriteP99.Seconds() }, seconds, false},
	{"reconciles/s", func(f Figures) float64 { return f.Reconciles }, num(2), true},
	{"reconcile p99", func(f Figures) float64 { return f.ReconcileP99.Seconds() }, seconds, false},
	{"policy queue wait p99", func(f Figures) float64 { return f.QueueWaitP99.Seconds() }, seconds, false},
	{"policy queue depth", func(f Figures) float64 { return f.QueueDepth }, num(0), false},
	{"controller cores", func(f Figures) float64 { return f.ControllerCPU }, num(3), true},
	{"controller RSS", func(f Figures) float64 { return f.ControllerRSS }, mib, true},
	{"snug's etcd bytes/h (est)", func(f Figures) float64 { return f.SnugEtcdPerHour }, mib, true},
	{"etcd written/h (all)", func(f Figures) float64 { return f.EtcdWrittenPerHour }, mib, true},
	{"step applied", func(f Figures) float64 { return float64(f.Applied) }, num(0), false},
	{"step p50", stepLatency(func(f Figures) time.Duration { return f.StepP50 }), seconds, false},
	{"step p99", stepLatency(func(f Figures) time.Duration { return f.StepP99 }), seconds, false},
	{"step to 99%", func(f Figures) float64 {
		if f.To99 == 0 { // fewer than 99 % of the stepped pods grew
			return math.NaN()
		}
		return f.To99.Seconds()
	}, seconds, false},
	{"patched -> applied p50", stepLatency(func(f Figures) time.Duration { return f.PatchedP50 }), seconds, false},
	{"patched -> applied p99", stepLatency(func(f Figures) time.Duration { return f.PatchedP99 }), seconds, false},
}

// stepLatency reads a latency of the step, none (shown "-") when no stepped
// pod grew.
func stepLatency(d func(Figures) time.Duration) func(Figures) float64 {
	return func(f Figures) float64 {
		if f.Applied == 0 {
			return math.NaN()
		}
		return d(f).Seconds()
	}
}

// cell shows v, "-" where nothing was measured (NaN).
func cell(c column, v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return c.format(v)
}

// phaseColumns are the figures of the phases after the step that the runs
// ran: per creation rate, the webhook's and the creates' latencies; the
// rollout's; the leader kill's.
func phaseColumns(runs []Figures) []column {
	var out []column
	var rates []int
	rollout, failover := false, false
	for _, r := range runs {
		for _, c := range r.Creations {
			if !slices.Contains(rates, c.Rate) {
				rates = append(rates, c.Rate)
			}
		}
		rollout = rollout || r.Rollout != nil
		failover = failover || r.Failover != nil
	}
	slices.Sort(rates)
	msec := func(v float64) string { return strconv.FormatFloat(v*1000, 'f', 1, 64) + "ms" }
	msec2 := func(v float64) string { return strconv.FormatFloat(v*1000, 'f', 2, 64) + "ms" }
	pct := func(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" }
	for _, rate := range rates {
		at := func(get func(Creation) float64) func(Figures) float64 {
			return func(f Figures) float64 {
				for _, c := range f.Creations {
					if c.Rate == rate {
						return get(c)
					}
				}
				return math.NaN()
			}
		}
		// The webhook's figures only where the API server timed calls to
		// it: none would read as 0 ms.
		called := func(get func(Creation) float64) func(Creation) float64 {
			return func(c Creation) float64 {
				if c.Calls <= 0 {
					return math.NaN()
				}
				return get(c)
			}
		}
		handled := func(get func(Creation) float64) func(Creation) float64 {
			return func(c Creation) float64 {
				if c.HandlerCalls <= 0 {
					return math.NaN()
				}
				return get(c)
			}
		}
		out = append(out,
			column{fmt.Sprintf("%d/s: created/s", rate), at(func(c Creation) float64 { return c.Achieved }), num(1), false},
			column{fmt.Sprintf("%d/s: webhook calls", rate), at(func(c Creation) float64 { return c.Calls }), num(0), false},
			column{fmt.Sprintf("%d/s: failed creates", rate), at(func(c Creation) float64 { return float64(c.Failed) }), num(0), false},
			column{fmt.Sprintf("%d/s: webhook p50", rate), at(called(func(c Creation) float64 { return c.WebhookP50.Seconds() })), msec, false},
			column{fmt.Sprintf("%d/s: webhook p99", rate), at(called(func(c Creation) float64 { return c.WebhookP99.Seconds() })), msec, false},
			column{fmt.Sprintf("%d/s: webhook <=25ms", rate), at(called(func(c Creation) float64 { return c.Under25ms })), pct, false},
			column{fmt.Sprintf("%d/s: handler p99", rate), at(handled(func(c Creation) float64 { return c.HandlerP99.Seconds() })), msec2, false},
			column{fmt.Sprintf("%d/s: create p99", rate), at(func(c Creation) float64 { return c.CreateP99.Seconds() }), msec, false},
		)
	}
	if rollout {
		get := func(v func(*Rollout) float64) func(Figures) float64 {
			return func(f Figures) float64 {
				if f.Rollout == nil {
					return math.NaN()
				}
				return v(f.Rollout)
			}
		}
		out = append(out,
			column{"rollout: all ready", get(func(r *Rollout) float64 { return r.Ready.Seconds() }), seconds, false},
			column{"rollout: writes/node", get(func(r *Rollout) float64 { return r.WritesPerNode }), num(2), false},
		)
	}
	if failover {
		get := func(v func(*Failover) float64) func(Figures) float64 {
			return func(f Figures) float64 {
				if f.Failover == nil {
					return math.NaN()
				}
				return v(f.Failover)
			}
		}
		out = append(out,
			column{"leader kill: takeover", get(func(r *Failover) float64 { return r.Takeover.Seconds() }), seconds, false},
			column{"leader kill: status lag", get(func(r *Failover) float64 { return r.StatusLag.Seconds() }), seconds, false},
		)
	}
	return out
}

// Extrapolated are the node counts the table extrapolates to.
var Extrapolated = []int{1000, 5000}

// PrintTable writes the runs, one row per node count, then each linear
// figure's fit extrapolated to 1,000 and 5,000 nodes, and the writes by
// kind of the largest run.
func PrintTable(out io.Writer, runs []Figures) {
	fmt.Fprintf(out, "%-26s", "nodes")
	for _, r := range runs {
		fmt.Fprintf(out, "%12d", r.Nodes)
	}
	for _, n := range Extrapolated {
		fmt.Fprintf(out, "%12s", fmt.Sprintf("~%d", n))
	}
	fmt.Fprintln(out)
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = float64(r.Nodes)
	}
	for _, c := range append(slices.Clone(columns), phaseColumns(runs)...) {
		fmt.Fprintf(out, "%-26s", c.name)
		ys := make([]float64, len(runs))
		for i, r := range runs {
			ys[i] = c.get(r)
			fmt.Fprintf(out, "%12s", cell(c, ys[i]))
		}
		if c.fit {
			l := FitLine(xs, ys)
			for _, n := range Extrapolated {
				fmt.Fprintf(out, "%12s", cell(c, l.At(float64(n))))
			}
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out, "(~N: the least-squares line through the runs, in the node count, at N nodes; 30 pods per node as run)")
	if len(runs) == 0 {
		return
	}
	last := runs[len(runs)-1]
	fmt.Fprintf(out, "writes by kind at %d nodes (per second):\n", last.Nodes)
	for _, who := range []struct {
		name string
		m    map[Request]float64
	}{{"agents", last.AgentWrites}, {"controller", last.ControllerWrites}} {
		for _, r := range sortedKinds(who.m) {
			fmt.Fprintf(out, "  %-10s %-7s %-28s %8.3f\n", who.name, r.Verb, r.Resource, who.m[r])
		}
	}
}
