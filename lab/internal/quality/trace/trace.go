package trace

import (
	"errors"
	"fmt"
	"time"
)

// Epoch is the wall-clock time second 0 of every generated trace maps to.
// Fixed, so that replays are reproducible.
var Epoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC) // a Monday

// Trace is one workload: one or more pods of the same containers (replicas
// of one workload, as one VPA or one SnugPolicy covers them), replayed
// second by second.
type Trace struct {
	// Name identifies the trace, e.g. "diurnal/seed1".
	Name string
	// Shape is the generator's shape name ("" for an imported trace).
	Shape string
	// Seed is the generator's seed.
	Seed int64
	// Seconds is the trace's length; every demand series has this many
	// entries.
	Seconds int
	// Pods are the workload's pods.
	Pods []Pod
	// Steps are the seconds at which demand steps up sharply: each is one
	// "starvation ended" measurement.
	Steps []int
	// Note says where an imported trace came from and how it was read.
	Note string
}

// Pod is one pod of a trace.
type Pod struct {
	Name       string
	Containers []Container
}

// Container is one container: its starting resources and, per second, the
// demand it would use if nothing held it back.
type Container struct {
	Name string
	// The starting requests and limits, in millicores and bytes; 0 means
	// not set.
	CPURequestMillis, CPULimitMillis int64
	MemRequestBytes, MemLimitBytes   int64
	// CPURestart and MemRestart are resizePolicy RestartContainer for cpu
	// and memory (the default, false, is NotRequired).
	CPURestart, MemRestart bool
	// CPUMillis is the CPU wanted in each second, in millicores.
	CPUMillis []float64
	// MemBytes is the working set wanted in each second, in bytes.
	MemBytes []float64
	// MemByAge says the memory series follows the container's age, not the
	// wall clock: a restarted container (after an OOM kill) starts it again
	// from second 0, as a leaking or a JVM process does.
	MemByAge bool
}

// Validate checks a trace's shape: at least one second and one container,
// series of the trace's length, no negative demand, unique names.
func (t *Trace) Validate() error {
	if t.Seconds <= 0 {
		return fmt.Errorf("trace %q: no seconds", t.Name)
	}
	if len(t.Pods) == 0 {
		return fmt.Errorf("trace %q: no pods", t.Name)
	}
	pods := map[string]bool{}
	for _, p := range t.Pods {
		if p.Name == "" || pods[p.Name] {
			return fmt.Errorf("trace %q: pod name %q empty or repeated", t.Name, p.Name)
		}
		pods[p.Name] = true
		if len(p.Containers) == 0 {
			return fmt.Errorf("trace %q: pod %q has no containers", t.Name, p.Name)
		}
		names := map[string]bool{}
		for _, c := range p.Containers {
			if c.Name == "" || names[c.Name] {
				return fmt.Errorf("trace %q: pod %q: container name %q empty or repeated", t.Name, p.Name, c.Name)
			}
			names[c.Name] = true
			if len(c.CPUMillis) != t.Seconds || len(c.MemBytes) != t.Seconds {
				return fmt.Errorf("trace %q: %s/%s: %d cpu and %d memory values, want %d", t.Name, p.Name, c.Name, len(c.CPUMillis), len(c.MemBytes), t.Seconds)
			}
			for i := range t.Seconds {
				if c.CPUMillis[i] < 0 || c.MemBytes[i] < 0 {
					return fmt.Errorf("trace %q: %s/%s: negative demand at second %d", t.Name, p.Name, c.Name, i)
				}
			}
			if c.CPULimitMillis > 0 && c.CPURequestMillis > c.CPULimitMillis || c.MemLimitBytes > 0 && c.MemRequestBytes > c.MemLimitBytes {
				return fmt.Errorf("trace %q: %s/%s: a request above its limit", t.Name, p.Name, c.Name)
			}
		}
	}
	for _, s := range t.Steps {
		if s < 0 || s >= t.Seconds {
			return fmt.Errorf("trace %q: step at %d outside the trace", t.Name, s)
		}
	}
	return nil
}

// ErrNoRows is returned by the readers for input with no usable rows.
var ErrNoRows = errors.New("no usable rows")
