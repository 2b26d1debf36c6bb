package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// GoogleWindow is the length of one instance_usage row of Google's
// cluster-data 2019: 5 minutes.
const GoogleWindow = 300

// GoogleMaxPeak is the longest the drawn mode holds a window's memory
// peak (see GoogleOptions.Hold).
const GoogleMaxPeak = 30

// GoogleOptions scale, draw and window a Google cluster-data 2019 trace.
type GoogleOptions struct {
	// CPUMillis and MemBytes are what a normalised 1.0 stands for: the
	// trace divides cpu and memory by the largest machine's.
	CPUMillis, MemBytes float64
	// Hold holds each window's mean cpu and its peak memory for the
	// window's 300 s: the pessimistic bound for memory (the peak all the
	// time) and a flat cpu. Otherwise the seconds are drawn:
	//   - cpu: the window's 300 seconds are the 300 quantiles (one random
	//     point in each 1/300 of probability) of the distribution the
	//     row's percentiles of its 1-second samples give (p0, p10, ...,
	//     p90, p91, ..., p99 and max_cpu_usage as p100, linear between
	//     them), in a random order: the window has the published
	//     percentiles; the order within it is not published.
	//   - memory: the window's mean everywhere but one contiguous peak at
	//     the window's max, 1 to GoogleMaxPeak seconds long at a random
	//     place, the other seconds lowered so that the window's mean is the
	//     published one: both published figures are kept, and a working
	//     set is taken to move little within 5 minutes but for a peak.
	Hold bool
	// Seed seeds the drawn mode; each task draws from its own stream.
	Seed uint64
	// Hours caps each job's trace at this many hours (0: all of it).
	Hours float64
	// CPULimit gives each task a CPU limit at its Borg CPU limit, as well
	// as a request (Guaranteed pods). Off, the task has the request alone
	// (Burstable): Borg lets most tasks use more CPU than their limit when
	// the machine has it idle, and the trace shows it (a window's maximum
	// second above the limit is common), which a CFS quota at that limit
	// would forbid. Memory limits are kept either way: the kernel enforces
	// them in Borg too.
	CPULimit bool
}

// googleRow is one instance_usage row, normalised units.
type googleRow struct {
	t                  float64 // window start, seconds
	avgCPU, maxCPU     float64
	avgMem, maxMem     float64
	pct                [21]float64 // p0..p90 by 10, p91..p99, max
	cpuLimit, memLimit float64
}

// googleQuantiles are the probabilities of googleRow.pct.
var googleQuantiles = [21]float64{0, .1, .2, .3, .4, .5, .6, .7, .8, .9, .91, .92, .93, .94, .95, .96, .97, .98, .99, 1}

var googlePctColumns = []string{"p0_cpu_usage", "p10_cpu_usage", "p20_cpu_usage", "p30_cpu_usage", "p40_cpu_usage",
	"p50_cpu_usage", "p60_cpu_usage", "p70_cpu_usage", "p80_cpu_usage", "p90_cpu_usage", "p91_cpu_usage",
	"p92_cpu_usage", "p93_cpu_usage", "p94_cpu_usage", "p95_cpu_usage", "p96_cpu_usage", "p97_cpu_usage",
	"p98_cpu_usage", "p99_cpu_usage"}

// ReadGoogle reads Google cluster-data 2019 instance_usage rows as the
// public repository muse-research-lab/cloud-traces-comparison publishes
// them (docs/demo/input-*/JOB/TASK-START-END.csv, MIT licence): a header
// naming the columns (time in microseconds, collection_id,
// instance_index, avg/max cpu and memory, p0..p99 of the window's
// 1-second cpu samples, cpu_limit, memory_limit; the others are ignored),
// one row per task and 5-minute window. Files may be concatenated: a
// repeated header is skipped.
//
// Each job (collection_id) becomes one trace, its tasks the pods of one
// workload. A trace covers the longest stretch in which the most of the
// job's tasks run (capped at o.Hours); a task that does not run through
// it is left out, and Trace.Note says so. A missing window holds the one
// before. Each task starts with its row's cpu_limit and memory_limit
// (Borg's reservation) as request and limit, scaled.
func ReadGoogle(r io.Reader, name string, o GoogleOptions) ([]*Trace, error) {
	if o.CPUMillis <= 0 || o.MemBytes <= 0 {
		return nil, errors.New("reading google trace: the cpu and memory scales must be positive")
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading google trace: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	want := append([]string{"time", "collection_id", "instance_index", "avg_cpu_usage", "max_cpu_usage",
		"avg_memory_usage", "max_memory_usage", "cpu_limit", "memory_limit"}, googlePctColumns...)
	for _, h := range want {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("reading google trace: no column %q (not a cloud-traces-comparison instance_usage CSV?)", h)
		}
	}
	type task struct {
		job, index string
		rows       []googleRow
	}
	tasks := map[string]*task{}
	line := 1
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("reading google trace: line %d: %w", line, err)
		}
		if len(rec) != len(head) {
			return nil, fmt.Errorf("reading google trace: line %d: %d columns, want %d", line, len(rec), len(head))
		}
		if rec[col["time"]] == "time" {
			continue // the header of a concatenated file
		}
		f := func(h string) float64 {
			v, perr := strconv.ParseFloat(strings.TrimSpace(rec[col[h]]), 64)
			if perr != nil {
				err = errors.Join(err, fmt.Errorf("column %s: %w", h, perr))
			}
			return v
		}
		g := googleRow{t: f("time") / 1e6, avgCPU: f("avg_cpu_usage"), maxCPU: f("max_cpu_usage"),
			avgMem: f("avg_memory_usage"), maxMem: f("max_memory_usage"), cpuLimit: f("cpu_limit"), memLimit: f("memory_limit")}
		for i, h := range googlePctColumns {
			g.pct[i] = f(h)
		}
		g.pct[20] = g.maxCPU
		if err != nil {
			return nil, fmt.Errorf("reading google trace: line %d: %w", line, err)
		}
		if !g.usable() {
			continue
		}
		job, index := strings.TrimSpace(rec[col["collection_id"]]), strings.TrimSpace(rec[col["instance_index"]])
		k := job + "-" + index
		tk := tasks[k]
		if tk == nil {
			tk = &task{job: job, index: index}
			tasks[k] = tk
		}
		tk.rows = append(tk.rows, g)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("reading google trace: %w", ErrNoRows)
	}
	jobs := map[string][]*task{}
	for _, tk := range tasks {
		slices.SortStableFunc(tk.rows, func(a, b googleRow) int { return cmpFloat(a.t, b.t) })
		jobs[tk.job] = append(jobs[tk.job], tk)
	}
	var out []*Trace
	for _, job := range sortedKeys(jobs) {
		ts := jobs[job]
		slices.SortFunc(ts, func(a, b *task) int { return cmpIndex(a.index, b.index) })
		spans := make([][2]float64, len(ts))
		for i, tk := range ts {
			spans[i] = [2]float64{tk.rows[0].t, tk.rows[len(tk.rows)-1].t + GoogleWindow}
		}
		from, to := busiest(spans)
		if o.Hours > 0 {
			to = math.Min(to, from+o.Hours*3600)
		}
		n := int(to - from)
		tr := &Trace{Name: name + "/" + job, Seconds: n}
		for i, tk := range ts {
			if spans[i][0] > from || spans[i][1] < to {
				continue
			}
			c := googleContainer(tk.rows, from, n, o, name+"/"+job+"-"+tk.index)
			tr.Pods = append(tr.Pods, Pod{Name: "task-" + tk.index, Containers: []Container{c}})
		}
		tr.Note = fmt.Sprintf("google 2019 job %s: hours %.1f-%.1f of the trace, %d of its %d tasks (the others do not run through them); cpu 1.0 = %.0fm, memory 1.0 = %.0f MiB; %s; %s",
			job, from/3600, to/3600, len(tr.Pods), len(ts), o.CPUMillis, o.MemBytes/mi, map[bool]string{true: "each window held", false: "seconds drawn"}[o.Hold],
			map[bool]string{true: "cpu limit = request = Borg's limit", false: "cpu request = Borg's limit, no cpu limit"}[o.CPULimit])
		if err := tr.Validate(); err != nil {
			return nil, fmt.Errorf("reading google trace: %w", err)
		}
		out = append(out, tr)
	}
	return out, nil
}

// usable says a row's figures are numbers a container can have: none
// negative or NaN, percentiles within [0, max].
func (g googleRow) usable() bool {
	for _, v := range append(g.pct[:], g.avgCPU, g.avgMem, g.maxMem, g.cpuLimit, g.memLimit, g.t) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return false
		}
	}
	return true
}

// googleContainer builds one task's container over [from, from+n) seconds.
func googleContainer(rows []googleRow, from float64, n int, o GoogleOptions, stream string) Container {
	first := rows[0]
	for _, g := range rows {
		if g.t > from {
			break
		}
		first = g
	}
	cpuLim, memLim := int64(math.Round(first.cpuLimit*o.CPUMillis)), int64(math.Round(first.memLimit*o.MemBytes))
	c := Container{Name: "app", CPURequestMillis: cpuLim, MemRequestBytes: memLim, MemLimitBytes: memLim,
		CPUMillis: make([]float64, n), MemBytes: make([]float64, n)}
	if o.CPULimit {
		c.CPULimitMillis = cpuLim
	}
	h := fnv.New64a()
	h.Write([]byte(stream))
	rnd := rand.New(rand.NewPCG(o.Seed, h.Sum64()))
	// A row holds from its time to the next row's (the first of a task
	// may be short: windows are aligned to 5 minutes, tasks start
	// anywhere); a gap holds the row before, drawn again every 5 minutes.
	var cpu, mem [GoogleWindow]float64
	k, drawnAt := -1, math.Inf(-1)
	for s := range n {
		at := from + float64(s)
		moved := false
		for k+1 < len(rows) && rows[k+1].t <= at {
			k, moved = k+1, true
		}
		g := rows[max(k, 0)]
		if moved || at-drawnAt >= GoogleWindow {
			drawnAt = math.Max(g.t, at-math.Mod(at-g.t, GoogleWindow))
			if o.Hold {
				for i := range GoogleWindow {
					cpu[i], mem[i] = g.avgCPU, math.Max(g.maxMem, g.avgMem)
				}
			} else {
				drawCPU(&cpu, g, rnd)
				drawMem(&mem, g, rnd)
			}
		}
		i := min(int(at-drawnAt), GoogleWindow-1)
		c.CPUMillis[s], c.MemBytes[s] = cpu[i]*o.CPUMillis, mem[i]*o.MemBytes
	}
	return c
}

// drawCPU fills a window with the 300 stratified quantiles of the row's
// percentile distribution, shuffled.
func drawCPU(out *[GoogleWindow]float64, g googleRow, r *rand.Rand) {
	pct := g.pct
	for i := 1; i < len(pct); i++ {
		pct[i] = math.Max(pct[i], pct[i-1]) // monotone, as quantiles are
	}
	for i := range out {
		u := (float64(i) + r.Float64()) / GoogleWindow
		j := 1
		for j < len(googleQuantiles)-1 && googleQuantiles[j] < u {
			j++
		}
		q0, q1 := googleQuantiles[j-1], googleQuantiles[j]
		out[i] = pct[j-1] + (pct[j]-pct[j-1])*(u-q0)/(q1-q0)
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
}

// drawMem fills a window with its mean but for one peak at its max, the
// rest lowered to keep the mean.
func drawMem(out *[GoogleWindow]float64, g googleRow, r *rand.Rand) {
	avg, peak := g.avgMem, math.Max(g.maxMem, g.avgMem)
	d := 1 + r.IntN(GoogleMaxPeak)
	// base*(W-d) + peak*d = avg*W; base >= 0 bounds d.
	if peak > 0 {
		d = min(d, max(1, int(GoogleWindow*avg/peak)))
	}
	base := math.Max(0, (avg*GoogleWindow-peak*float64(d))/float64(GoogleWindow-d))
	at := r.IntN(GoogleWindow - d + 1)
	for i := range out {
		out[i] = base
		if i >= at && i < at+d {
			out[i] = peak
		}
	}
}

// busiest returns the longest stretch in which the most spans overlap.
func busiest(spans [][2]float64) (from, to float64) {
	type ev struct {
		t float64
		d int
	}
	var evs []ev
	for _, s := range spans {
		evs = append(evs, ev{s[0], 1}, ev{s[1], -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if c := cmpFloat(a.t, b.t); c != 0 {
			return c
		}
		return a.d - b.d // ends before starts at the same time
	})
	best, bestLen, live := 0, -1.0, 0
	for i, e := range evs {
		live += e.d
		if i+1 == len(evs) {
			break
		}
		next := evs[i+1].t
		if live > best || live == best && next-e.t > bestLen {
			best, bestLen, from, to = live, next-e.t, e.t, next
		}
	}
	return from, to
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpIndex orders task indices numerically when they are numbers.
func cmpIndex(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x - y
	}
	return strings.Compare(a, b)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
