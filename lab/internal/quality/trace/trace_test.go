package trace

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGenerateDeterministic(t *testing.T) {
	for _, s := range Shapes() {
		a, err := Generate(s, 7)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Generate(s, 7)
		c, _ := Generate(s, 8)
		if !sameTrace(a, b) {
			t.Errorf("%s: seed 7 twice gave different traces", s)
		}
		if sameTrace(a, c) {
			t.Errorf("%s: seeds 7 and 8 gave the same demand", s)
		}
	}
	if _, err := Generate("nope", 1); err == nil {
		t.Error("an unknown shape was generated")
	}
}

// sameTrace compares demand and steps (cmp.Equal is slow on a week of
// seconds).
func sameTrace(a, b *Trace) bool {
	if a.Seconds != b.Seconds || !slices.Equal(a.Steps, b.Steps) || len(a.Pods) != len(b.Pods) {
		return false
	}
	for i := range a.Pods {
		for j := range a.Pods[i].Containers {
			x, y := a.Pods[i].Containers[j], b.Pods[i].Containers[j]
			if !slices.Equal(x.CPUMillis, y.CPUMillis) || !slices.Equal(x.MemBytes, y.MemBytes) || x.CPURequestMillis != y.CPURequestMillis {
				return false
			}
		}
	}
	return true
}

func TestCorpus(t *testing.T) {
	if n := len(Shapes()); n < 12 {
		t.Errorf("%d shapes, want at least 12", n)
	}
	for _, s := range TuningSeeds {
		if slices.Contains(HeldOutSeeds, s) {
			t.Errorf("seed %d is in both halves", s)
		}
	}
	c, err := Corpus([]int64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 2*len(Shapes()) {
		t.Errorf("corpus of %d traces, want %d", len(c), 2*len(Shapes()))
	}
}

func mean(v []float64, from, to int) float64 {
	s := 0.0
	for _, x := range v[from:to] {
		s += x
	}
	return s / float64(to-from)
}

func gen(t *testing.T, s string) *Trace {
	t.Helper()
	tr, err := Generate(s, 1)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func app(tr *Trace) Container { return tr.Pods[0].Containers[0] }

// TestShapes checks that each shape has the property its name promises.
func TestShapes(t *testing.T) {
	h := 3600
	t.Run("diurnal", func(t *testing.T) {
		tr := gen(t, "diurnal")
		c := app(tr)
		if tr.Seconds != 24*h {
			t.Errorf("%d s, want a day", tr.Seconds)
		}
		night, afternoon := mean(c.CPUMillis, 2*h, 4*h), mean(c.CPUMillis, 14*h, 16*h)
		if afternoon < 3*night {
			t.Errorf("afternoon %.0fm vs night %.0fm, want at least 3x", afternoon, night)
		}
	})
	t.Run("weekly", func(t *testing.T) {
		tr := gen(t, "weekly")
		c := app(tr)
		if tr.Seconds != 7*24*h {
			t.Errorf("%d s, want a week", tr.Seconds)
		}
		if wd, we := mean(c.CPUMillis, 0, 5*24*h), mean(c.CPUMillis, 5*24*h, 7*24*h); we > 0.6*wd {
			t.Errorf("weekend %.0fm vs weekdays %.0fm, want a quiet weekend", we, wd)
		}
	})
	t.Run("step", func(t *testing.T) {
		tr := gen(t, "step")
		c := app(tr)
		s := tr.Steps[0]
		if r := mean(c.CPUMillis, s, s+60) / mean(c.CPUMillis, s-60, s); r < 3.5 || r > 4.5 {
			t.Errorf("step of %.1fx, want 4x", r)
		}
		if len(tr.Steps) != 2 {
			t.Errorf("%d steps up, want 2", len(tr.Steps))
		}
	})
	t.Run("spikes", func(t *testing.T) {
		tr := gen(t, "spikes")
		c := app(tr)
		for _, s := range tr.Steps {
			if c.CPUMillis[s] < 300 || c.CPUMillis[s+21] > 100 {
				t.Errorf("spike at %d: %.0fm then %.0fm 21 s later, want > 300 then back under 100", s, c.CPUMillis[s], c.CPUMillis[s+21])
			}
		}
		if len(tr.Steps) < 8 {
			t.Errorf("%d spikes in 2 h, want at least 8", len(tr.Steps))
		}
	})
	t.Run("batch", func(t *testing.T) {
		tr := gen(t, "batch")
		c := app(tr)
		s := tr.Steps[0]
		if s < 2*h || mean(c.CPUMillis, s, s+h) < 10*mean(c.CPUMillis, 0, s) || c.MemBytes[s+10] < 3*c.MemBytes[s-10] {
			t.Errorf("heavy phase at %d s: want after 2 h light, 10x cpu and 3x memory", s)
		}
	})
	t.Run("leak", func(t *testing.T) {
		c := app(gen(t, "leak"))
		if !c.MemByAge || c.MemBytes[len(c.MemBytes)-1] <= float64(c.MemLimitBytes) || c.MemBytes[0] >= float64(c.MemLimitBytes)/2 {
			t.Errorf("leak: want memory by age, from under half the limit to over it")
		}
		if !slices.IsSorted(c.MemBytes) {
			t.Error("a leak's memory never falls")
		}
	})
	t.Run("jvm", func(t *testing.T) {
		c := app(gen(t, "jvm"))
		drops := 0
		for i := 1; i < len(c.MemBytes); i++ {
			if c.MemBytes[i] < c.MemBytes[i-1]*0.7 {
				drops++
			}
		}
		if drops < 50 || !c.MemByAge {
			t.Errorf("%d collections in 2 h, want a sawtooth of at least 50", drops)
		}
	})
	t.Run("idle-wake", func(t *testing.T) {
		tr := gen(t, "idle-wake")
		c := app(tr)
		s := tr.Steps[0]
		if mean(c.CPUMillis, 0, s) > 10 || mean(c.CPUMillis, s, s+600) < 250 {
			t.Error("want idle (under 10m) then awake (over 250m)")
		}
	})
	t.Run("startup", func(t *testing.T) {
		c := app(gen(t, "startup"))
		if mean(c.CPUMillis, 0, 40) < 5*mean(c.CPUMillis, 120, 3600) {
			t.Error("want a start-up burst of at least 5x the steady cpu")
		}
	})
	t.Run("noisy", func(t *testing.T) {
		c := app(gen(t, "noisy"))
		m := mean(c.CPUMillis, 0, len(c.CPUMillis))
		v := 0.0
		for _, x := range c.CPUMillis {
			v += (x - m) * (x - m)
		}
		if cv := math.Sqrt(v/float64(len(c.CPUMillis))) / m; cv < 0.1 || m < 150 || m > 250 {
			t.Errorf("mean %.0fm, variation %.2f; want about 200m and noisy", m, cv)
		}
	})
	t.Run("multi", func(t *testing.T) {
		if n := len(gen(t, "multi").Pods[0].Containers); n != 6 {
			t.Errorf("%d containers, want 6", n)
		}
	})
	t.Run("hot-replica", func(t *testing.T) {
		tr := gen(t, "hot-replica")
		if len(tr.Pods) != 3 {
			t.Fatalf("%d pods, want 3", len(tr.Pods))
		}
		s := tr.Steps[0]
		hot := mean(tr.Pods[2].Containers[0].CPUMillis, s, tr.Seconds)
		for _, p := range tr.Pods[:2] {
			if cold := mean(p.Containers[0].CPUMillis, s, tr.Seconds); hot < 3*cold {
				t.Errorf("hot %.0fm vs %s %.0fm, want 3x", hot, p.Name, cold)
			}
		}
	})
}

func TestValidate(t *testing.T) {
	good := func() *Trace {
		return &Trace{Name: "t", Seconds: 2, Pods: []Pod{{Name: "p", Containers: []Container{{Name: "c", CPUMillis: []float64{1, 2}, MemBytes: []float64{1, 2}}}}}}
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]func(*Trace){
		"short series": func(t *Trace) { t.Pods[0].Containers[0].CPUMillis = []float64{1} },
		"negative":     func(t *Trace) { t.Pods[0].Containers[0].MemBytes[1] = -1 },
		"request > lim": func(t *Trace) {
			t.Pods[0].Containers[0].CPURequestMillis, t.Pods[0].Containers[0].CPULimitMillis = 2, 1
		},
		"no pods":        func(t *Trace) { t.Pods = nil },
		"step outside":   func(t *Trace) { t.Steps = []int{5} },
		"repeated pods":  func(t *Trace) { t.Pods = append(t.Pods, t.Pods[0]) },
		"no seconds":     func(t *Trace) { t.Seconds = 0 },
		"unnamed contnr": func(t *Trace) { t.Pods[0].Containers[0].Name = "" },
	} {
		tr := good()
		bad(tr)
		if err := tr.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
}

func TestReadAlibaba(t *testing.T) {
	f, err := os.Open("testdata/alibaba.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ReadAlibaba(f, "ali", AlibabaOptions{CPUMillis: 1000, MemBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// Time stamps 100..110: 11 seconds; c_1 at 10% cpu, 20% mem until 110.
	if tr.Seconds != 11 || len(tr.Pods) != 2 {
		t.Fatalf("%d seconds, %d pods; want 11, 2", tr.Seconds, len(tr.Pods))
	}
	c1 := tr.Pods[0].Containers[0]
	if c1.CPUMillis[0] != 100 || c1.MemBytes[9] != 200 || c1.CPUMillis[10] != 500 || c1.MemBytes[10] != 300 {
		t.Errorf("c_1 = cpu %v mem %v", c1.CPUMillis, c1.MemBytes)
	}
	if c1.CPURequestMillis != 1000 || c1.MemLimitBytes != 1000 {
		t.Errorf("c_1 starts at %d m / %d B, want the sizes", c1.CPURequestMillis, c1.MemLimitBytes)
	}
	// c_2: nothing before 103; at 103 cpu 20% and mem unknown (-1); at 105
	// cpu 101 (invalid, kept at 20%) and mem 40%.
	c2 := tr.Pods[1].Containers[0]
	if c2.CPUMillis[2] != 0 || c2.CPUMillis[3] != 200 || c2.MemBytes[3] != 0 || c2.CPUMillis[5] != 200 || c2.MemBytes[5] != 400 {
		t.Errorf("c_2 = cpu %v mem %v", c2.CPUMillis, c2.MemBytes)
	}
	for name, in := range map[string]string{"empty": "", "short rows": "a,b,c\n", "bad number": "c,m,x,1,1,,,,,,\n"} {
		if _, err := ReadAlibaba(strings.NewReader(in), name, AlibabaOptions{CPUMillis: 1, MemBytes: 1}); err == nil {
			t.Errorf("%s: read", name)
		}
	}
	if _, err := ReadAlibaba(strings.NewReader("c,m,1,1,1\n"), "x", AlibabaOptions{}); err == nil {
		t.Error("read without sizes")
	}
}

func TestReadSnugCSV(t *testing.T) {
	f, err := os.Open("testdata/snug.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ReadSnugCSV(f, "snug")
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Pods[0].Containers[0]
	if tr.Seconds != 4 || tr.Pods[0].Name != "app-1" || c.Name != "app" {
		t.Fatalf("trace %d s, %s/%s", tr.Seconds, tr.Pods[0].Name, c.Name)
	}
	// Second 1 was throttled half the periods: demand 100 x 1.5. The
	// watch row without usage is skipped.
	want := []float64{40, 150, 150, 80}
	if !cmp.Equal(c.CPUMillis, want) || c.MemBytes[2] != 60000000 {
		t.Errorf("cpu %v mem %v, want cpu %v", c.CPUMillis, c.MemBytes, want)
	}
	if c.CPURequestMillis != 50 || c.CPULimitMillis != 100 || c.MemLimitBytes != 128<<20 {
		t.Errorf("starting resources %+v", c)
	}
	if _, err := ReadSnugCSV(strings.NewReader("a,b\n1,2\n"), "x"); err == nil {
		t.Error("read a CSV that is not snug's")
	}
}

// TestReadSnug reads a JSON recording and the CSV of the same recording
// (internal/trace's testdata) to the same trace.
func TestReadSnug(t *testing.T) {
	read := func(path string) *Trace {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		tr, err := ReadSnug(f, "deferred")
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	j, c := read("../../../../internal/trace/testdata/deferred.json"), read("../../../../internal/trace/testdata/deferred.csv")
	if !sameTrace(j, c) || j.Seconds < 5 || j.Pods[0].Containers[0].CPUMillis[0] <= 0 {
		t.Errorf("json %+v\ncsv %+v", j, c)
	}
	if _, err := ReadSnug(strings.NewReader(`{"format": 99}`), "x"); err == nil {
		t.Error("read a recording of an unknown format")
	}
}
