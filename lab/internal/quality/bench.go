package quality

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/snug-dev/snug/lab/internal/quality/trace"
)

// Sizers are the replayed sizing policies, in table order.
var Sizers = []string{"snug", "vpa", "static", "krr"}

// Result is one trace's replays.
type Result struct {
	Trace *trace.Trace
	Runs  map[string]*Metrics
	// Held is true for a trace of the held-out half.
	Held bool
}

// RunTrace replays one trace under every sizer: static first, whose usage
// KRR's fixed recommendation is computed from.
func RunTrace(tr *trace.Trace, vpaBin string) (*Result, error) {
	res := &Result{Trace: tr, Runs: map[string]*Metrics{}}
	st, err := Run(tr, "static", Env{})
	if err != nil {
		return nil, err
	}
	res.Runs["static"] = st
	env := Env{VPABinary: vpaBin, KRR: KRR(st)}
	st.usage = nil
	for _, name := range []string{"snug", "vpa", "krr"} {
		if name == "vpa" && vpaBin == "" {
			continue
		}
		m, err := Run(tr, name, env)
		if err != nil {
			return nil, err
		}
		res.Runs[name] = m
	}
	return res, nil
}

// RunAll replays traces on workers goroutines, keeping their order.
func RunAll(ctx context.Context, traces []*trace.Trace, vpaBin string, workers int) ([]*Result, error) {
	out := make([]*Result, len(traces))
	errs := make([]error, len(traces))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = RunTrace(traces[i], vpaBin)
			}
		}()
	}
loop:
	for i := range traces {
		select {
		case next <- i:
		case <-ctx.Done():
			break loop
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// figure is one row of a table.
type figure struct {
	name string
	get  func(m *Metrics) float64
	unit string // "%": shown as a percentage
}

var figures = []figure{
	{"cpu slack (request)", func(m *Metrics) float64 { return m.CPUSlack }, "%"},
	{"mem slack (request)", func(m *Metrics) float64 { return m.MemSlack }, "%"},
	{"cpu slack, mean of traces", func(m *Metrics) float64 { return m.CPUSlackMean }, "%"},
	{"mem slack, mean of traces", func(m *Metrics) float64 { return m.MemSlackMean }, "%"},
	{"cpu slack (limit)", func(m *Metrics) float64 { return m.CPULimitSlack }, "%"},
	{"mem slack (limit)", func(m *Metrics) float64 { return m.MemLimitSlack }, "%"},
	{"starved core-s", func(m *Metrics) float64 { return m.StarvedCoreSeconds }, ""},
	{"throttled seconds", func(m *Metrics) float64 { return m.ThrottledShare }, "%"},
	{"oom kills", func(m *Metrics) float64 { return float64(m.OOMKills) }, ""},
	{"oom kills caused", func(m *Metrics) float64 { return float64(m.OOMKillsCaused) }, ""},
	{"resizes/pod-hour", func(m *Metrics) float64 { return m.ResizesPerPodHour }, ""},
	{"starvation ended p50 s", func(m *Metrics) float64 { return m.EndedP50() }, ""},
	{"starvation ended max s", func(m *Metrics) float64 { return m.EndedMax() }, ""},
	{"min mem headroom", func(m *Metrics) float64 { return m.MinMemHeadroom }, "%"},
	{"cpu request core-h", func(m *Metrics) float64 { return m.CPURequestCoreHours }, ""},
	{"mem request GiB-h", func(m *Metrics) float64 { return m.MemRequestGiBHours }, ""},
}

func cell(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case unit == "%":
		return fmt.Sprintf("%.1f%%", 100*v)
	case v != 0 && math.Abs(v) < 10:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func ratio(a, b float64) string {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return "-"
	case b == 0 && a == 0:
		return "="
	case b == 0:
		return "inf"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// WriteTable prints one table: a row per figure, a column per sizer and
// snug/vpa.
func WriteTable(w io.Writer, title string, runs map[string]*Metrics) {
	fmt.Fprintln(w, title)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprint(tw, "FIGURE")
	for _, s := range Sizers {
		fmt.Fprintf(tw, "\t%s", s)
	}
	fmt.Fprintln(tw, "\tsnug/vpa")
	for _, f := range figures {
		fmt.Fprint(tw, f.name)
		for _, s := range Sizers {
			v := math.NaN()
			if m := runs[s]; m != nil {
				v = f.get(m)
			}
			fmt.Fprintf(tw, "\t%s", cell(v, f.unit))
		}
		r := "-"
		if a, b := runs["snug"], runs["vpa"]; a != nil && b != nil {
			r = ratio(f.get(a), f.get(b))
		}
		fmt.Fprintf(tw, "\t%s\n", r)
	}
	tw.Flush()
	if m := runs["snug"]; m != nil && len(m.Reasons) > 0 {
		fmt.Fprintf(w, "snug's changes by reason: %s\n", reasons(m.Reasons))
	}
	fmt.Fprintln(w)
}

// reasons lists a Reasons tally, most first.
func reasons(t map[string]int) string {
	ks := make([]string, 0, len(t))
	for k := range t {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int {
		if t[a] != t[b] {
			return t[b] - t[a]
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for i, k := range ks {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, t[k])
	}
	return b.String()
}

// WriteSummary prints one line per trace: snug's and VPA's main figures
// side by side.
func WriteSummary(w io.Writer, title string, results []*Result) {
	fmt.Fprintln(w, title)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TRACE\tCPU SLACK snug|vpa\tMEM SLACK snug|vpa\tSTARVED CORE-S snug|vpa\tOOM (CAUSED) snug|vpa\tRESIZES/POD-H snug|vpa\tENDED P50 S snug|vpa")
	for _, r := range results {
		s, v := r.Runs["snug"], r.Runs["vpa"]
		if s == nil || v == nil {
			continue
		}
		pair := func(f func(*Metrics) float64, unit string) string {
			return cell(f(s), unit) + " | " + cell(f(v), unit)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Trace.Name,
			pair(func(m *Metrics) float64 { return m.CPUSlack }, "%"),
			pair(func(m *Metrics) float64 { return m.MemSlack }, "%"),
			pair(func(m *Metrics) float64 { return m.StarvedCoreSeconds }, ""),
			fmt.Sprintf("%d (%d) | %d (%d)", s.OOMKills, s.OOMKillsCaused, v.OOMKills, v.OOMKillsCaused),
			pair(func(m *Metrics) float64 { return m.ResizesPerPodHour }, ""),
			pair((*Metrics).EndedP50, ""))
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// Overall folds the results of several traces into one Metrics per sizer:
// slacks and the throttled share weighted by container-seconds, sums of
// starved core-seconds, OOM kills and resizes, resizes per pod-hour over
// all pod-hours, the median over all steps.
func Overall(results []*Result) map[string]*Metrics {
	out := map[string]*Metrics{}
	for _, s := range Sizers {
		var sum acc
		sum.minHeadroom = math.Inf(1)
		m := &Metrics{Sizer: s, Reasons: map[string]int{}}
		podHours := 0.0
		var ended []float64
		n := 0
		cpuMean, memMean := 0.0, 0.0
		for _, r := range results {
			x := r.Runs[s]
			if x == nil {
				continue
			}
			n++
			cpuMean += x.CPUSlack
			memMean += x.MemSlack
			a := x.acc
			sum.cpuReq += a.cpuReq
			sum.cpuSlack += a.cpuSlack
			sum.memReq += a.memReq
			sum.memSlack += a.memSlack
			sum.cpuLim += a.cpuLim
			sum.cpuLimSlack += a.cpuLimSlack
			sum.memLim += a.memLim
			sum.memLimSlack += a.memLimSlack
			sum.running += a.running
			sum.throttled += a.throttled
			sum.minHeadroom = math.Min(sum.minHeadroom, a.minHeadroom)
			m.StarvedCoreSeconds += x.StarvedCoreSeconds
			m.OOMKills += x.OOMKills
			m.OOMKillsCaused += x.OOMKillsCaused
			for k, v := range x.Reasons {
				m.Reasons[k] += v
			}
			m.Resizes += x.Resizes
			m.CPURequestCoreHours += x.CPURequestCoreHours
			m.MemRequestGiBHours += x.MemRequestGiBHours
			podHours += float64(x.Pods) * float64(x.Seconds) / 3600
			for _, e := range x.Ended {
				if math.IsNaN(e) {
					e = float64(x.Seconds)
				}
				ended = append(ended, e)
			}
		}
		if n == 0 {
			continue
		}
		div := func(a, b float64) float64 {
			if b <= 0 {
				return math.NaN()
			}
			return a / b
		}
		m.CPUSlack, m.MemSlack = div(sum.cpuSlack, sum.cpuReq), div(sum.memSlack, sum.memReq)
		m.CPUSlackMean, m.MemSlackMean = cpuMean/float64(n), memMean/float64(n)
		m.CPULimitSlack, m.MemLimitSlack = div(sum.cpuLimSlack, sum.cpuLim), div(sum.memLimSlack, sum.memLim)
		m.ThrottledShare = div(float64(sum.throttled), float64(sum.running))
		m.ResizesPerPodHour = div(float64(m.Resizes), podHours)
		m.MinMemHeadroom = sum.minHeadroom
		m.Ended = ended
		m.Seconds = 1
		out[s] = m
	}
	return out
}

// Goals prints issue 16's goals against the held-out half.
func Goals(w io.Writer, held []*Result) {
	o := Overall(held)
	s, v := o["snug"], o["vpa"]
	if s == nil || v == nil {
		return
	}
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintln(w, "goals over the held-out half:")
	fmt.Fprintf(w, "  cpu slack <= 0.7x VPA's: %s (%s)\n", ratio(s.CPUSlack, v.CPUSlack), met(s.CPUSlack <= 0.7*v.CPUSlack))
	fmt.Fprintf(w, "  mem slack <= 0.7x VPA's: %s (%s)\n", ratio(s.MemSlack, v.MemSlack), met(s.MemSlack <= 0.7*v.MemSlack))
	fmt.Fprintf(w, "  the same, each trace weighing the same: cpu %s (%s), mem %s (%s)\n",
		ratio(s.CPUSlackMean, v.CPUSlackMean), met(s.CPUSlackMean <= 0.7*v.CPUSlackMean), ratio(s.MemSlackMean, v.MemSlackMean), met(s.MemSlackMean <= 0.7*v.MemSlackMean))
	fmt.Fprintf(w, "  starved core-seconds <= 0.5x VPA's: %s (%s)\n", ratio(s.StarvedCoreSeconds, v.StarvedCoreSeconds), met(s.StarvedCoreSeconds <= 0.5*v.StarvedCoreSeconds))
	fmt.Fprintf(w, "  oom kills <= VPA's: %d vs %d (%s)\n", s.OOMKills, v.OOMKills, met(s.OOMKills <= v.OOMKills))
	for _, r := range held {
		if r.Trace.Shape == "noisy" && r.Runs["snug"] != nil {
			x := r.Runs["snug"].ResizesPerPodHour
			fmt.Fprintf(w, "  noisy steady load (%s): %.2f resizes per pod-hour <= 2 (%s)\n", r.Trace.Name, x, met(x <= 2))
		}
	}
}

// Options are snug-lab bench quality's.
type Options struct {
	Shapes    []string
	Seeds     []int64
	TraceFile string
	// TraceFormat is "snug" (snug's trace CSV), "alibaba" or "google".
	TraceFormat string
	Alibaba     trace.AlibabaOptions
	Google      trace.GoogleOptions
	Out         string
	VPASource   string
	Cache       string
	NoVPA       bool
	Workers     int
}

// Bench runs the bench: builds (or finds) vpareplay, generates or reads the
// traces, replays them, prints the tables and writes one SVG per trace.
func Bench(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	start := time.Now()
	vpaBin := ""
	if !o.NoVPA {
		src := o.VPASource
		if src == "" {
			var err error
			if src, err = FindVPASource(); err != nil {
				return err
			}
		}
		var err error
		if vpaBin, err = EnsureVPAReplay(ctx, src, o.Cache, stderr); err != nil {
			return err
		}
	}
	var traces []*trace.Trace
	held := map[*trace.Trace]bool{}
	if o.TraceFile != "" && o.TraceFormat == "google" {
		trs, err := ReadGoogleFiles(o.TraceFile, o.Google)
		if err != nil {
			return err
		}
		traces = append(traces, trs...)
	} else if o.TraceFile != "" {
		f, err := os.Open(o.TraceFile)
		if err != nil {
			return fmt.Errorf("reading the trace: %w", err)
		}
		defer f.Close()
		name := filepath.Base(o.TraceFile)
		var tr *trace.Trace
		if o.TraceFormat == "alibaba" {
			tr, err = trace.ReadAlibaba(f, name, o.Alibaba)
		} else {
			tr, err = trace.ReadSnug(f, name)
		}
		if err != nil {
			return err
		}
		traces = append(traces, tr)
	} else {
		for _, sh := range o.Shapes {
			for _, seed := range o.Seeds {
				tr, err := trace.Generate(sh, seed)
				if err != nil {
					return err
				}
				traces = append(traces, tr)
				for _, h := range trace.HeldOutSeeds {
					held[tr] = held[tr] || seed == h
				}
			}
		}
	}
	results, err := RunAll(ctx, traces, vpaBin, o.Workers)
	if err != nil {
		return err
	}
	if o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return fmt.Errorf("writing the pictures: %w", err)
		}
	}
	var tuning, heldOut []*Result
	for _, r := range results {
		r.Held = held[r.Trace]
		if r.Held {
			heldOut = append(heldOut, r)
		} else {
			tuning = append(tuning, r)
		}
		title := fmt.Sprintf("%s (%s, %d pod(s), %.1f h)", r.Trace.Name, halfName(r.Held, o.TraceFile != ""), len(r.Trace.Pods), float64(r.Trace.Seconds)/3600)
		if r.Trace.Note != "" {
			title += "\n" + r.Trace.Note
		}
		WriteTable(stdout, title, r.Runs)
		if o.Out != "" {
			name := strings.ReplaceAll(r.Trace.Name, "/", "-") + ".svg"
			f, err := os.Create(filepath.Join(o.Out, name))
			if err != nil {
				return fmt.Errorf("writing the pictures: %w", err)
			}
			werr := WriteSVG(f, r.Trace.Name+": demand (black); snug (blue) and VPA (red) usage (thin), request (solid), limit (dashed) of "+r.Trace.Pods[plotPod(r.Trace)].Name+"/"+r.Trace.Pods[0].Containers[0].Name, r.Trace.Seconds, r.Runs, []string{"snug", "vpa"})
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return fmt.Errorf("writing the pictures: %w", werr)
			}
		}
	}
	if len(results) > 1 {
		WriteSummary(stdout, "per trace, snug | vpa", results)
	}
	if len(tuning) > 0 && len(results) > 1 && o.TraceFile == "" {
		WriteTable(stdout, fmt.Sprintf("overall, tuning half (%d traces)", len(tuning)), Overall(tuning))
	}
	if o.TraceFile != "" && len(results) > 0 {
		WriteTable(stdout, fmt.Sprintf("overall, imported (%d traces)", len(results)), Overall(results))
		RealGoals(stdout, results)
		fmt.Fprintln(stdout)
	}
	if len(heldOut) > 0 {
		WriteTable(stdout, fmt.Sprintf("overall, held-out half (%d traces)", len(heldOut)), Overall(heldOut))
		Goals(stdout, heldOut)
		fmt.Fprintln(stdout)
	}
	sizers := len(Sizers)
	if vpaBin == "" {
		sizers--
	}
	fmt.Fprintf(stdout, "replayed %d trace(s) under %d sizers in %.1fs\n", len(results), sizers, time.Since(start).Seconds())
	return nil
}

func halfName(held, imported bool) string {
	switch {
	case imported:
		return "imported"
	case held:
		return "held-out half"
	}
	return "tuning half"
}

// ReadGoogleFiles reads a Google cluster-data 2019 file, or every .csv file
// under a directory (in name order, one job per subdirectory as
// cloud-traces-comparison lays them out), as one stream: one trace per
// job.
func ReadGoogleFiles(path string, o trace.GoogleOptions) ([]*trace.Trace, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading the trace: %w", err)
	}
	files := []string{path}
	if fi.IsDir() {
		files = nil
		err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".csv") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading the trace: %w", err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("reading the trace: no .csv file under %s", path)
		}
	}
	var rs []io.Reader
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("reading the trace: %w", err)
		}
		defer f.Close()
		rs = append(rs, f, strings.NewReader("\n"))
	}
	return trace.ReadGoogle(io.MultiReader(rs...), filepath.Base(filepath.Clean(path)), o)
}

// RealGoals prints the goals on imported (real) traces: snug causes no OOM
// kill and has at most static's; resizes per pod-hour at most 0.5 for the
// median pod and 2 at p95; request slack at most 0.7x VPA's, pooled and as
// the median of per-trace ratios; starved core-seconds at most 0.5x VPA's.
func RealGoals(w io.Writer, results []*Result) {
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	all := Overall(results)
	s, v, st := all["snug"], all["vpa"], all["static"]
	if s == nil {
		return
	}
	fmt.Fprintln(w, "goals on these traces:")
	if st != nil {
		fmt.Fprintf(w, "  oom kills snug caused: %d, want 0 (%s); snug's %d <= static's %d (%s)\n",
			s.OOMKillsCaused, met(s.OOMKillsCaused == 0), s.OOMKills, st.OOMKills, met(s.OOMKills <= st.OOMKills))
		for _, r := range results {
			if rs, rst := r.Runs["snug"], r.Runs["static"]; rs != nil && rst != nil && rs.OOMKills > rst.OOMKills {
				fmt.Fprintf(w, "    %s: snug %d oom kills (%d caused), static %d\n", r.Trace.Name, rs.OOMKills, rs.OOMKillsCaused, rst.OOMKills)
			}
		}
	}
	var perPod []float64
	for _, r := range results {
		if m := r.Runs["snug"]; m != nil {
			for _, at := range m.ResizedAt {
				perPod = append(perPod, float64(len(at))/(float64(m.Seconds)/3600))
			}
		}
	}
	slices.Sort(perPod)
	p50, p95 := quantile(perPod, 0.5), quantile(perPod, 0.95)
	fmt.Fprintf(w, "  resizes per pod-hour, median pod %.2f <= 0.5 (%s), p95 %.2f <= 2 (%s), over %d pods\n",
		p50, met(p50 <= 0.5), p95, met(p95 <= 2), len(perPod))
	if v == nil {
		return
	}
	var cpuR, memR []float64
	for _, r := range results {
		if rs, rv := r.Runs["snug"], r.Runs["vpa"]; rs != nil && rv != nil {
			cpuR = append(cpuR, rs.CPUSlack/rv.CPUSlack)
			memR = append(memR, rs.MemSlack/rv.MemSlack)
		}
	}
	slices.Sort(cpuR)
	slices.Sort(memR)
	fmt.Fprintf(w, "  cpu slack <= 0.7x VPA's: pooled %s (%s), median of traces %.2fx (%s)\n",
		ratio(s.CPUSlack, v.CPUSlack), met(s.CPUSlack <= 0.7*v.CPUSlack), quantile(cpuR, 0.5), met(quantile(cpuR, 0.5) <= 0.7))
	fmt.Fprintf(w, "  mem slack <= 0.7x VPA's: pooled %s (%s), median of traces %.2fx (%s)\n",
		ratio(s.MemSlack, v.MemSlack), met(s.MemSlack <= 0.7*v.MemSlack), quantile(memR, 0.5), met(quantile(memR, 0.5) <= 0.7))
	fmt.Fprintf(w, "  starved core-seconds <= 0.5x VPA's: %s (%s)\n",
		ratio(s.StarvedCoreSeconds, v.StarvedCoreSeconds), met(s.StarvedCoreSeconds <= 0.5*v.StarvedCoreSeconds))
}

// quantile is the q-quantile of sorted xs, linear between ranks (NaN for
// none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (xs[i+1]-xs[i])*(pos-float64(i))
}
