package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ConditionNamespaceLimited is the pod condition the agent keeps while the
// pod's namespace limits its resizes: True once a grow was cut to fit the
// namespace's ResourceQuotas or LimitRanges (reason FittedToNamespace) or
// nothing of one fitted (NamespaceFull), the message saying which object
// and how much it had left; False (reason Fits) once a later resize was
// applied whole. The kubelet keeps conditions it does not own.
const ConditionNamespaceLimited corev1.PodConditionType = "autoscaling.snug.dev/NamespaceLimited"

// reasonFits goes with ConditionNamespaceLimited False.
const reasonFits = "Fits"

// podCondition is one state of a pod condition the agent writes
// (ConditionNamespaceLimited, policy.ConditionRestartWanted).
type podCondition struct {
	status          corev1.ConditionStatus
	reason, message string
}

// conditionPatchTimeout bounds one write of the condition.
const conditionPatchTimeout = 10 * time.Second

// setNamespaceCondition writes the pod's ConditionNamespaceLimited
// (setPodCondition).
func (d *Decider) setNamespaceCondition(ctx context.Context, log logr.Logger, st *podState, pod *corev1.Pod, c podCondition) {
	d.setPodCondition(ctx, log, st, pod, ConditionNamespaceLimited, c, &st.nsCondition, false)
}

// setPodCondition writes the pod's condition of type typ when it differs
// from what the pod shows (and from *last, what the agent last wrote, the
// informer lagging behind a write), as an effect (effects.go); False is
// written only over a True. A write that fails is logged and tried again
// the next time the condition is set. With everyPass (the caller sets the
// condition on every pass, as handleRestart does), one write per pod and
// type is out at a time (a keyed effect), so that an older write cannot
// land after a newer one; one that could not start is tried on a later
// pass. Without it (ConditionNamespaceLimited, set only when a resize
// ends), a write is never skipped.
func (d *Decider) setPodCondition(ctx context.Context, log logr.Logger, st *podState, pod *corev1.Pod, typ corev1.PodConditionType, c podCondition, last *podCondition, everyPass bool) {
	if d.cfg.ResizeClient == nil || d.cfg.DryRun || *last == c {
		return
	}
	var shown *corev1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == typ {
			shown = &pod.Status.Conditions[i]
		}
	}
	if shown != nil && shown.Status == c.status && shown.Reason == c.reason && shown.Message == c.message {
		*last = c
		return
	}
	if c.status == corev1.ConditionFalse && (shown == nil || shown.Status != corev1.ConditionTrue) && last.status != corev1.ConditionTrue {
		return
	}
	since := d.clock.Now()
	if shown != nil && shown.Status == c.status {
		since = shown.LastTransitionTime.Time
	}
	body, err := conditionPatch(typ, c, since)
	if err != nil {
		log.Error(err, "writing the pod's condition", "pod", st.ns+"/"+st.name)
		return
	}
	ns, name := st.ns, st.name
	key := ""
	if everyPass {
		key = "condition/" + ns + "/" + name + "/" + string(typ)
	}
	started := d.fx.start(ctx, key, func(ctx context.Context) settleFunc {
		pctx, cancel := context.WithTimeout(ctx, conditionPatchTimeout)
		defer cancel()
		_, err := d.cfg.ResizeClient.PatchPod(pctx, ns, name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
		if err == nil {
			return nil // a key is freed all the same
		}
		return func(_ context.Context, log logr.Logger) {
			log.Error(err, "writing the pod's condition", "pod", ns+"/"+name, "condition", string(typ), "reason", c.reason)
			if *last == c {
				*last = podCondition{}
			}
		}
	})
	if started {
		*last = c
	}
}

// conditionPatch is the strategic merge patch of the pod's status that sets
// the condition of type typ (conditions merge on their type), its status
// true since since.
func conditionPatch(typ corev1.PodConditionType, c podCondition, since time.Time) ([]byte, error) {
	cond := corev1.PodCondition{
		Type: typ, Status: c.status, Reason: c.reason, Message: c.message,
		LastTransitionTime: metav1.NewTime(since),
	}
	b, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
	if err != nil {
		return nil, fmt.Errorf("encoding condition %s: %w", typ, err)
	}
	return b, nil
}
