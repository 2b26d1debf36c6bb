package experiment

import (
	"testing"
	"time"
)

// TestParseProcStatCPU: utime and stime (fields 14 and 15) in USER_HZ
// ticks, counted after the command, which may hold spaces and parentheses.
func TestParseProcStatCPU(t *testing.T) {
	stat := "1234 (kube let) x) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 30 0 100 200 300\n"
	got, err := parseProcStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if got != 4*time.Second {
		t.Errorf("cpu %v, want 4s (250 + 150 ticks at 100 a second)", got)
	}
	for _, bad := range []string{"1234 kubelet S 1", "1234 (kubelet) S 1 2 3", "1234 (k) S 1 1 1 0 -1 0 0 0 0 0 x 1 0"} {
		if _, err := parseProcStatCPU(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestMsPerPatch: the median over the rounds of the extra CPU per patch;
// a round without patches counts for nothing.
func TestMsPerPatch(t *testing.T) {
	r := KubeletCostRow{
		Patches: []int{30, 30, 30, 0},
		Base:    []float64{0.02, 0.02, 0.03, 0.02},
		// Extra cores 0.01, 0.005, 0.03 over 60, 60 and 120 s (the last
		// window ran long): 600, 300, 3600 ms over 30 patches.
		With:    []float64{0.03, 0.025, 0.06, 0.5},
		Seconds: []float64{60, 60, 120, 60},
	}
	if got := msPerPatch(r); got < 19.99 || got > 20.01 {
		t.Errorf("ms per patch %v, want 20 (the median of 20, 10 and 120)", got)
	}
	r.Seconds[0] = 90 // 900 ms over 30
	if got := msPerPatch(r); got < 29.99 || got > 30.01 {
		t.Errorf("ms per patch %v, want 30 (the median of 30, 10 and 120: each window's own length)", got)
	}
	if got := msPerPatch(KubeletCostRow{}); got != 0 {
		t.Errorf("no rounds: %v, want 0", got)
	}
}
