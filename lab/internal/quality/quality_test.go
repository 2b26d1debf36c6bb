package quality

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snug-dev/snug/lab/internal/quality/node"
	"github.com/snug-dev/snug/lab/internal/quality/trace"
)

func tiny(cpu, mem []float64, steps ...int) *trace.Trace {
	return &trace.Trace{Name: "tiny", Seconds: len(cpu), Steps: steps, Pods: []trace.Pod{{Name: "p", Containers: []trace.Container{{
		Name: "app", CPURequestMillis: 200, CPULimitMillis: 200, MemRequestBytes: 100, MemLimitBytes: 200,
		CPUMillis: cpu, MemBytes: mem,
	}}}}}
}

// TestStaticMetrics checks the figures on four seconds worked by hand:
// demand 100, 100, 500, 500 millicores under a 200m request and limit;
// memory 50, 50, 150, 150 bytes under a 100 B request, 200 B limit. At
// half the limit no period is throttled and at 2.5 times it every period
// is (a period would have to want 4.6 standard deviations less than the
// mean to escape).
func TestStaticMetrics(t *testing.T) {
	tr := tiny([]float64{100, 100, 500, 500}, []float64{50, 50, 150, 150}, 2)
	m, err := Run(tr, "static", Env{})
	if err != nil {
		t.Fatal(err)
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// Usage 100, 100, 200, 200 (500 is over the limit in every period).
	near("cpu slack", m.CPUSlack, (100+100+0+0)/800.0)
	near("cpu limit slack", m.CPULimitSlack, 200/800.0)
	near("mem slack", m.MemSlack, (50+50+0+0)/400.0)
	near("mem limit slack", m.MemLimitSlack, (150+150+50+50)/800.0)
	near("starved core-s", m.StarvedCoreSeconds, 0.6)
	near("throttled share", m.ThrottledShare, 0.5)
	near("min mem headroom", m.MinMemHeadroom, 0.25)
	near("resizes/pod-hour", m.ResizesPerPodHour, 0)
	if m.OOMKills != 0 || len(m.Ended) != 1 || !math.IsNaN(m.Ended[0]) {
		t.Errorf("oom kills %d, ended %v; want 0 and never", m.OOMKills, m.Ended)
	}
	// KRR from that usage: p95 of 100, 100, 200, 200 is 200; memory peak
	// 150 + 15%.
	k := KRR(m)
	if k[0][0].CPURequestMillis != 200 || k[0][0].CPULimitMillis != 0 || k[0][0].MemLimitBytes != 172 {
		t.Errorf("KRR = %+v, want cpu 200m and no limit, memory 172 B", k[0][0])
	}
}

// TestEnded: starvation ends with the second of the first two calm seconds
// after the step; an OOM kill counts in the figures.
func TestEnded(t *testing.T) {
	// Throttled at seconds 1-2, calm from 3: ended at the end of second 4,
	// 4 s after the step at 1.
	tr := tiny([]float64{100, 300, 300, 100, 100, 100}, []float64{50, 50, 50, 250, 50, 50}, 1)
	m, err := Run(tr, "static", Env{})
	if err != nil {
		t.Fatal(err)
	}
	// Second 3 ran unthrottled before its OOM kill (250 B over 200 B) and
	// the container restarted at once (no back-off the first time): calm
	// seconds 3 and 4 end it at 5, 4 s after the step.
	if len(m.Ended) != 1 || m.Ended[0] != 4 {
		t.Errorf("ended %v, want [4]", m.Ended)
	}
	if m.OOMKills != 1 || m.MinMemHeadroom != 0 {
		t.Errorf("oom kills %d, min headroom %v; want 1, 0", m.OOMKills, m.MinMemHeadroom)
	}
}

// TestSnugOnStep runs the real recommender and planner on the step shape:
// snug grows within seconds of the first step (from 100m to 400m under a
// 200m limit) and starves far less than the static requests. (The second
// step lands under the 500m limit snug kept from the first: its bursts
// are throttled lightly, and docs/quality.md says what that costs.)
func TestSnugOnStep(t *testing.T) {
	tr, err := trace.Generate("step", 1)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Run(tr, "static", Env{})
	if err != nil {
		t.Fatal(err)
	}
	sn, err := Run(tr, "snug", Env{})
	if err != nil {
		t.Fatal(err)
	}
	if sn.Resizes == 0 || sn.StarvedCoreSeconds > st.StarvedCoreSeconds/10 {
		t.Errorf("snug: %d resizes, %.1f starved core-s (static %.1f); want resizes and a tenth of the starvation", sn.Resizes, sn.StarvedCoreSeconds, st.StarvedCoreSeconds)
	}
	if e := sn.Ended[0]; math.IsNaN(e) || e > 10 {
		t.Errorf("first step: starvation ended after %v s, want within 10", e)
	}
	if e := st.Ended[0]; !math.IsNaN(e) && e < 600 {
		t.Errorf("static: starvation ended %v s after the step; a 200m limit under 400m never ends it", e)
	}
}

func TestOverall(t *testing.T) {
	a := &Metrics{CPUSlack: 0.5, Pods: 1, Seconds: 3600, OOMKills: 1, Resizes: 2, StarvedCoreSeconds: 1, Ended: []float64{2, math.NaN()}}
	a.acc = acc{cpuReq: 100, cpuSlack: 50, running: 10, throttled: 1, minHeadroom: 0.5}
	b := &Metrics{CPUSlack: 0.1, Pods: 2, Seconds: 3600, Resizes: 4, StarvedCoreSeconds: 2, Ended: []float64{4}}
	b.acc = acc{cpuReq: 300, cpuSlack: 30, running: 30, throttled: 3, minHeadroom: 0.2}
	o := Overall([]*Result{{Runs: map[string]*Metrics{"snug": a}}, {Runs: map[string]*Metrics{"snug": b}}})["snug"]
	if o.CPUSlack != 80.0/400 || o.ThrottledShare != 0.1 || o.OOMKills != 1 || o.StarvedCoreSeconds != 3 || o.ResizesPerPodHour != 2 || o.MinMemHeadroom != 0.2 {
		t.Errorf("overall %+v", o)
	}
	if math.Abs(o.CPUSlackMean-0.3) > 1e-9 {
		t.Errorf("mean of the traces' cpu slack %v, want 0.3 (of 0.5 and 0.1)", o.CPUSlackMean)
	}
	// The step that never ended counts as its trace's length.
	if p := o.EndedP50(); p != 4 {
		t.Errorf("p50 ended %v, want 4 (of 2, 4, 3600)", p)
	}
}

func TestWriteSVG(t *testing.T) {
	tr, _ := trace.Generate("spikes", 1)
	m, err := Run(tr, "static", Env{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSVG(&b, "spikes & co", tr.Seconds, map[string]*Metrics{"static": m}, []string{"snug", "static"}); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&b)
	lines := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	// demand, usage, request and limit, for cpu and memory.
	if lines != 8 {
		t.Errorf("%d lines, want 8", lines)
	}
}

// TestVPAReplay builds tools/vpareplay (cached by its sources' hash, so a
// warm run costs seconds) and replays 40 minutes of a step under VPA 1.8.1's
// code: it recommends at least its pod minimum, and more cpu after the step
// than before.
func TestVPAReplay(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build vpareplay")
	}
	src, err := FindVPASource()
	if err != nil {
		t.Fatal(err)
	}
	cache := os.Getenv("SNUG_CACHE_DIR")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "snug")
	}
	bin, err := EnsureVPAReplay(context.Background(), src, cache, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	n := 2400
	cpu, mem := make([]float64, n), make([]float64, n)
	for i := range n {
		cpu[i], mem[i] = 100, 300<<20
		if i >= 1200 {
			cpu[i] = 400
		}
	}
	tr := tiny(cpu, mem, 1200)
	tr.Pods[0].Containers[0].MemRequestBytes, tr.Pods[0].Containers[0].MemLimitBytes = 256<<20, 512<<20
	w := newWorld(tr, "vpa")
	v := &vpaSizer{bin: bin, phases: DefaultVPAPhases}
	if err := v.start(w); err != nil {
		t.Fatal(err)
	}
	defer v.stop()
	var before, after VPAEstimate
	for t0 := range n {
		w.step(t0)
		reqs, err := v.second(w, t0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			w.cont[r.pod][r.container].Resize(t0, r.res, 0)
		}
		if t0 == 1199 {
			before = v.last["app"]
		}
	}
	after = v.last["app"]
	t.Logf("VPA before the step %+v, after %+v", before, after)
	if before.Target.CPUMillis < 25 || before.Target.MemBytes < 250<<20 {
		t.Errorf("target %+v below VPA's pod minimum (25m, 250Mi)", before.Target)
	}
	if after.Target.CPUMillis <= before.Target.CPUMillis || after.UpperBound.CPUMillis < after.Target.CPUMillis || after.LowerBound.CPUMillis > after.Target.CPUMillis {
		t.Errorf("after the step: %+v; want a higher cpu target within its bounds", after)
	}
	if !strings.Contains(bin, VPAVersion) {
		t.Errorf("binary %s not under the VPA version", bin)
	}

	// Two replicas: the updater's disruption budget resizes one per loop;
	// loops at the lab's phases move the resizes with them.
	st, err := trace.Sustained(300, 1)
	if err != nil {
		t.Fatal(err)
	}
	firsts := func(ph *VPAPhases) []int {
		t.Helper()
		m, err := Run(st, "vpa", Env{VPABinary: bin, VPAPhases: ph})
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for p, at := range m.ResizedAt {
			if len(at) == 0 {
				t.Fatalf("%+v: pod %d never resized: %v", ph, p, m.ResizedAt)
			}
			out = append(out, at[0])
		}
		return out
	}
	def, lab := firsts(nil), firsts(&VPAPhases{Recommender: 44, Updater: 43})
	t.Logf("first resizes: default phases %v, recommender 44 and updater 43 %v", def, lab)
	if d := def[1] - def[0]; d != 60 && d != -60 {
		t.Errorf("default phases: first resizes %v, want one loop (60 s) apart", def)
	}
	// The first recommendation comes at 44 s instead of 59, and the
	// updater, a second before the recommender, acts on it a loop later
	// (at 103 s, effective at 104): 44 s after the default's 60.
	if lab[0] != def[0]+44 || lab[1] != def[1]+44 {
		t.Errorf("phases 44/43: first resizes %v, want 44 s after %v", lab, def)
	}
}

// TestOOMKillsCaused: a kill at a working set the written 200 B limit
// would hold is the sizer's; one above it is the workload's own, as the
// static run's kills always are.
func TestOOMKillsCaused(t *testing.T) {
	tr := tiny([]float64{100, 100, 100}, []float64{50, 250, 50})
	m := newMetrics(tr, "snug")
	r := node.Resources{CPURequestMillis: 200, CPULimitMillis: 200, MemRequestBytes: 100, MemLimitBytes: 120}
	m.add(0, 0, 0, node.Second{OOMKilled: true, KilledAtBytes: 150}, r)
	m.add(0, 0, 1, node.Second{OOMKilled: true, KilledAtBytes: 250}, r)
	if m.OOMKills != 2 || m.OOMKillsCaused != 1 {
		t.Errorf("oom kills %d, caused %d; want 2 and 1", m.OOMKills, m.OOMKillsCaused)
	}
	s, err := Run(tr, "static", Env{})
	if err != nil {
		t.Fatal(err)
	}
	if s.OOMKills != 1 || s.OOMKillsCaused != 0 {
		t.Errorf("static: oom kills %d, caused %d; want 1 and 0", s.OOMKills, s.OOMKillsCaused)
	}
}
