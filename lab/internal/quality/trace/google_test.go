package trace

import (
	"encoding/csv"
	"errors"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// testdata/google2019.csv is a real excerpt of Google cluster-data 2019
// (instance_usage) as github.com/muse-research-lab/cloud-traces-comparison
// publishes it in docs/demo/input-sim (MIT licence): the first 24 rows of
// tasks 0 and 3 and rows 5-24 of task 4 of job 380263806889, and the first
// 6 rows of task 2 of job 382417448240, the files concatenated with their
// headers.

var googleScale = GoogleOptions{CPUMillis: 64000, MemBytes: 256 << 30, Seed: 1}

func readGoogleFixture(t *testing.T, o GoogleOptions) []*Trace {
	t.Helper()
	f, err := os.Open("testdata/google2019.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	trs, err := ReadGoogle(f, "g", o)
	if err != nil {
		t.Fatal(err)
	}
	return trs
}

// fixtureRow returns the fixture's row of a task at a time (microseconds),
// by column name.
func fixtureRow(t *testing.T, task, at string) map[string]float64 {
	t.Helper()
	f, err := os.Open("testdata/google2019.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[1:] {
		if r[1] == task && r[0] == at {
			out := map[string]float64{}
			for i, h := range recs[0] {
				out[h], _ = strconv.ParseFloat(r[i], 64)
			}
			return out
		}
	}
	t.Fatalf("no row of %s at %s", task, at)
	return nil
}

func TestReadGoogle(t *testing.T) {
	trs := readGoogleFixture(t, googleScale)
	var got []string
	for _, tr := range trs {
		var pods []string
		for _, p := range tr.Pods {
			pods = append(pods, p.Name)
		}
		got = append(got, tr.Name+" "+strconv.Itoa(tr.Seconds)+" "+strings.Join(pods, ","))
	}
	// Job 380263806889: tasks 0 and 3 from 461643 s, task 4 from 462600 s,
	// all to 468600 s: the stretch where all three run is 6000 s. Job
	// 382417448240: one task, 900078-901800 s.
	want := []string{"g/380263806889 6000 task-0,task-3,task-4", "g/382417448240 1722 task-2"}
	if !slices.Equal(got, want) {
		t.Fatalf("traces %q, want %q", got, want)
	}
	if n := trs[0].Note; !strings.Contains(n, "3 of its 3 tasks") || !strings.Contains(n, "hours 128.5-130.2") {
		t.Errorf("note %q", n)
	}
	row := fixtureRow(t, "380263806889-3", "462600000000")
	c := trs[0].Pods[1].Containers[0]
	if c.CPURequestMillis != int64(math.Round(row["cpu_limit"]*64000)) || c.CPULimitMillis != 0 ||
		c.MemLimitBytes != int64(math.Round(row["memory_limit"]*(256<<30))) || c.MemRequestBytes != c.MemLimitBytes {
		t.Errorf("starting resources %dm/%dm %d/%d, want the row's limits scaled: cpu as request alone, memory as request and limit",
			c.CPURequestMillis, c.CPULimitMillis, c.MemRequestBytes, c.MemLimitBytes)
	}
	withLimit := googleScale
	withLimit.CPULimit = true
	if l := readGoogleFixture(t, withLimit)[0].Pods[1].Containers[0]; l.CPULimitMillis != c.CPURequestMillis || l.CPURequestMillis != c.CPURequestMillis {
		t.Errorf("--google-cpu-limit: cpu %dm/%dm, want request = limit = %dm", l.CPURequestMillis, l.CPULimitMillis, c.CPURequestMillis)
	}
	if n := trs[0].Note; !strings.Contains(n, "no cpu limit") {
		t.Errorf("note %q does not say the cpu has no limit", n)
	}

	// The first window of task 3 is the row at 462600 s: its 300 seconds
	// have the row's percentiles, its mean memory and its peak.
	cpu := slices.Clone(c.CPUMillis[:GoogleWindow])
	slices.Sort(cpu)
	if lo := row["p0_cpu_usage"] * 64000; cpu[0] < lo || cpu[0] > row["p10_cpu_usage"]*64000 {
		t.Errorf("smallest drawn second %.3fm, want between p0 %.3fm and p10", cpu[0], lo)
	}
	for _, p := range []int{50, 90, 99} {
		want := row["p"+strconv.Itoa(p)+"_cpu_usage"] * 64000
		// The p-th of 300 stratified quantiles sits within one stratum.
		lo, hi := cpu[p*3-1], cpu[min(GoogleWindow-1, p*3+1)]
		if want < lo-1e-9 || want > hi+1e-9 {
			t.Errorf("p%d of the drawn window: row says %.3fm, drawn seconds around it %.3f-%.3fm", p, want, lo, hi)
		}
	}
	if top := cpu[GoogleWindow-1]; top > row["max_cpu_usage"]*64000+1e-9 || top < row["p99_cpu_usage"]*64000 {
		t.Errorf("largest drawn second %.3fm, want between p99 %.3fm and max %.3fm", top, row["p99_cpu_usage"]*64000, row["max_cpu_usage"]*64000)
	}
	mem := c.MemBytes[:GoogleWindow]
	mean := 0.0
	for _, v := range mem {
		mean += v / GoogleWindow
	}
	if want := row["avg_memory_usage"] * (256 << 30); math.Abs(mean-want) > 1e-9*want {
		t.Errorf("mean drawn memory %.0f, want the row's mean %.0f", mean, want)
	}
	if want := row["max_memory_usage"] * (256 << 30); slices.Max(mem) != want {
		t.Errorf("peak drawn memory %.0f, want the row's max %.0f", slices.Max(mem), want)
	}
	// Seconds are not all alike: the order is shuffled and not sorted.
	if slices.IsSorted(c.CPUMillis[:GoogleWindow]) {
		t.Error("the drawn cpu seconds are in sorted order")
	}
}

func TestReadGoogleHold(t *testing.T) {
	o := googleScale
	o.Hold = true
	c := readGoogleFixture(t, o)[0].Pods[1].Containers[0]
	for i, at := range []string{"462600000000", "462900000000"} {
		row := fixtureRow(t, "380263806889-3", at)
		for s := i * GoogleWindow; s < (i+1)*GoogleWindow; s++ {
			if c.CPUMillis[s] != row["avg_cpu_usage"]*64000 || c.MemBytes[s] != row["max_memory_usage"]*(256<<30) {
				t.Fatalf("second %d: cpu %.3fm memory %.0f, want the window's mean cpu %.3fm and peak memory %.0f held",
					s, c.CPUMillis[s], c.MemBytes[s], row["avg_cpu_usage"]*64000, row["max_memory_usage"]*(256<<30))
			}
		}
	}
}

func TestReadGoogleDeterministic(t *testing.T) {
	a, b := readGoogleFixture(t, googleScale), readGoogleFixture(t, googleScale)
	o := googleScale
	o.Seed = 2
	c := readGoogleFixture(t, o)
	for i := range a {
		if !sameTrace(a[i], b[i]) {
			t.Errorf("%s: seed 1 twice gave different traces", a[i].Name)
		}
		if sameTrace(a[i], c[i]) {
			t.Errorf("%s: seeds 1 and 2 drew the same seconds", a[i].Name)
		}
	}
	// Half the scale, half the demand: the scale is a unit, not a shape.
	o = googleScale
	o.CPUMillis, o.MemBytes = o.CPUMillis/2, o.MemBytes/2
	h := readGoogleFixture(t, o)[0].Pods[0].Containers[0]
	f := a[0].Pods[0].Containers[0]
	for s := range f.CPUMillis {
		if math.Abs(h.CPUMillis[s]*2-f.CPUMillis[s]) > 1e-9 || math.Abs(h.MemBytes[s]*2-f.MemBytes[s]) > 1e-3 {
			t.Fatalf("second %d at half scale: %.4fm %.0f, want half of %.4fm %.0f", s, h.CPUMillis[s], h.MemBytes[s], f.CPUMillis[s], f.MemBytes[s])
		}
	}
}

func TestReadGoogleHours(t *testing.T) {
	o := googleScale
	o.Hours = 0.5
	trs := readGoogleFixture(t, o)
	if trs[0].Seconds != 1800 || trs[1].Seconds != 1722 {
		t.Errorf("seconds %d and %d, want 1800 (capped) and 1722", trs[0].Seconds, trs[1].Seconds)
	}
}

func TestReadGoogleErrors(t *testing.T) {
	head := "time,collection_id,instance_index,avg_cpu_usage"
	for _, tc := range []struct {
		in   string
		o    GoogleOptions
		want string
	}{
		{head + "\n1,2,3,4\n", googleScale, `no column "max_cpu_usage"`},
		{"", googleScale, "EOF"},
		{"a,b\n", GoogleOptions{CPUMillis: 0, MemBytes: 1}, "scales must be positive"},
	} {
		_, err := ReadGoogle(strings.NewReader(tc.in), "x", tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
	// A header and only unusable rows (negative usage): no rows.
	f, err := os.ReadFile("testdata/google2019.csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(f), "\n")
	cols := strings.Split(lines[1], ",")
	cols[10] = "-1" // avg_cpu_usage
	_, err = ReadGoogle(strings.NewReader(lines[0]+"\n"+strings.Join(cols, ",")+"\n"), "x", googleScale)
	if !errors.Is(err, ErrNoRows) {
		t.Errorf("only a negative row: error %v, want ErrNoRows", err)
	}
	// A short row is an error with its line.
	_, err = ReadGoogle(strings.NewReader(lines[0]+"\n"+lines[1]+"\n1,2\n"), "x", googleScale)
	if err == nil || !strings.Contains(err.Error(), "line 3: 2 columns") {
		t.Errorf("a short row: error %v, want line 3's column count", err)
	}
}

func TestBusiest(t *testing.T) {
	for _, tc := range []struct {
		spans    [][2]float64
		from, to float64
	}{
		{[][2]float64{{0, 100}}, 0, 100},
		{[][2]float64{{0, 100}, {50, 200}}, 50, 100},
		// Two stretches with two tasks: the longer wins.
		{[][2]float64{{0, 100}, {90, 300}, {150, 400}}, 150, 300},
		// Back to back: never both.
		{[][2]float64{{0, 100}, {100, 150}}, 0, 100},
	} {
		from, to := busiest(tc.spans)
		if from != tc.from || to != tc.to {
			t.Errorf("%v: %v-%v, want %v-%v", tc.spans, from, to, tc.from, tc.to)
		}
	}
}
