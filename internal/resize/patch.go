package resize

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// errRemoval is returned by buildPatch for an edit that removes a key.
var errRemoval = errors.New("patch would remove a request or limit")

// jsonOp is one RFC 6902 operation.
type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// containerEdit is the change of one container's resources.
type containerEdit struct {
	base string // JSON pointer of the container, e.g. /spec/containers/0
	name string
	// podLevel: the edit is of spec.resources (base /spec), which has no
	// name to pin.
	podLevel  bool
	cur, next corev1.ResourceRequirements
}

func containerPath(sidecar bool, index int) string {
	if sidecar {
		return fmt.Sprintf("/spec/initContainers/%d", index)
	}
	return fmt.Sprintf("/spec/containers/%d", index)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// escape escapes one JSON pointer segment (RFC 6901): resource names such
// as example.com/gpu contain a slash.
func escape(segment string) string { return pointerEscaper.Replace(segment) }

// buildPatch writes the edits as one JSON patch: first the tests, then the
// changes. Each container is pinned by a test of its name (pod-level
// resources, at /spec/resources, need none). A changed value is
// tested at its current value and replaced; a value being added is guarded
// by a test of the whole list it joins (RFC 6902 cannot test for absence),
// or of the whole resources object when the list does not exist yet.
// Values are canonical quantity strings, the form the API server stores and
// the test operations are compared with.
func buildPatch(edits []containerEdit) ([]byte, error) {
	var tests, changes []jsonOp
	tested := map[string]bool{}
	test := func(path string, value any) {
		if !tested[path] {
			tested[path] = true
			tests = append(tests, jsonOp{Op: "test", Path: path, Value: value})
		}
	}
	for _, e := range edits {
		if !e.podLevel {
			test(e.base+"/name", e.name)
		}
		lists := []struct {
			field     string
			cur, next corev1.ResourceList
		}{
			{"requests", e.cur.Requests, e.next.Requests},
			{"limits", e.cur.Limits, e.next.Limits},
		}
		for _, l := range lists {
			var keys []corev1.ResourceName
			for _, r := range resources {
				nq, ok := l.next[r.name()]
				cq, had := l.cur[r.name()]
				switch {
				case !ok && had:
					return nil, fmt.Errorf("container %q, %s %s: %w", e.name, r.name(), l.field, errRemoval)
				case ok && (!had || cq.Cmp(nq) != 0):
					keys = append(keys, r.name())
				}
			}
			if len(keys) == 0 {
				continue
			}
			listPath := e.base + "/resources/" + l.field
			if len(l.cur) == 0 {
				test(e.base+"/resources", e.cur)
				changes = append(changes, jsonOp{Op: "add", Path: listPath, Value: l.next})
				continue
			}
			for _, k := range keys {
				path := listPath + "/" + escape(string(k))
				nq := l.next[k]
				if cq, had := l.cur[k]; had {
					test(path, cq.String())
					changes = append(changes, jsonOp{Op: "replace", Path: path, Value: nq.String()})
				} else {
					test(listPath, l.cur)
					changes = append(changes, jsonOp{Op: "add", Path: path, Value: nq.String()})
				}
			}
		}
	}
	return json.Marshal(append(tests, changes...))
}

// Revert returns a JSON patch for the resize subresource that sets the cpu
// and memory requests and limits of every regular and sidecar container back
// to its actual resources (status.containerStatuses[].resources and
// status.initContainerStatuses[].resources), and pod-level resources back to
// what the kubelet reports applied (PodLevelActual). Send it to clear an Infeasible
// resize, which the kubelet never retries. The patch starts with test
// operations, like a Plan's.
//
// Containers that report no actual resources (not running) are left alone.
// Revert returns a nil patch when the spec already equals the actual
// resources, and an error when reverting would remove a request or limit
// (forbidden by the API) or change the pod's QoS class.
func Revert(pod *corev1.Pod) ([]byte, error) {
	if pod == nil {
		return nil, fmt.Errorf("reverting resize: no pod given")
	}
	actual := map[string]*corev1.ResourceRequirements{}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			actual[list[i].Name] = list[i].Resources
		}
	}
	reverted := pod.DeepCopy()
	var edits []containerEdit
	add := func(c *corev1.Container, into *corev1.Container, sidecar bool, index int) error {
		act := actual[c.Name]
		if act == nil {
			return nil
		}
		cur := readValues(c.Resources)
		got := readValues(*act)
		next := cur
		for _, r := range resources {
			if cur[r].req.set && !got[r].req.set || cur[r].lim.set && !got[r].lim.set {
				return fmt.Errorf("reverting resize: container %q has a %s request or limit in its spec but not in its actual resources, and the API forbids removing it", c.Name, r.name())
			}
			next[r] = got[r]
		}
		if next == cur {
			return nil
		}
		rr := writeValues(c.Resources, next)
		into.Resources = rr
		edits = append(edits, containerEdit{base: containerPath(sidecar, index), name: c.Name, cur: c.Resources, next: rr})
		return nil
	}
	for i := range pod.Spec.Containers {
		if err := add(&pod.Spec.Containers[i], &reverted.Spec.Containers[i], false, i); err != nil {
			return nil, err
		}
	}
	for i := range pod.Spec.InitContainers {
		if !isSidecar(&pod.Spec.InitContainers[i]) {
			continue
		}
		if err := add(&pod.Spec.InitContainers[i], &reverted.Spec.InitContainers[i], true, i); err != nil {
			return nil, err
		}
	}
	if e, err := revertPodLevel(pod, reverted); err != nil {
		return nil, err
	} else if e != nil {
		edits = append(edits, *e)
	}
	if len(edits) == 0 {
		return nil, nil
	}
	if was, now := currentQoS(pod), ComputeQoS(reverted); was != now {
		return nil, fmt.Errorf("reverting resize: the actual resources would make the pod %s, but it is %s", now, was)
	}
	patch, err := buildPatch(edits)
	if err != nil {
		return nil, fmt.Errorf("reverting resize: %w", err)
	}
	return patch, nil
}
