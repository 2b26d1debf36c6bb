package quality

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/snug-dev/snug/lab/internal/quality/node"
)

// plotBuckets is how many points a line of the SVG has at most.
const plotBuckets = 480

// plotSeries is one run's lines for the plotted container, in buckets of
// whole seconds: demand and usage (means), request and limit (at the
// bucket's end), for cpu (millicores) and memory (bytes).
type plotSeries struct {
	per               int
	cpuDemand, cpuUse []float64
	cpuReq, cpuLim    []float64
	memDemand, memUse []float64
	memReq, memLim    []float64
	n                 []int
}

func newPlot(seconds int) plotSeries {
	per := max(1, (seconds+plotBuckets-1)/plotBuckets)
	k := (seconds + per - 1) / per
	mk := func() []float64 { return make([]float64, k) }
	return plotSeries{per: per, cpuDemand: mk(), cpuUse: mk(), cpuReq: mk(), cpuLim: mk(), memDemand: mk(), memUse: mk(), memReq: mk(), memLim: mk(), n: make([]int, k)}
}

func (ps *plotSeries) add(t int, cpu, mem float64, s node.Second, r node.Resources) {
	b := t / ps.per
	ps.n[b]++
	ps.cpuDemand[b] += cpu
	ps.cpuUse[b] += s.CPUUsageMillis
	ps.memDemand[b] = math.Max(ps.memDemand[b], mem)
	ps.memUse[b] = math.Max(ps.memUse[b], s.MemBytes)
	ps.cpuReq[b], ps.cpuLim[b] = float64(r.CPURequestMillis), float64(r.CPULimitMillis)
	ps.memReq[b], ps.memLim[b] = float64(r.MemRequestBytes)/(1<<20), float64(r.MemLimitBytes)/(1<<20)
}

func (ps *plotSeries) mean(v []float64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		if ps.n[i] > 0 {
			out[i] = v[i] / float64(ps.n[i])
		}
	}
	return out
}

func mib(v []float64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		out[i] = v[i] / (1 << 20)
	}
	return out
}

type line struct {
	label, color string
	dash, thin   bool
	v            []float64
}

// WriteSVG draws a shape's replay: per resource a panel with the demand
// (thin black), and each run's usage (thin), request (solid) and limit
// (dashed) in the run's colour.
func WriteSVG(wr io.Writer, title string, seconds int, runs map[string]*Metrics, order []string) error {
	var cpu, mem []line
	colors := map[string]string{"snug": "#1f77b4", "vpa": "#d62728", "static": "#7f7f7f", "krr": "#2ca02c"}
	first := true
	for _, name := range order {
		m := runs[name]
		if m == nil || m.plot == nil {
			continue
		}
		ps := m.plot
		if first {
			cpu = append(cpu, line{label: "demand", color: "#000000", thin: true, v: ps.mean(ps.cpuDemand)})
			mem = append(mem, line{label: "demand", color: "#000000", thin: true, v: mib(ps.memDemand)})
			first = false
		}
		col := colors[name]
		cpu = append(cpu, line{label: name + " usage", color: col, thin: true, v: ps.mean(ps.cpuUse)},
			line{label: name + " request", color: col, v: ps.cpuReq}, line{label: name + " limit", color: col, dash: true, v: ps.cpuLim})
		mem = append(mem, line{label: name + " usage", color: col, thin: true, v: mib(ps.memUse)},
			line{label: name + " request", color: col, v: ps.memReq}, line{label: name + " limit", color: col, dash: true, v: ps.memLim})
	}
	var b strings.Builder
	const W, H, pad = 960, 300, 50
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", W, 2*H+40)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%d" y="16" font-size="14">%s</text>`+"\n", pad, esc(title))
	panel(&b, 24, W, H, pad, "cpu (millicores)", cpu, seconds)
	panel(&b, 24+H+10, W, H, pad, "memory (MiB)", mem, seconds)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(wr, b.String())
	return err
}

func panel(b *strings.Builder, y0, W, H, pad int, ylabel string, lines []line, seconds int) {
	top := 0.0
	for _, l := range lines {
		for _, v := range l.v {
			top = math.Max(top, v)
		}
	}
	top = niceTop(top)
	x0, x1 := float64(pad), float64(W-170)
	yb, yt := float64(y0+H-30), float64(y0+10)
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#ccc"/>`+"\n", x0, yt, x1-x0, yb-yt)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		y := yb - (yb-yt)*float64(i)/4
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="end">%s</text><line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#eee"/>`+"\n", x0-4, y+4, fmtNum(v), x0, x1, y, y)
	}
	hours := float64(seconds) / 3600
	for i := 0; i <= 6; i++ {
		x := x0 + (x1-x0)*float64(i)/6
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle">%sh</text>`+"\n", x, yb+14, fmtNum(hours*float64(i)/6))
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", x0, yt-2, ylabel)
	for k, l := range lines {
		if len(l.v) == 0 {
			continue
		}
		var pts strings.Builder
		for i, v := range l.v {
			x := x0 + (x1-x0)*float64(i)/float64(max(1, len(l.v)-1))
			y := yb - (yb-yt)*v/top
			fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
		}
		dash := ""
		if l.dash {
			dash = ` stroke-dasharray="4,3"`
		}
		width, opacity := "1.4", "1"
		if l.thin {
			width, opacity = "0.7", "0.6"
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="%s" stroke-opacity="%s"%s points="%s"/>`+"\n", l.color, width, opacity, dash, strings.TrimSpace(pts.String()))
		ly := yt + 12*float64(k) + 8
		fmt.Fprintf(b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="%s"%s/><text x="%.0f" y="%.0f">%s</text>`+"\n", x1+8, x1+28, ly-3, ly-3, l.color, dash, x1+32, ly, esc(l.label))
	}
}

func niceTop(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func fmtNum(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
