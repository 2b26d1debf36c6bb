package trace

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// SVGOptions tune WriteSVG.
type SVGOptions struct {
	// Origin is the instant t is counted from; zero means the start of the
	// trace.
	Origin time.Time
	// OriginName names the origin in the subtitle ("start" if empty).
	OriginName string
	// Width is the picture's width in pixels; 0 means 1100.
	Width int
}

// The picture's palette: one colour per series and per span kind.
const (
	colDesired   = "#1f5fbf"
	colAllocated = "#f28e1c"
	colActual    = "#1a9641"
	colUsage     = "#555555"
	colRestart   = "#c0392b"
	colMark      = "#444444"
	colGrid      = "#e3e3e3"
	colAxis      = "#333333"
)

var spanColours = map[SpanKind]string{
	SpanDeferred:   "#f5b700",
	SpanInfeasible: "#e0433a",
	SpanInProgress: "#3cc0b0",
	SpanError:      "#9b59b6",
}

var spanOrder = []SpanKind{SpanDeferred, SpanInfeasible, SpanInProgress, SpanError}

// Geometry of the picture, in pixels.
const (
	marginLeft   = 78
	marginRight  = 24
	panelPlotH   = 150 // height of a panel's plot area
	panelGap     = 56  // title above and axis labels below a plot
	laneRowH     = 15
	maxLaneRows  = 6
	listLineH    = 16
	maxListLines = 24
)

// series is one step line of a panel.
type series struct {
	colour  string
	width   float64
	opacity float64
	dash    string
	value   func(Container) (float64, bool)
	// sparse series (usage) are only on some samples: a sample without a
	// value keeps the line going instead of breaking it.
	sparse bool
}

// panel is one container's cpu or memory over time.
type panel struct {
	track     PodTrack
	container string
	memory    bool
}

// WriteSVG draws the recording as a self-contained SVG picture: for every
// pod and container one cpu and one memory panel with desired, allocated,
// actual (limits dashed) and usage step lines, the resize condition spans
// shaded and labelled, restarts and marks as vertical lines, an events
// lane per pod, and a list of what happened.
func WriteSVG(w io.Writer, r *Recording, o SVGOptions) error {
	width := o.Width
	if width == 0 {
		width = 1100
	}
	origin, originName := o.Origin, o.OriginName
	if origin.IsZero() {
		origin = r.Started
	}
	if originName == "" {
		originName = "start"
	}
	end := r.End()
	if !end.After(r.Started) {
		end = r.Started.Add(time.Second)
	}
	x0 := r.Started.Sub(origin).Seconds()
	x1 := end.Sub(origin).Seconds()
	tickStep := niceStep((x1 - x0) / 10)
	plotW := float64(width - marginLeft - marginRight)
	xOf := func(t time.Time) float64 {
		return marginLeft + (t.Sub(origin).Seconds()-x0)/(x1-x0)*plotW
	}

	var b bytes.Buffer
	y := 0.0
	// Title, subtitle and legend.
	title := "snug trace: " + r.target()
	fmt.Fprintf(&b, `<text x="%d" y="26" font-size="18" font-weight="bold">%s</text>`+"\n", marginLeft-60, esc(title))
	sub := fmt.Sprintf("Kubernetes %s · started %s · %.1f s · t in seconds from %s · %d samples, %d events",
		orDash(r.ServerVersion), r.Started.UTC().Format("2006-01-02 15:04:05 UTC"), end.Sub(r.Started).Seconds(), originName, len(r.Samples), len(r.Events))
	fmt.Fprintf(&b, `<text x="%d" y="46" font-size="12" fill="#333">%s</text>`+"\n", marginLeft-60, esc(sub))
	y = 60
	y = legend(&b, float64(marginLeft-60), y, float64(width-marginRight))

	tracks := r.Pods()
	var notes []string
	for _, t := range tracks {
		until := t.Until(end)
		spans := t.Spans(until)
		restarts := t.Restarts()
		for _, c := range containerNames(t) {
			for _, mem := range []bool{false, true} {
				y = drawPanel(&b, panel{t, c, mem}, y, width, plotW, x0, x1, tickStep, xOf, origin, until, spans, restarts, r.Marks)
			}
		}
		y = drawEvents(&b, r, t, y, width, xOf)
		for _, s := range spans {
			to := relTime(s.To.Sub(origin))
			if s.Open {
				to += " (still at the end)"
			}
			n := fmt.Sprintf("%s–%s  %s: %s", relTime(s.From.Sub(origin)), to, t.Pod, s.Kind)
			if s.ObservedGeneration != 0 {
				n += fmt.Sprintf(" (gen %d)", s.ObservedGeneration)
			}
			if s.Message != "" {
				n += ": " + s.Message
			}
			notes = append(notes, n)
		}
		for _, rz := range t.Resizes() {
			notes = append(notes, resizeNote(t.Pod, rz, origin))
		}
		for _, rs := range restarts {
			notes = append(notes, fmt.Sprintf("%s  %s/%s restarted (restart count %d)", relTime(rs.At.Sub(origin)), t.Pod, rs.Container, rs.Count))
		}
		if n := len(t.Samples); n > 0 && t.Samples[n-1].Deleted {
			notes = append(notes, fmt.Sprintf("%s  %s deleted", relTime(t.Samples[n-1].At.Sub(origin)), t.Pod))
		}
	}
	y = drawNotes(&b, r, notes, origin, originName, y, width)

	height := int(math.Ceil(y + 16))
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(w, "<title>%s</title>\n", esc(title))
	fmt.Fprintf(w, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("writing svg: %w", err)
	}
	if _, err := io.WriteString(w, "</svg>\n"); err != nil {
		return fmt.Errorf("writing svg: %w", err)
	}
	return nil
}

// legend draws the key to lines and shadings and returns the y below it.
func legend(b *bytes.Buffer, x, y, maxX float64) float64 {
	type item struct {
		label string
		draw  func(x, y float64)
	}
	line := func(colour string, width, opacity float64, dash string) func(x, y float64) {
		return func(x, y float64) {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f" stroke-opacity="%.2f"%s/>`+"\n", x, y, x+28, y, colour, width, opacity, dashAttr(dash))
		}
	}
	box := func(colour string) func(x, y float64) {
		return func(x, y float64) {
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="28" height="12" fill="%s" fill-opacity="0.35" stroke="%s" stroke-width="0.8"/>`+"\n", x, y-6, colour, colour)
		}
	}
	items := []item{
		{"desired request (spec)", line(colDesired, 7, 0.3, "")},
		{"desired limit", line(colDesired, 3, 0.6, "7,4")},
		{"allocated request (kubelet)", line(colAllocated, 3.5, 0.9, "")},
		{"actual request (status)", line(colActual, 1.8, 1, "")},
		{"actual limit", line(colActual, 1.8, 1, "4,3")},
		{"usage", line(colUsage, 1.2, 1, "")},
		{"Deferred", box(spanColours[SpanDeferred])},
		{"Infeasible", box(spanColours[SpanInfeasible])},
		{"InProgress", box(spanColours[SpanInProgress])},
		{"Error", box(spanColours[SpanError])},
		{"restart", line(colRestart, 2, 1, "")},
		{"mark", line(colMark, 1, 1, "3,3")},
	}
	y += 14
	cx := x
	for _, it := range items {
		w := 28 + 6 + 7.0*float64(len(it.label)) + 18
		if cx+w > maxX {
			cx, y = x, y+20
		}
		it.draw(cx, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", cx+34, y+4, esc(it.label))
		cx += w
	}
	return y + 24
}

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, dash)
}

// containerNames lists the containers of a pod's trace in the order seen.
func containerNames(t PodTrack) []string {
	var names []string
	seen := map[string]bool{}
	for _, s := range t.Samples {
		for _, c := range s.Containers {
			if !seen[c.Name] {
				seen[c.Name] = true
				names = append(names, c.Name)
			}
		}
	}
	return names
}

// seriesFor returns the panel's lines, drawn in this order (the thin
// actual line on top of the wide desired one).
func seriesFor(memory bool) []series {
	pick := func(get func(Resources) int64, view func(Container) *Resources) func(Container) (float64, bool) {
		return func(c Container) (float64, bool) {
			r := view(c)
			if r == nil || get(*r) == 0 {
				return 0, false
			}
			return float64(get(*r)), true
		}
	}
	desired := func(c Container) *Resources { return &c.Desired }
	allocated := func(c Container) *Resources { return c.Allocated }
	actual := func(c Container) *Resources { return c.Actual }
	req := func(r Resources) int64 { return r.CPURequestMillis }
	lim := func(r Resources) int64 { return r.CPULimitMillis }
	usage := func(c Container) (float64, bool) {
		if c.Usage == nil {
			return 0, false
		}
		return c.Usage.CPUMillis, true
	}
	if memory {
		req = func(r Resources) int64 { return r.MemoryRequestBytes }
		lim = func(r Resources) int64 { return r.MemoryLimitBytes }
		usage = func(c Container) (float64, bool) {
			if c.Usage == nil || c.Usage.MemoryBytes == 0 {
				return 0, false
			}
			return float64(c.Usage.MemoryBytes), true
		}
	}
	return []series{
		{colDesired, 7, 0.3, "", pick(req, desired), false},
		{colDesired, 3, 0.6, "7,4", pick(lim, desired), false},
		{colAllocated, 3.5, 0.9, "", pick(req, allocated), false},
		{colUsage, 1.2, 1, "", usage, true},
		{colActual, 1.8, 1, "", pick(req, actual), false},
		{colActual, 1.8, 1, "4,3", pick(lim, actual), false},
	}
}

// drawPanel draws one panel with its top at y and returns the y below it.
func drawPanel(b *bytes.Buffer, p panel, y float64, width int, plotW, x0, x1, tickStep float64,
	xOf func(time.Time) float64, origin, until time.Time, spans []Span, restarts []Restart, marks []Mark) float64 {
	unit := "cpu (millicores)"
	if p.memory {
		unit = "memory"
	}
	fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="13" font-weight="bold">%s</text>`+"\n", marginLeft, y+18, esc(fmt.Sprintf("%s / %s — %s", p.track.Pod, p.container, unit)))
	top := y + 26
	bottom := top + panelPlotH
	left, right := float64(marginLeft), float64(marginLeft)+plotW

	ss := seriesFor(p.memory)
	maxV := 0.0
	for _, s := range p.track.Samples {
		for _, c := range s.Containers {
			if c.Name != p.container {
				continue
			}
			for _, sr := range ss {
				if v, ok := sr.value(c); ok {
					maxV = math.Max(maxV, v)
				}
			}
		}
	}
	if maxV == 0 {
		maxV = 1000
		if p.memory {
			maxV = 1 << 30
		}
	}
	var yStep float64
	if p.memory {
		yStep = niceStep(maxV/(1<<20)/4) * (1 << 20)
		if yStep < 1<<20 {
			yStep = 1 << 20
		}
	} else {
		yStep = niceStep(maxV / 4)
		if yStep < 1 {
			yStep = 1
		}
	}
	yMax := math.Ceil(maxV*1.12/yStep) * yStep
	yOf := func(v float64) float64 { return bottom - v/yMax*panelPlotH }

	// Shaded spans, under everything else.
	fmt.Fprintf(b, `<g clip-path="none">`+"\n")
	for _, s := range spans {
		sx0, sx1 := xOf(s.From), xOf(s.To)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s" fill-opacity="0.28"><title>%s</title></rect>`+"\n",
			sx0, top, math.Max(sx1-sx0, 1.5), panelPlotH, spanColours[s.Kind], esc(string(s.Kind)+": "+s.Message))
		label := string(s.Kind)
		if sx1-sx0 < 7.2*float64(len(label))+6 {
			label = label[:1]
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" font-weight="bold" fill="%s">%s</text>`+"\n", sx0+3, top+12, darker(spanColours[s.Kind]), esc(label))
	}
	fmt.Fprintf(b, "</g>\n")

	// Grid and axes.
	for v := 0.0; v <= yMax+yStep/2; v += yStep {
		yy := yOf(v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>`+"\n", left, yy, right, yy, colGrid)
		label := fmt.Sprintf("%dm", int64(math.Round(v)))
		if p.memory {
			label = memString(int64(math.Round(v/(1<<20))) << 20)
		}
		if v == 0 {
			label = "0"
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="11">%s</text>`+"\n", left-6, yy+4, esc(label))
	}
	for t := math.Ceil(x0/tickStep) * tickStep; t <= x1+1e-9; t += tickStep {
		xx := left + (t-x0)/(x1-x0)*plotW
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>`+"\n", xx, top, xx, bottom, colGrid)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>`+"\n", xx, bottom, xx, bottom+4, colAxis)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11">%s</text>`+"\n", xx, bottom+16, esc(secondsLabel(t)))
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="none" stroke="%s" stroke-width="1"/>`+"\n", left, top, plotW, panelPlotH, colAxis)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" font-size="11" fill="#555">t (s)</text>`+"\n", right, bottom+30)

	// Lines.
	for _, sr := range ss {
		if d := stepPath(p.track.Samples, p.container, sr, xOf, yOf, until); d != "" {
			fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="%.1f" stroke-opacity="%.2f" stroke-linejoin="miter"%s/>`+"\n", d, sr.colour, sr.width, sr.opacity, dashAttr(sr.dash))
		}
	}
	valueLabels(b, p, xOf, yOf, top, right)

	// Restarts and marks.
	for _, rs := range restarts {
		if rs.Container != p.container {
			continue
		}
		xx := xOf(rs.At)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", xx, top, xx, bottom, colRestart)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" font-weight="bold" fill="%s">restart #%d</text>`+"\n", xx+3, bottom-6, colRestart, rs.Count)
	}
	if n := len(p.track.Samples); n > 0 && p.track.Samples[n-1].Deleted {
		xx := xOf(p.track.Samples[n-1].At)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000" stroke-width="1.5"/>`+"\n", xx, top, xx, bottom)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" font-weight="bold" text-anchor="end">pod deleted</text>`+"\n", xx-3, bottom-6)
	}
	for _, m := range marks {
		xx := xOf(m.At)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1" stroke-dasharray="3,3"/>`+"\n", xx, top, xx, bottom, colMark)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>`+"\n", xx+3, top+24, colMark, esc(m.Name))
	}
	return bottom + panelGap - 26 + 8
}

// stepPath is the SVG path of one series: each value holds until the next
// sample that changes it; a value that is not reported breaks the line.
func stepPath(samples []Sample, container string, sr series, xOf func(time.Time) float64, yOf func(float64) float64, until time.Time) string {
	var sb strings.Builder
	drawing := false
	last := 0.0
	for _, s := range samples {
		var c *Container
		for i := range s.Containers {
			if s.Containers[i].Name == container {
				c = &s.Containers[i]
			}
		}
		v, ok := 0.0, false
		if c != nil && !s.Deleted {
			v, ok = sr.value(*c)
		}
		x := xOf(s.At)
		running := c != nil && !s.Deleted && (c.State == "" || c.State == "running")
		switch {
		case !ok && sr.sparse && running:
			// No figure on this sample: the last one holds.
		case !ok && drawing:
			fmt.Fprintf(&sb, "H%.1f", x)
			drawing = false
		case ok && !drawing:
			fmt.Fprintf(&sb, "M%.1f,%.1f", x, yOf(v))
			drawing, last = true, v
		case ok && v != last:
			fmt.Fprintf(&sb, "H%.1fV%.1f", x, yOf(v))
			last = v
		}
		if s.Deleted {
			break
		}
	}
	if drawing {
		fmt.Fprintf(&sb, "H%.1f", xOf(until))
	}
	return sb.String()
}

// valueLabels writes the value next to each change of the desired and
// actual requests, so the numbers can be read without the axis.
func valueLabels(b *bytes.Buffer, p panel, xOf func(time.Time) float64, yOf func(float64) float64, top, right float64) {
	format := func(v float64) string {
		if p.memory {
			return memString(int64(v))
		}
		return cpuString(int64(v))
	}
	type label struct {
		x, y  float64
		text  string
		color string
	}
	var labels []label
	for i, sr := range seriesFor(p.memory) {
		if i != 0 && i != 4 { // desired and actual requests
			continue
		}
		last, have := 0.0, false
		for _, s := range p.track.Samples {
			for _, c := range s.Containers {
				if c.Name != p.container || s.Deleted {
					continue
				}
				v, ok := sr.value(c)
				if !ok || (have && v == last) {
					continue
				}
				prefix := "desired "
				if i == 4 {
					prefix = "actual "
				}
				labels = append(labels, label{xOf(s.At) + 4, yOf(v) - 6, prefix + format(v), darker(sr.colour)})
				last, have = v, true
			}
		}
	}
	if len(labels) > 12 {
		return
	}
	// Keep labels from overlapping: push a label down when it would
	// cover one placed before.
	sort.SliceStable(labels, func(i, j int) bool { return labels[i].x < labels[j].x })
	for i := range labels {
		for j := 0; j < i; j++ {
			if math.Abs(labels[i].y-labels[j].y) < 12 && labels[i].x-labels[j].x < 7*float64(len(labels[j].text)) {
				labels[i].y = labels[j].y + 13
			}
		}
		// Below the span labels at the top of the panel.
		labels[i].y = math.Max(labels[i].y, top+26)
		x, anchor := labels[i].x, "start"
		if x+textWidth(labels[i].text, 10.5) > right {
			x, anchor = x-8, "end"
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10.5" text-anchor="%s" fill="%s" stroke="#ffffff" stroke-width="3" paint-order="stroke">%s</text>`+"\n", x, labels[i].y, anchor, labels[i].color, esc(labels[i].text))
	}
}

// drawEvents draws the pod's events on a lane below its panels, each
// labelled with its reason, in rows so that labels do not overlap.
func drawEvents(b *bytes.Buffer, r *Recording, t PodTrack, y float64, width int, xOf func(time.Time) float64) float64 {
	var evs []Event
	for _, e := range shownEvents(r.Events) {
		if e.PodUID == t.UID || (e.PodUID == "" && e.Pod == t.Pod) {
			evs = append(evs, e)
		}
	}
	fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="13" font-weight="bold">%s</text>`+"\n", marginLeft, y+14, esc(fmt.Sprintf("%s — events (resize events in bold)", t.Pod)))
	y += 22
	if len(evs) == 0 {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="11" fill="#555">no events during the trace</text>`+"\n", marginLeft, y+10)
		return y + 24
	}
	var rowEnd []float64
	for _, e := range evs {
		x := xOf(e.At)
		label := e.Reason
		if e.Count > 1 {
			label += fmt.Sprintf(" x%d", e.Count)
		}
		w := 6.6*float64(len(label)) + 14
		// A label that would pass the right edge goes left of its
		// diamond; from is where the label's room begins.
		endAnchored := x+6+textWidth(label, 10.5) > float64(width-marginRight)
		from, to := x-6, x+w
		if endAnchored {
			from, to = x-w, x+6
		}
		row := -1
		for i, end := range rowEnd {
			if from > end {
				row = i
				break
			}
		}
		unlabelled := false
		switch {
		case row < 0 && len(rowEnd) < maxLaneRows:
			row = len(rowEnd)
			rowEnd = append(rowEnd, 0)
		case row < 0:
			// The lane is full here: the diamond alone (its tooltip
			// names it; the table lists every event).
			row, unlabelled = maxLaneRows-1, true
		}
		if !unlabelled {
			rowEnd[row] = to
		}
		yy := y + float64(row)*laneRowH + 6
		colour, weight := "#666666", "normal"
		if e.Resize {
			colour, weight = "#b3470c", "bold"
		}
		if e.Type == "Warning" {
			colour = "#c0392b"
		}
		fmt.Fprintf(b, `<path d="M%.1f,%.1fl4,4l-4,4l-4,-4z" fill="%s"><title>%s</title></path>`+"\n", x, yy-8, colour, esc(e.Reason+": "+eventMessage(e.Message)))
		if !unlabelled {
			lx, anchor := x+6, "start"
			if endAnchored {
				lx, anchor = x-6, "end"
			}
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10.5" font-weight="%s" text-anchor="%s" fill="%s">%s</text>`+"\n", lx, yy, weight, anchor, colour, esc(label))
		}
	}
	return y + float64(len(rowEnd))*laneRowH + 16
}

// drawNotes writes "what happened": spans with their messages, restarts,
// deletions, marks and resize events, in time order.
func drawNotes(b *bytes.Buffer, r *Recording, notes []string, origin time.Time, originName string, y float64, width int) float64 {
	for _, m := range r.Marks {
		notes = append(notes, fmt.Sprintf("%s  mark: %s", relTime(m.At.Sub(origin)), m.Name))
	}
	for _, e := range r.Events {
		if !e.Resize {
			continue
		}
		n := fmt.Sprintf("%s  %s event %s", relTime(e.At.Sub(origin)), e.Pod, e.Reason)
		if e.Source != "" {
			n += " [" + e.Source + "]"
		}
		if e.Message != "" {
			n += ": " + eventMessage(e.Message)
		}
		notes = append(notes, n)
	}
	sort.SliceStable(notes, func(i, j int) bool { return noteTime(notes[i]) < noteTime(notes[j]) })
	fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="13" font-weight="bold">What happened (t in seconds from %s)</text>`+"\n", marginLeft-60, y+16, esc(originName))
	y += 24
	if len(notes) == 0 {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="11">no resize condition, restart, mark or resize event during the trace</text>`+"\n", marginLeft-60, y+12)
		return y + 20
	}
	maxChars := (width - marginLeft) / 6
	for i, n := range notes {
		if i == maxListLines {
			fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="11">… and %d more (see the table)</text>`+"\n", marginLeft-60, y+12, len(notes)-i)
			y += listLineH
			break
		}
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="11">%s</text>`+"\n", marginLeft-60, y+12, esc(shortMessage(n, maxChars)))
		y += listLineH
	}
	return y
}

// noteTime reads the leading "t+3.4s" of a note, for sorting.
func noteTime(n string) float64 {
	var sign byte = '+'
	var v float64
	if len(n) > 2 {
		sign = n[1]
	}
	fmt.Sscanf(strings.TrimLeft(n[min(2, len(n)):], " "), "%f", &v)
	if sign == '-' {
		return -v
	}
	return v
}

// niceStep rounds a step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func secondsLabel(t float64) string {
	if math.Abs(t-math.Round(t)) < 1e-9 {
		return fmt.Sprintf("%d", int64(math.Round(t)))
	}
	return fmt.Sprintf("%.1f", t)
}

// darker returns a darker shade of a #rrggbb colour, for text on a light
// fill.
func darker(c string) string {
	var r, g, bl int
	if _, err := fmt.Sscanf(c, "#%02x%02x%02x", &r, &g, &bl); err != nil {
		return c
	}
	return fmt.Sprintf("#%02x%02x%02x", r*6/10, g*6/10, bl*6/10)
}

func esc(s string) string {
	var sb strings.Builder
	xml.EscapeText(&sb, []byte(s))
	return sb.String()
}

// resizeNote is "t+2.6s  deferred/app cpu request 100m -> 400m: allocated
// t+6.8s, actual t+7.8s, 5.2 s after the spec".
func resizeNote(pod string, rz Resize, origin time.Time) string {
	format := cpuString
	if rz.Resource == "memory" {
		format = memString
	}
	n := fmt.Sprintf("%s  %s/%s %s request %s -> %s asked (spec)", relTime(rz.AskedAt.Sub(origin)), pod, rz.Container, rz.Resource, format(rz.From), format(rz.To))
	if !rz.AllocatedAt.IsZero() {
		n += ", allocated " + relTime(rz.AllocatedAt.Sub(origin))
	}
	if rz.ActualAt.IsZero() {
		return n + ", not applied by the end of the trace"
	}
	return n + fmt.Sprintf(", actual %s: %.1f s from spec to status", relTime(rz.ActualAt.Sub(origin)), rz.ActualAt.Sub(rz.AskedAt).Seconds())
}

// textWidth estimates the width of text in pixels (DejaVu Sans averages
// about 0.6 em per character).
func textWidth(text string, fontSize float64) float64 {
	return float64(len([]rune(text))) * fontSize * 0.6
}
