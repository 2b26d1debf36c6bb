package resize

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// applyPatch applies an RFC 6902 patch of test, add and replace operations
// to a JSON document, as the API server would, failing on a failed test.
func applyPatch(doc, patch []byte) ([]byte, error) {
	var root any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, fmt.Errorf("patch is not a JSON array of operations: %w", err)
	}
	for _, op := range ops {
		var value any
		if err := json.Unmarshal(op.Value, &value); err != nil {
			return nil, fmt.Errorf("%s %s: bad value: %w", op.Op, op.Path, err)
		}
		parent, key, err := resolve(root, op.Path)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", op.Op, op.Path, err)
		}
		switch p := parent.(type) {
		case map[string]any:
			cur, exists := p[key]
			switch op.Op {
			case "test":
				if !exists || !reflect.DeepEqual(cur, value) {
					return nil, fmt.Errorf("test %s failed: have %v, want %v", op.Path, cur, value)
				}
			case "replace":
				if !exists {
					return nil, fmt.Errorf("replace %s: no such member", op.Path)
				}
				p[key] = value
			case "add":
				p[key] = value
			default:
				return nil, fmt.Errorf("unsupported op %q", op.Op)
			}
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(p) {
				return nil, fmt.Errorf("%s %s: bad index", op.Op, op.Path)
			}
			switch op.Op {
			case "test":
				if !reflect.DeepEqual(p[i], value) {
					return nil, fmt.Errorf("test %s failed", op.Path)
				}
			case "replace":
				p[i] = value
			default:
				return nil, fmt.Errorf("unsupported op %q on an array", op.Op)
			}
		default:
			return nil, fmt.Errorf("%s %s: parent is not a container", op.Op, op.Path)
		}
	}
	return json.Marshal(root)
}

func resolve(root any, pointer string) (any, string, error) {
	if !strings.HasPrefix(pointer, "/") {
		return nil, "", fmt.Errorf("bad pointer %q", pointer)
	}
	parts := strings.Split(pointer[1:], "/")
	for i := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(parts[i])
	}
	cur := root
	for _, part := range parts[:len(parts)-1] {
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[part]
			if !ok {
				return nil, "", fmt.Errorf("no member %q", part)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil, "", fmt.Errorf("bad index %q", part)
			}
			cur = c[i]
		default:
			return nil, "", fmt.Errorf("cannot descend into %q", part)
		}
	}
	return cur, parts[len(parts)-1], nil
}

// patched applies a patch to the pod, through JSON, as the API server does.
func patched(t testing.TB, pod *corev1.Pod, patch []byte) *corev1.Pod {
	t.Helper()
	doc, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	out, err := applyPatch(doc, patch)
	if err != nil {
		t.Fatalf("patch does not apply: %v\npatch: %s", err, patch)
	}
	var got corev1.Pod
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

// checkPatchShape asserts the patch is a JSON array of operations that
// starts with tests, has at least one, and only touches container resources.
func checkPatchShape(t testing.TB, patch []byte) {
	t.Helper()
	var ops []jsonOp
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatalf("patch is not valid JSON: %v: %s", err, patch)
	}
	if len(ops) == 0 || ops[0].Op != "test" {
		t.Fatalf("patch does not start with a test: %s", patch)
	}
	seenChange := false
	for _, op := range ops {
		switch op.Op {
		case "test":
			if seenChange {
				t.Fatalf("test after a change in %s", patch)
			}
		case "add", "replace":
			seenChange = true
			if !strings.Contains(op.Path, "/resources") {
				t.Fatalf("op touches %s", op.Path)
			}
		default:
			t.Fatalf("unexpected op %q", op.Op)
		}
		if !strings.HasPrefix(op.Path, "/spec/containers/") && !strings.HasPrefix(op.Path, "/spec/initContainers/") && !strings.HasPrefix(op.Path, "/spec/resources") {
			t.Fatalf("op outside containers and pod-level resources: %s", op.Path)
		}
	}
	if !seenChange {
		t.Fatalf("patch changes nothing: %s", patch)
	}
}

// checkResult asserts the invariants every NewPlan result must hold.
func checkResult(t testing.TB, in Input, plan *Plan, err error) {
	t.Helper()
	if err != nil {
		var r *Refusal
		if !errors.As(err, &r) {
			t.Fatalf("error is not a *Refusal: %v", err)
		}
		if r.Reason == "" || r.Message == "" || strings.ToLower(r.Message[:1]) != r.Message[:1] {
			t.Fatalf("refusal without reason or lowercase message: %#v", r)
		}
		return
	}
	if plan.NoOp() {
		if plan.Patch != nil {
			t.Fatalf("no-op plan with a patch: %s", plan.Patch)
		}
		return
	}
	checkPatchShape(t, plan.Patch)
	old := in.Pod
	got := patched(t, old, plan.Patch)
	if was, now := currentQoS(old), ComputeQoS(got); was != now {
		t.Fatalf("QoS changed from %s to %s", was, now)
	}
	planned := map[string]ContainerPlan{}
	for _, c := range plan.Containers {
		planned[c.Name] = c
	}
	opts := in.Options.withDefaults()
	wishes := map[string]ContainerWish{}
	for _, w := range in.Wish.Containers {
		wishes[w.Name] = w
	}
	all := func(p *corev1.Pod) []corev1.Container {
		out := append(append([]corev1.Container{}, p.Spec.Containers...), p.Spec.InitContainers...)
		if p.Spec.Resources != nil {
			// The pod-level resources, checked as one more container.
			out = append(out, corev1.Container{Name: PodLevel, Resources: *p.Spec.Resources})
		}
		return out
	}
	if got.Spec.Resources != nil {
		// Pod-level values stay at what the containers ask for, as the
		// API server validates.
		requests := func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }
		aggregate := containersTotal(got, requests, requests)
		pv := readValues(*got.Spec.Resources)
		for _, r := range resources {
			if need, ok := unitsOf(aggregate, r); ok && pv[r].req.set && pv[r].req.units < need {
				t.Fatalf("pod-level %s request %d below the containers' %d", r.name(), pv[r].req.units, need)
			}
			for _, c := range got.Spec.Containers {
				if l, ok := unitsOf(c.Resources.Limits, r); ok && pv[r].lim.set && pv[r].lim.units < l {
					t.Fatalf("pod-level %s limit %d below container %s's %d", r.name(), pv[r].lim.units, c.Name, l)
				}
			}
		}
	}
	oldAll, newAll := all(old), all(got)
	for i := range oldAll {
		o, n := oldAll[i], newAll[i]
		// Compare values, not strings: a JSON round trip may change a
		// quantity's format (BinarySI 100000000 comes back as 100M).
		if pc, ok := planned[o.Name]; ok {
			want := corev1.ResourceRequirements{Requests: pc.Requests, Limits: pc.Limits}
			if readValues(n.Resources) != readValues(want) {
				t.Fatalf("container %s: patched %s, planned %s", o.Name, summary(n.Resources), summary(want))
			}
		} else if readValues(o.Resources) != readValues(n.Resources) {
			t.Fatalf("container %s changed without being planned: %s -> %s", o.Name, summary(o.Resources), summary(n.Resources))
		}
		for _, pair := range [][2]corev1.ResourceList{{o.Resources.Requests, n.Resources.Requests}, {o.Resources.Limits, n.Resources.Limits}} {
			for k := range pair[0] {
				if _, ok := pair[1][k]; !ok {
					t.Fatalf("container %s: key %s removed", o.Name, k)
				}
			}
		}
		ov, nv := readValues(o.Resources), readValues(n.Resources)
		for _, r := range resources {
			if nv[r].lim.set && !nv[r].req.set {
				t.Fatalf("container %s: %s limit without request", o.Name, r.name())
			}
			if nv[r].req.set && nv[r].lim.set && nv[r].req.units > nv[r].lim.units {
				t.Fatalf("container %s: %s request above limit: %s", o.Name, r.name(), summary(n.Resources))
			}
		}
		if w, ok := wishes[o.Name]; ok && w.Policy != nil && w.Policy.ControlledValues == RequestsOnly {
			for _, r := range resources {
				if ov[r].lim == nv[r].lim {
					continue
				}
				// A Guaranteed pod stays Guaranteed: its limit follows its request.
				if currentQoS(in.Pod) != corev1.PodQOSGuaranteed || nv[r].lim != nv[r].req {
					t.Fatalf("container %s: RequestsOnly changed the %s limit", o.Name, r.name())
				}
			}
		}
		// Memory never drops by more than one step, nor below usage plus
		// headroom, and a limit never drops without a usage figure.
		om, nm := ov[memory], nv[memory]
		u := in.Usage[o.Name]
		usage := max(u.MemoryWorkingSetBytes, u.MemoryPeakBytes)
		known := usage > 0
		floor := scaleCeil(usage, 1+opts.MemoryHeadroom)
		for i, ab := range [][2]amount{{om.req, nm.req}, {om.lim, nm.lim}} {
			was, now := ab[0], ab[1]
			isLimit := i == 1
			if !now.set || (was.set && now.units >= was.units) {
				continue
			}
			if !was.set {
				if isLimit && (!known || now.units < floor) {
					t.Fatalf("container %s: memory limit %d added below usage floor %d (known %v)", o.Name, now.units, floor, known)
				}
				continue
			}
			slack := int64(1) // KeptBurstable may take one byte off a request
			if isLimit {
				slack = 0
				if !known {
					t.Fatalf("container %s: memory limit lowered without usage", o.Name)
				}
			}
			if now.units+slack < scaleCeil(was.units, 1-opts.MaxMemoryDecreaseFraction) {
				t.Fatalf("container %s: memory dropped more than a step: %d -> %d", o.Name, was.units, now.units)
			}
			if known && now.units+slack < min(was.units, floor) {
				t.Fatalf("container %s: memory %d below usage floor %d", o.Name, now.units, floor)
			}
		}
	}
	if len(plan.Restarts()) > 0 && !opts.AllowRestart {
		t.Fatalf("restarts %v planned without AllowRestart", plan.Restarts())
	}
	if in.NodeAllocatable != nil {
		oldTotal, newTotal := podRequests(old, false), podRequests(got, false)
		for _, r := range resources {
			n, _ := unitsOf(newTotal, r)
			o, _ := unitsOf(oldTotal, r)
			alloc, ok := unitsOf(in.NodeAllocatable, r)
			others, _ := unitsOf(in.OthersClaimed, r)
			if !ok || n <= o {
				continue
			}
			if plan.Predicted == WouldApply && n > alloc-others {
				t.Fatalf("%s total %d does not fit in %d-%d but predicted WouldApply", r.name(), n, alloc, others)
			}
			// A capped cpu grow leaves the reserve free, or grows nothing.
			if reserve, _ := unitsOf(in.Reserve, r); opts.NoRoom == NoRoomCap && r != memory && n > alloc-others-reserve {
				t.Fatalf("%s total %d grew from %d into the reserve: more than %d-%d-%d", r.name(), n, o, alloc, others, reserve)
			}
		}
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
