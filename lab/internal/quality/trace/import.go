package trace

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	snugtrace "github.com/snug-dev/snug/internal/trace"
)

// AlibabaOptions size an Alibaba trace: its utilisations are percentages
// of sizes the trace does not give in container_usage.
type AlibabaOptions struct {
	// CPUMillis is what cpu_util_percent 100 means: the container's
	// cpu_request from container_meta (100 there is one core, 1000m).
	CPUMillis int64
	// MemBytes is what mem_util_percent 100 means: mem_size in
	// container_meta is normalised, so the user says the real size.
	MemBytes int64
	// CPURequestMillis, CPULimitMillis, MemRequestBytes and MemLimitBytes
	// are the starting resources of every container; 0 means CPUMillis
	// (cpu) or MemBytes (memory) as both request and limit.
	CPURequestMillis, CPULimitMillis int64
	MemRequestBytes, MemLimitBytes   int64
}

// ReadAlibaba reads cluster-trace-v2018's container_usage.csv layout: no
// header, eleven columns per row,
//
//	container_id, machine_id, time_stamp, cpu_util_percent,
//	mem_util_percent, cpi, mem_gps, mpki, net_in, net_out, disk_io_percent
//
// (github.com/alibaba/clusterdata cluster-trace-v2018/schema.txt). Only
// container_id, time_stamp (seconds), cpu_util_percent and
// mem_util_percent are used. Each container becomes a pod of the trace (one
// workload); samples (about 10 s apart) are held until the next one, so the
// trace has a value every second from the earliest time stamp to the
// latest. Rows with values out of [0, 100] (the trace's -1 and 101) keep
// the previous value.
func ReadAlibaba(r io.Reader, name string, o AlibabaOptions) (*Trace, error) {
	if o.CPUMillis <= 0 || o.MemBytes <= 0 {
		return nil, errors.New("reading alibaba trace: the cpu and memory sizes must be positive")
	}
	type row struct {
		t        float64
		cpu, mem float64
	}
	rows := map[string][]row{}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	line := 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("reading alibaba trace: line %d: %w", line, err)
		}
		if len(rec) < 5 {
			return nil, fmt.Errorf("reading alibaba trace: line %d: %d columns, want 11 (container_usage layout)", line, len(rec))
		}
		t, err1 := strconv.ParseFloat(strings.TrimSpace(rec[2]), 64)
		cpu, err2 := parseOpt(rec[3])
		mem, err3 := parseOpt(rec[4])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("reading alibaba trace: line %d: %w", line, err)
		}
		rows[rec[0]] = append(rows[rec[0]], row{t, cpu, mem})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("reading alibaba trace: %w", ErrNoRows)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, rs := range rows {
		for _, x := range rs {
			lo, hi = math.Min(lo, x.t), math.Max(hi, x.t)
		}
	}
	n := int(hi-lo) + 1
	ids := make([]string, 0, len(rows))
	for id := range rows {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	req := func(v, def int64) int64 {
		if v > 0 {
			return v
		}
		return def
	}
	tr := &Trace{Name: name, Seconds: n}
	for i, id := range ids {
		rs := rows[id]
		slices.SortStableFunc(rs, func(a, b row) int { return int(a.t - b.t) })
		c := Container{
			Name:             "app",
			CPURequestMillis: req(o.CPURequestMillis, o.CPUMillis), CPULimitMillis: req(o.CPULimitMillis, o.CPUMillis),
			MemRequestBytes: req(o.MemRequestBytes, o.MemBytes), MemLimitBytes: req(o.MemLimitBytes, o.MemBytes),
			CPUMillis: make([]float64, n), MemBytes: make([]float64, n),
		}
		cpu, mem := 0.0, 0.0
		k := 0
		for s := range n {
			for k < len(rs) && rs[k].t-lo <= float64(s) {
				if v := rs[k].cpu; v >= 0 && v <= 100 {
					cpu = v
				}
				if v := rs[k].mem; v >= 0 && v <= 100 {
					mem = v
				}
				k++
			}
			c.CPUMillis[s] = cpu / 100 * float64(o.CPUMillis)
			c.MemBytes[s] = mem / 100 * float64(o.MemBytes)
		}
		tr.Pods = append(tr.Pods, Pod{Name: fmt.Sprintf("pod-%d-%s", i, id), Containers: []Container{c}})
	}
	if err := tr.Validate(); err != nil {
		return nil, fmt.Errorf("reading alibaba trace: %w", err)
	}
	return tr, nil
}

// parseOpt parses a number; an empty cell is -1 (not known).
func parseOpt(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return -1, nil
	}
	return strconv.ParseFloat(s, 64)
}

// ReadSnugCSV reads snug's own trace CSV (internal/trace WriteCSV: what
// `snug trace --csv` and the benches' --trace-dir write). Each pod and
// container keeps its name; its starting resources are the first row's
// actual ones. A recording shows usage, not demand: where the container
// was throttled, demand is taken as usage times (1 + throttled fraction),
// the recorder's only hint of the work that waited. Values are held from
// one row to the next, second by second, from the first row with usage
// (t_seconds may be negative: the benches count from their load step).
func ReadSnugCSV(r io.Reader, name string) (*Trace, error) {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading snug trace: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, h := range []string{"t_seconds", "pod", "container", "usage_cpu_m", "usage_mem_bytes", "usage_throttled_fraction",
		"actual_cpu_request_m", "actual_cpu_limit_m", "actual_mem_request_bytes", "actual_mem_limit_bytes"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("reading snug trace: no column %q (not a snug trace CSV?)", h)
		}
	}
	type point struct {
		t        float64
		cpu, mem float64
	}
	type series struct {
		pod, name string
		first     []string
		points    []point
	}
	var order []string
	all := map[string]*series{}
	line := 1
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("reading snug trace: line %d: %w", line, err)
		}
		if rec[col["usage_mem_bytes"]] == "" && rec[col["usage_cpu_m"]] == "" {
			continue // a status change without a usage sample
		}
		t, err1 := strconv.ParseFloat(rec[col["t_seconds"]], 64)
		cpu, err2 := num(rec[col["usage_cpu_m"]])
		mem, err3 := num(rec[col["usage_mem_bytes"]])
		thr, err4 := num(rec[col["usage_throttled_fraction"]])
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, fmt.Errorf("reading snug trace: line %d: %w", line, err)
		}
		k := rec[col["pod"]] + "/" + rec[col["container"]]
		s := all[k]
		if s == nil {
			s = &series{pod: rec[col["pod"]], name: rec[col["container"]], first: rec}
			all[k] = s
			order = append(order, k)
		}
		s.points = append(s.points, point{t, cpu * (1 + thr), mem})
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("reading snug trace: %w", ErrNoRows)
	}
	first, last := math.Inf(1), math.Inf(-1)
	for _, s := range all {
		first = math.Min(first, s.points[0].t)
		last = math.Max(last, s.points[len(s.points)-1].t)
	}
	for _, s := range all {
		for i := range s.points {
			s.points[i].t -= first
		}
	}
	n := int(last-first) + 1
	tr := &Trace{Name: name, Seconds: n}
	pods := map[string]int{}
	for _, k := range order {
		s := all[k]
		iv := func(h string) int64 { v, _ := num(s.first[col[h]]); return int64(v) }
		c := Container{
			Name:             s.name,
			CPURequestMillis: iv("actual_cpu_request_m"), CPULimitMillis: iv("actual_cpu_limit_m"),
			MemRequestBytes: iv("actual_mem_request_bytes"), MemLimitBytes: iv("actual_mem_limit_bytes"),
			CPUMillis: make([]float64, n), MemBytes: make([]float64, n),
		}
		j := 0
		cur := s.points[0]
		for sec := range n {
			for j < len(s.points) && s.points[j].t <= float64(sec) {
				cur = s.points[j]
				j++
			}
			c.CPUMillis[sec], c.MemBytes[sec] = cur.cpu, cur.mem
		}
		i, ok := pods[s.pod]
		if !ok {
			i = len(tr.Pods)
			pods[s.pod] = i
			tr.Pods = append(tr.Pods, Pod{Name: s.pod})
		}
		tr.Pods[i].Containers = append(tr.Pods[i].Containers, c)
	}
	if err := tr.Validate(); err != nil {
		return nil, fmt.Errorf("reading snug trace: %w", err)
	}
	return tr, nil
}

func num(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	return strconv.ParseFloat(s, 64)
}

// ReadSnug reads a snug recording: the JSON recording `snug trace` saves
// (internal/trace Save), or its CSV (ReadSnugCSV), told apart by the first
// byte.
func ReadSnug(r io.Reader, name string) (*Trace, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(1)
	if err != nil {
		return nil, fmt.Errorf("reading snug trace: %w", err)
	}
	if head[0] != '{' {
		return ReadSnugCSV(br, name)
	}
	rec, err := snugtrace.Load(br)
	if err != nil {
		return nil, fmt.Errorf("reading snug trace: %w", err)
	}
	var buf bytes.Buffer
	if err := snugtrace.WriteCSV(&buf, rec, time.Time{}); err != nil {
		return nil, fmt.Errorf("reading snug trace: %w", err)
	}
	return ReadSnugCSV(&buf, name)
}
