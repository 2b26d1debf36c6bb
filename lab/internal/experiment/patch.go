package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/snug-dev/snug/internal/actuate"
	"github.com/snug-dev/snug/internal/kube"
	"github.com/snug-dev/snug/internal/resize"
)

// jsonOp is one RFC 6902 operation.
type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value"`
}

// resizeJSONPatch replaces values of the first container's resources, as
// the field report's `kubectl patch --subresource resize --type=json` did.
// fields alternates a path under resources ("requests/cpu") and its value.
func resizeJSONPatch(fields ...string) []byte {
	if len(fields)%2 != 0 {
		panic("resizeJSONPatch: odd number of arguments")
	}
	ops := make([]jsonOp, 0, len(fields)/2)
	for i := 0; i < len(fields); i += 2 {
		ops = append(ops, jsonOp{Op: "replace", Path: "/spec/containers/0/resources/" + fields[i], Value: fields[i+1]})
	}
	b, err := json.Marshal(ops)
	if err != nil {
		panic(err) // strings always marshal
	}
	return b
}

// cpuPatch sets cpu requests and limits together, which keeps a Guaranteed
// pod Guaranteed.
func cpuPatch(cpu string) []byte {
	return resizeJSONPatch("requests/cpu", cpu, "limits/cpu", cpu)
}

// memoryPatch sets memory requests and limits together.
func memoryPatch(mem string) []byte {
	return resizeJSONPatch("requests/memory", mem, "limits/memory", mem)
}

// APIError is a refusal from the API server, as its Status carried it.
type APIError = actuate.APIError

// PatchOutcome is what became of one patch to the resize subresource.
type PatchOutcome struct {
	// Type is the patch type, Body the patch as sent.
	Type types.PatchType
	Body string
	// Sent is just before the request, Returned just after the answer.
	Sent, Returned time.Time
	// Rejected is the API server's refusal; nil if the patch was accepted.
	Rejected *APIError
	// Pod is the pod the API server returned; zero if rejected.
	Pod PodState
}

// Latency is how long the API server took to answer.
func (o PatchOutcome) Latency() time.Duration { return o.Returned.Sub(o.Sent) }

// patchResize sends a patch to the pod's resize subresource through
// internal/actuate (Send and its classifier) and records it on the
// timeline. A refusal by the API server is an outcome, not an error; the
// error is for anything else (the server could not be reached).
func (s *session) patchResize(ctx context.Context, w *podWatch, pt types.PatchType, body []byte) (PatchOutcome, error) {
	act := &actuate.Actuator{Client: kube.New(s.env.Client.CoreV1().RESTClient()), Clock: s.env.Clock}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.run.Namespace, Name: w.name}}
	o := PatchOutcome{Type: pt, Body: string(body)}
	r, err := act.Send(ctx, target, body, actuate.SendOptions{PatchType: pt})
	o.Sent, o.Returned = r.Sent, r.Answered
	switch {
	case err == nil && r.Outcome == resize.InProgress:
		o.Pod = stateOf(r.Pod, o.Returned)
		s.step(fmt.Sprintf("%s patch accepted in %s", patchName(pt), o.Latency().Round(time.Millisecond)), o.Pod, o.Body)
		return o, nil
	case r.APIError != nil:
		// Rejected or Conflict, or a Status the classifier calls no answer
		// about the patch (404, 5xx): the experiments record them all.
		o.Rejected = r.APIError
		last := w.latest()
		last.At = o.Returned
		s.step(fmt.Sprintf("%s patch rejected: %d %s", patchName(pt), r.APIError.Code, r.APIError.Reason), last, r.APIError.Message)
		return o, nil
	case err != nil:
		return o, fmt.Errorf("patching resize of pod %s: %w", w.name, err)
	}
	return o, fmt.Errorf("patching resize of pod %s: outcome %s without an API error", w.name, r.Outcome)
}

// mustAccept turns a refused patch into an error, for experiments that
// need the patch to go through.
func (o PatchOutcome) mustAccept() error {
	if o.Rejected != nil {
		return fmt.Errorf("patching resize: rejected: %w", o.Rejected)
	}
	return nil
}

// causeString is "type field: message", leaving out empty parts.
func patchName(pt types.PatchType) string {
	switch pt {
	case types.JSONPatchType:
		return "JSON"
	case types.MergePatchType:
		return "merge"
	case types.StrategicMergePatchType:
		return "strategic merge"
	}
	return string(pt)
}
