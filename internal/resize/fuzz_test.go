package resize

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// fuzzBytes hands out values from the fuzzer's bytes, zeros when they run out.
type fuzzBytes struct{ b []byte }

func (f *fuzzBytes) u32() uint32 {
	var buf [4]byte
	n := copy(buf[:], f.b)
	f.b = f.b[n:]
	return binary.LittleEndian.Uint32(buf[:])
}

func (f *fuzzBytes) pick(n int) int {
	if len(f.b) == 0 {
		return 0
	}
	v := f.b[0]
	f.b = f.b[1:]
	return int(v) % n
}

// units returns a positive amount of r: up to 64 cores, or 64 GiB at an
// odd granularity so that byte rounding is exercised.
func (f *fuzzBytes) units(r res) int64 {
	if r == cpu {
		return 1 + int64(f.u32()%64000)
	}
	return 1 + int64(f.u32()%(1<<24))*4099
}

func (f *fuzzBytes) container(name string, class int) *corev1.Container {
	c := &corev1.Container{Name: name}
	for _, r := range resources {
		kind := f.pick(3) // 0 none, 1 request, 2 request and limit
		if class == 0 {
			kind = 0
		}
		if class == 2 {
			kind = 3
		}
		if kind == 0 {
			continue
		}
		req := f.units(r)
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		c.Resources.Requests[r.name()] = quantity(r, req, nil)
		if kind == 1 {
			continue
		}
		lim := req
		if kind == 2 {
			lim += int64(f.u32() % uint32(min(req*3+1, 1<<31)))
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[r.name()] = quantity(r, lim, nil)
	}
	if f.pick(4) == 0 {
		c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	}
	return c
}

func (f *fuzzBytes) list(rs ...res) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, r := range rs {
		if f.pick(2) == 0 {
			out[r.name()] = quantity(r, f.units(r), nil)
		}
	}
	return out
}

// fuzzInput builds a pod (BestEffort, Burstable or Guaranteed), a node and
// a wish from the fuzzer's bytes.
func fuzzInput(data []byte) Input {
	f := &fuzzBytes{b: data}
	class := f.pick(3)
	b := newPod("fuzz")
	n := 1 + f.pick(3)
	var names []string
	for i := range n {
		name := fmt.Sprintf("c%d", i)
		names = append(names, name)
		b.with(f.container(name, class))
	}
	if f.pick(3) == 0 {
		b.sidecar(f.container("side", class))
		names = append(names, "side")
	}
	if f.pick(8) == 0 {
		b.restartNever()
	}
	// The planner sees pods as the API server serves them: through JSON.
	doc, err := json.Marshal(b.get())
	if err != nil {
		panic(err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(doc, &pod); err != nil {
		panic(err)
	}
	in := Input{Pod: &pod}
	if f.pick(4) != 0 {
		in.NodeAllocatable = corev1.ResourceList{}
		in.OthersClaimed = corev1.ResourceList{}
		for _, r := range resources {
			alloc := f.units(r) * 4
			in.NodeAllocatable[r.name()] = quantity(r, alloc, nil)
			in.OthersClaimed[r.name()] = quantity(r, alloc*int64(f.pick(100))/100, nil)
		}
		if f.pick(2) == 0 {
			in.Reserve = corev1.ResourceList{}
			for _, r := range resources {
				alloc, _ := unitsOf(in.NodeAllocatable, r)
				in.Reserve[r.name()] = quantity(r, alloc*int64(f.pick(30))/100, nil)
			}
		}
	}
	in.Options = Options{
		AllowRestart: f.pick(2) == 0,
		NoRoom:       []NoRoomAction{"", NoRoomRefuse, NoRoomCap, NoRoomSend}[f.pick(4)],
	}
	if f.pick(2) == 0 {
		in.Options.MemoryHeadroom = float64(f.pick(100)) / 100
		in.Options.MaxMemoryDecreaseFraction = float64(f.pick(101)) / 100
	}
	wished := map[string]bool{}
	for range 1 + f.pick(2) {
		name := names[f.pick(len(names))]
		if wished[name] {
			continue
		}
		wished[name] = true
		w := ContainerWish{Name: name}
		if f.pick(2) == 0 {
			w.Requests, w.Limits = f.list(cpu, memory), f.list(cpu, memory)
			if len(w.Requests)+len(w.Limits) == 0 {
				w.Requests = f.list(cpu)
			}
		} else {
			w.Target = f.list(cpu, memory)
			w.Policy = &Policy{ControlledValues: []ControlledValues{"", RequestsAndLimits, RequestsOnly}[f.pick(3)]}
			if f.pick(3) == 0 {
				w.Policy.ControlledResources = []corev1.ResourceName{[]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}[f.pick(2)]}
			}
			if f.pick(3) == 0 {
				w.Policy.MaxAllowed = f.list(cpu, memory)
			}
		}
		in.Wish.Containers = append(in.Wish.Containers, w)
		if f.pick(2) == 0 {
			if in.Usage == nil {
				in.Usage = map[string]Usage{}
			}
			in.Usage[name] = Usage{MemoryWorkingSetBytes: f.units(memory), MemoryPeakBytes: int64(f.pick(2)) * f.units(memory)}
		}
	}
	return in
}

// FuzzNewPlan checks the planner's invariants on random pods and wishes:
// never a QoS change, never a removed key, RequestsOnly never lifts a
// request above its limit or moves a limit, memory never drops unsafely,
// and the patch is valid JSON that starts with tests and applies to the pod.
func FuzzNewPlan(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 2, 0, 0, 0, 10, 2, 0, 1, 0, 20, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Add([]byte{2, 0, 7, 7, 7, 7, 7, 7, 7, 7, 1, 1, 0, 1, 5, 5, 5, 5, 9, 9, 9, 9, 1, 0, 0, 3, 3, 3, 3})
	f.Add(bytes.Repeat([]byte{1, 2, 3, 250, 17, 0, 99}, 20))
	f.Add(bytes.Repeat([]byte{255, 128, 0, 1}, 30))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		before := in.Pod.DeepCopy()
		plan, err := NewPlan(in)
		checkResult(t, in, plan, err)
		again, err2 := NewPlan(in)
		if (err == nil) != (err2 == nil) || (err == nil && !bytes.Equal(plan.Patch, again.Patch)) {
			t.Fatalf("NewPlan is not deterministic")
		}
		if summary(before.Spec.Containers[0].Resources) != summary(in.Pod.Spec.Containers[0].Resources) {
			t.Fatalf("NewPlan modified its input")
		}
		if patch, err := Revert(in.Pod); err != nil || patch != nil {
			t.Fatalf("Revert of a settled pod = %s, %v; want nothing", patch, err)
		}
	})
}

// TestFuzzCorpusExercisesPlans makes sure the fuzz input builder produces
// plans, not only refusals.
func TestFuzzCorpusExercisesPlans(t *testing.T) {
	plans := 0
	for i := range 2000 {
		data := make([]byte, 64)
		for j := range data {
			data[j] = byte((i*131 + j*29 + i*j*7) % 251)
		}
		in := fuzzInput(data)
		plan, err := NewPlan(in)
		checkResult(t, in, plan, err)
		if err == nil && !plan.NoOp() {
			plans++
		}
	}
	if plans < 100 {
		t.Errorf("only %d of 2000 generated inputs gave a plan", plans)
	}
	t.Logf("%d of 2000 inputs planned", plans)
}
