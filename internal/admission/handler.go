package admission

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/policy"
)

// Path is where the webhook is served.
const Path = "/mutate-pods"

// maxBody bounds an AdmissionReview: a pod is at most 1.5 MiB in etcd.
const maxBody = 3 << 20

// EventSizedAtAdmission is the event reason on the policy for each pod the
// webhook sized.
const EventSizedAtAdmission = "SizedAtAdmission"

// HandlerConfig is what a Handler needs.
type HandlerConfig struct {
	// Policies lists a namespace's SnugPolicies (an informer's cache).
	Policies func(namespace string) []*v1alpha1.SnugPolicy
	// Checkpoints reads checkpoint ConfigMaps (an informer's cache).
	Checkpoints Checkpoints
	// Selectors keeps the policies' parsed selectors; nil parses them
	// for each pod.
	Selectors *policy.Selectors
	// Recorder records events on policies; nil records none.
	Recorder record.EventRecorder
	Metrics  *Metrics
	Clock    clock.PassiveClock
	Log      logr.Logger
}

// Handler answers AdmissionReviews for pod CREATE. Safe for concurrent
// use. It never denies a pod: whatever goes wrong, the pod is admitted as
// written.
type Handler struct{ cfg HandlerConfig }

// NewHandler returns a Handler; cfg.Policies, Checkpoints and Metrics are
// required.
func NewHandler(cfg HandlerConfig) *Handler {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Handler{cfg: cfg}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	outcome := Invalid
	defer func() {
		h.cfg.Metrics.duration.Observe(time.Since(start).Seconds())
		h.cfg.Metrics.requests.WithLabelValues(string(outcome)).Inc()
	}()
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "the body is no admission.k8s.io/v1 AdmissionReview", http.StatusBadRequest)
		return
	}
	resp, o := h.review(review.Request)
	outcome = o
	out := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&out); err != nil {
		h.cfg.Log.Error(err, "writing the admission response")
	}
}

// review decides one request; the response always allows the pod.
func (h *Handler) review(req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, Outcome) {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" || req.SubResource != "" {
		return resp, Invalid
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		h.cfg.Log.Info("cannot read the pod; admitted unchanged", "namespace", req.Namespace, "err", err.Error())
		return resp, Invalid
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	// The governing policy is found here with the kept selectors; Size
	// then has only it to match.
	var governing []*v1alpha1.SnugPolicy
	if p := h.cfg.Selectors.Match(h.cfg.Policies(pod.Namespace), &pod); p != nil {
		governing = []*v1alpha1.SnugPolicy{p}
	}
	d := Size(&pod, governing, h.cfg.Checkpoints, h.cfg.Clock.Now())
	log := h.cfg.Log.WithValues("pod", podName(&pod), "outcome", string(d.Outcome))
	switch d.Outcome {
	case Sized:
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = d.Patch, &pt
		log.Info("sized at admission", "policy", d.Policy.Name, "changes", d.Summary)
		if dry := req.DryRun != nil && *req.DryRun; !dry && h.cfg.Recorder != nil {
			h.cfg.Recorder.Eventf(d.Policy, corev1.EventTypeNormal, EventSizedAtAdmission,
				"new pod %s sized from the learnt history: %s", podName(&pod), d.Summary)
		}
	case Refused:
		log.Info("admitted at the template's size", "policy", d.Policy.Name, "why", d.Summary)
	default:
		log.V(1).Info("admitted unchanged", "why", d.Summary)
	}
	return resp, d.Outcome
}

// podName is the pod's name, or its generateName with a "*" when the API
// server has not named it yet (it names pods after admission).
func podName(pod *corev1.Pod) string {
	if pod.Name != "" {
		return fmt.Sprintf("%s/%s", pod.Namespace, pod.Name)
	}
	return fmt.Sprintf("%s/%s*", pod.Namespace, pod.GenerateName)
}
