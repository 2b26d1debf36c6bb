package experiment

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// QoSChangeResult is experiment 5: a resize that would change the QoS
// class.
type QoSChangeResult struct {
	Run
	// Patch lowers only requests.cpu of a Guaranteed pod from 250m to
	// 100m; the API server is expected to refuse it.
	Patch PatchOutcome
	// Before and After are read from the API server around the patch.
	Before, After PodState
}

// QoSChange runs experiment 5. The result is never nil.
func QoSChange(ctx context.Context, env Env) (res *QoSChangeResult, err error) {
	res = &QoSChangeResult{}
	s, err := begin(ctx, env, "QoS class change", "snug-qos-")
	defer func() { res.Run = *s.run }()
	if err != nil {
		return res, err
	}
	defer s.end(ctx, &err)

	w, _, err := s.createRunning(ctx, markerPod("resize-qos-test", "250m", "128Mi"))
	if err != nil {
		return res, err
	}
	defer w.stop()
	s.start()
	res.Before = w.latest()
	if res.Patch, err = s.patchResize(ctx, w, types.JSONPatchType, resizeJSONPatch("requests/cpu", "100m")); err != nil {
		return res, err
	}
	res.After, err = s.getState(ctx, w.name)
	return res, err
}

// MergePatchResult is experiment 7: the report's warning about
// `kubectl patch --type=merge`.
type MergePatchResult struct {
	Run
	// Body is the patch both attempts send: the container, by name, with
	// only its new cpu.
	Body string
	// Merge is Body as a JSON merge patch (RFC 7386, kubectl --type=merge),
	// which replaces the whole containers list; MergeAfter is the pod
	// read back after it.
	Merge      PatchOutcome
	MergeAfter PodState
	// Strategic is the same Body as a strategic merge patch (kubectl's
	// default type), which merges containers by name; StrategicSettled is
	// the version where it was applied (nil if it was rejected).
	Strategic        PatchOutcome
	StrategicSettled *PodState
}

// MergePatch runs experiment 7. The result is never nil.
func MergePatch(ctx context.Context, env Env) (res *MergePatchResult, err error) {
	const cpu = "500m"
	res = &MergePatchResult{
		Body: fmt.Sprintf(`{"spec":{"containers":[{"name":%q,"resources":{"requests":{"cpu":%q},"limits":{"cpu":%q}}}]}}`, containerName, cpu, cpu),
	}
	s, err := begin(ctx, env, "merge patch", "snug-merge-patch-")
	defer func() { res.Run = *s.run }()
	if err != nil {
		return res, err
	}
	defer s.end(ctx, &err)

	w, _, err := s.createRunning(ctx, markerPod("resize-merge-test", "250m", "128Mi"))
	if err != nil {
		return res, err
	}
	defer w.stop()
	s.start()
	from := w.mark()
	if res.Merge, err = s.patchResize(ctx, w, types.MergePatchType, []byte(res.Body)); err != nil {
		return res, err
	}
	if res.MergeAfter, err = s.getState(ctx, w.name); err != nil {
		return res, err
	}
	if res.Strategic, err = s.patchResize(ctx, w, types.StrategicMergePatchType, []byte(res.Body)); err != nil {
		return res, err
	}
	if res.Strategic.Rejected != nil {
		return res, nil
	}
	want := resource.MustParse(cpu)
	st, _, err := s.await(ctx, w, from, "strategic merge patch applied", func(st PodState) bool {
		return st.Desired.CPULimit.Cmp(want) == 0 && st.Settled()
	})
	if err != nil {
		return res, err
	}
	res.StrategicSettled = &st
	return res, nil
}
