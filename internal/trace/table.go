package trace

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/snug-dev/snug/internal/resize"
)

// TableOptions tune WriteTable.
type TableOptions struct {
	// Origin is the instant t is counted from; zero means the start of the
	// trace. See Recording.Origin.
	Origin time.Time
	// OriginName names the origin in the header ("start" if empty).
	OriginName string
}

// row is one line of the table: something that changed at a moment.
type row struct {
	at   time.Time
	seq  int // keeps rows of the same moment in recording order
	text string
}

// WriteTable writes the rows of the recording where something changed,
// like the field report's timelines: "t+3.4s  desired cpu 100m/100m ->
// 200m/200m". The first sample of each pod shows all its values; later
// rows show only what changed, the events and the marks.
func WriteTable(w io.Writer, r *Recording, o TableOptions) error {
	origin, name := o.Origin, o.OriginName
	if origin.IsZero() {
		origin = r.Started
	}
	if name == "" {
		name = "start"
	}
	tracks := r.Pods()
	multi := len(tracks) > 1
	var rows []row
	add := func(at time.Time, text string) { rows = append(rows, row{at, len(rows), text}) }
	for _, m := range r.Marks {
		add(m.At, "mark: "+m.Name)
	}
	for _, t := range tracks {
		prefix := ""
		if multi {
			prefix = t.Pod + ": "
		}
		multiContainer := false
		for _, s := range t.Samples {
			multiContainer = multiContainer || len(s.Containers) > 1
		}
		var prev *Sample
		for i := range t.Samples {
			s := &t.Samples[i]
			if prev == nil {
				for _, line := range describeFirst(s, s.Cause != CauseList) {
					add(s.At, prefix+line)
				}
			} else if d := describeChange(prev, s, multiContainer); d != "" {
				add(s.At, prefix+d)
			}
			prev = s
		}
	}
	for _, e := range shownEvents(r.Events) {
		text := "event " + e.Reason
		if e.Type != "" && e.Type != "Normal" {
			text = "event " + e.Type + " " + e.Reason
		}
		if e.Source != "" {
			text += " [" + e.Source + "]"
		}
		if e.Count > 1 {
			text += fmt.Sprintf(" (x%d)", e.Count)
		}
		if e.Message != "" {
			text += ": " + shortMessage(eventMessage(e.Message), 200)
		}
		if multi {
			text = e.Pod + ": " + text
		}
		add(e.At, text)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if !rows[i].at.Equal(rows[j].at) {
			return rows[i].at.Before(rows[j].at)
		}
		return rows[i].seq < rows[j].seq
	})

	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "snug trace of %s, Kubernetes %s\n", r.target(), orDash(r.ServerVersion))
	fmt.Fprintf(bw, "started %s, lasted %.1fs: %d samples, %d events; t counts from %s",
		r.Started.UTC().Format(time.RFC3339), r.End().Sub(r.Started).Seconds(), len(r.Samples), len(r.Events), name)
	if name != "start" {
		fmt.Fprintf(bw, " (%s after the start)", origin.Sub(r.Started).Round(100*time.Millisecond))
	}
	fmt.Fprintf(bw, "\ncpu and memory are request/limit (\"-\": not set); allocated shows requests; gen is generation/observedGeneration\n\n")
	for _, rw := range rows {
		fmt.Fprintf(bw, "%-9s %s\n", relTime(rw.at.Sub(origin)), rw.text)
	}
	if r.EndReason != "" {
		fmt.Fprintf(bw, "%-9s trace ended: %s\n", relTime(r.End().Sub(origin)), r.EndReason)
	}
	return bw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// target names what was traced: "pod ns/name" or "pods ns -l sel".
func (r *Recording) target() string {
	if r.Selector != "" {
		return fmt.Sprintf("pods in %s selected by %s", r.Namespace, r.Selector)
	}
	return fmt.Sprintf("pod %s/%s", r.Namespace, r.Pod)
}

// describeFirst shows every value of a pod's first sample.
func describeFirst(s *Sample, joined bool) []string {
	head := "pod " + s.Pod
	if joined {
		head += " joined"
	}
	head += fmt.Sprintf(" (uid %s): %s, node %s, %s, gen %d/%d", shortUID(s.UID), orDash(s.Phase), orDash(s.Node), orDash(s.QOSClass), s.Generation, s.ObservedGeneration)
	lines := []string{head}
	for _, c := range s.Containers {
		l := fmt.Sprintf("  %s: desired %s", resize.DisplayName(c.Name), c.Desired)
		if c.Allocated != nil {
			l += ", allocated " + c.Allocated.requestsString()
		}
		if c.Actual != nil {
			l += ", actual " + c.Actual.String()
		} else {
			l += ", actual not reported"
		}
		l += fmt.Sprintf(", restarts %d, %s", c.RestartCount, orDash(c.State))
		lines = append(lines, l)
	}
	for _, c := range s.Conditions {
		lines = append(lines, "  "+conditionString(c))
	}
	return lines
}

func shortUID(uid string) string {
	if len(uid) > 8 {
		return uid[:8]
	}
	return uid
}

func conditionString(c Condition) string {
	s := c.Type
	if c.Status != "True" {
		s += "=" + c.Status
	}
	if c.Reason != "" {
		s += " " + c.Reason
	}
	if c.ObservedGeneration != 0 {
		s += fmt.Sprintf(" (gen %d)", c.ObservedGeneration)
	}
	if c.Message != "" {
		s += ": " + shortMessage(c.Message, 160)
	}
	return s
}

// describeChange lists what differs from prev to s, or "".
func describeChange(prev, s *Sample, namedContainers bool) string {
	var parts []string
	if s.Deleted {
		return "pod deleted"
	}
	if s.Deleting && !prev.Deleting {
		parts = append(parts, "deletion requested")
	}
	if s.Phase != prev.Phase {
		parts = append(parts, fmt.Sprintf("phase %s -> %s", orDash(prev.Phase), orDash(s.Phase)))
	}
	if s.Node != prev.Node {
		parts = append(parts, fmt.Sprintf("node %s -> %s", orDash(prev.Node), orDash(s.Node)))
	}
	if s.QOSClass != prev.QOSClass {
		parts = append(parts, fmt.Sprintf("qos %s -> %s", orDash(prev.QOSClass), orDash(s.QOSClass)))
	}
	if s.Generation != prev.Generation || s.ObservedGeneration != prev.ObservedGeneration {
		parts = append(parts, fmt.Sprintf("gen %d/%d -> %d/%d", prev.Generation, prev.ObservedGeneration, s.Generation, s.ObservedGeneration))
	}
	before := map[string]Container{}
	for _, c := range prev.Containers {
		before[c.Name] = c
	}
	for _, c := range s.Containers {
		p, ok := before[c.Name]
		name := ""
		if namedContainers {
			name = resize.DisplayName(c.Name) + ": "
		}
		if !ok {
			parts = append(parts, fmt.Sprintf("%snew container, desired %s", name, c.Desired))
			continue
		}
		if d := diffResources(p.Desired, c.Desired, true); d != "" {
			parts = append(parts, name+"desired "+d)
		}
		switch {
		case c.Allocated != nil && p.Allocated == nil:
			parts = append(parts, name+"allocated "+c.Allocated.requestsString())
		case c.Allocated != nil:
			if d := diffResources(*p.Allocated, *c.Allocated, false); d != "" {
				parts = append(parts, name+"allocated "+d)
			}
		}
		switch {
		case c.Actual != nil && p.Actual == nil:
			parts = append(parts, name+"actual "+c.Actual.String())
		case c.Actual == nil && p.Actual != nil:
			parts = append(parts, name+"actual no longer reported")
		case c.Actual != nil:
			if d := diffResources(*p.Actual, *c.Actual, true); d != "" {
				parts = append(parts, name+"actual "+d)
			}
		}
		if c.RestartCount != p.RestartCount {
			parts = append(parts, fmt.Sprintf("%srestarts %d -> %d", name, p.RestartCount, c.RestartCount))
		}
		if c.ContainerID != p.ContainerID && c.ContainerID != "" && p.ContainerID != "" {
			parts = append(parts, name+"new container ID "+shortID(c.ContainerID))
		}
		if c.State != p.State {
			parts = append(parts, fmt.Sprintf("%sstate %s -> %s", name, orDash(p.State), orDash(c.State)))
		}
	}
	parts = append(parts, diffConditions(prev.Conditions, s.Conditions)...)
	return strings.Join(parts, "; ")
}

func shortID(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		id = id[i+3:]
	}
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

func diffResources(a, b Resources, limits bool) string {
	var parts []string
	if limits {
		if a.CPURequestMillis != b.CPURequestMillis || a.CPULimitMillis != b.CPULimitMillis {
			parts = append(parts, "cpu "+a.cpuPair()+" -> "+b.cpuPair())
		}
		if a.MemoryRequestBytes != b.MemoryRequestBytes || a.MemoryLimitBytes != b.MemoryLimitBytes {
			parts = append(parts, "mem "+a.memPair()+" -> "+b.memPair())
		}
		return strings.Join(parts, " ")
	}
	if a.CPURequestMillis != b.CPURequestMillis {
		parts = append(parts, "cpu "+cpuString(a.CPURequestMillis)+" -> "+cpuString(b.CPURequestMillis))
	}
	if a.MemoryRequestBytes != b.MemoryRequestBytes {
		parts = append(parts, "mem "+memString(a.MemoryRequestBytes)+" -> "+memString(b.MemoryRequestBytes))
	}
	return strings.Join(parts, " ")
}

// diffConditions shows conditions that appeared (+), changed (~) or went
// away (-).
func diffConditions(prev, cur []Condition) []string {
	var parts []string
	before := map[string]Condition{}
	for _, c := range prev {
		before[c.Type] = c
	}
	seen := map[string]bool{}
	for _, c := range cur {
		seen[c.Type] = true
		b, ok := before[c.Type]
		switch {
		case !ok:
			parts = append(parts, "+"+conditionString(c))
		case b.Status != c.Status || b.Reason != c.Reason || b.Message != c.Message || b.ObservedGeneration != c.ObservedGeneration:
			parts = append(parts, "~"+conditionString(c))
		}
	}
	for _, c := range prev {
		if !seen[c.Type] {
			parts = append(parts, "-"+c.Type)
		}
	}
	return parts
}
