package actuate

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/internal/resize"
)

// ErrPodDeleted is returned (wrapped) when the pod disappears while Wait is
// watching it.
var ErrPodDeleted = errors.New("pod was deleted")

// ErrPodNotFound is returned (wrapped) when the pod to resize does not exist.
var ErrPodNotFound = errors.New("pod not found")

// Result is what became of one patch sent to a pod's resize subresource.
// Zero times mean "not seen".
type Result struct {
	// Outcome is Applied, Deferred, Infeasible, Error, Rejected, Conflict or
	// Timeout once decided. After a Send that the API server accepted and
	// before any Wait it is InProgress.
	Outcome resize.Outcome
	// Last is, for a Timeout, the state last seen (InProgress, Deferred...);
	// otherwise equal to Outcome.
	Last resize.Outcome
	// Message is the kubelet's condition message (Deferred, Infeasible,
	// Error, InProgress) or the API server's (Rejected, Conflict).
	Message string
	// APIError is the API server's refusal, for Rejected and Conflict.
	APIError *APIError
	// DryRun is true when the patch was sent with dryRun=All: nothing was
	// changed and there is nothing to wait for.
	DryRun bool
	// Generation is the pod's metadata.generation after the patch.
	Generation int64
	// Sent is just before the patch was sent, Answered when the API server
	// answered it.
	Sent, Answered time.Time
	// AllocatedSeen is when status allocatedResources first matched the
	// plan's requests; ActualSeen when status resources first matched the
	// plan's requests and limits.
	AllocatedSeen, ActualSeen time.Time
	// Decided is when the outcome was observed.
	Decided time.Time
	// Pod is the last version of the pod seen; nil if the patch was refused.
	Pod *corev1.Pod
}

// Decisive reports whether the outcome is the kubelet's or the API server's
// answer rather than "still waiting".
func (r Result) Decisive() bool {
	switch r.Outcome {
	case resize.Applied, resize.Deferred, resize.Infeasible, resize.Error, resize.Rejected, resize.Conflict:
		return true
	}
	return false
}

// APIError is a refusal by the API server, as its Status carried it.
type APIError struct {
	// Code is the HTTP status code, e.g. 403 or 422.
	Code int32
	// Reason is the Status reason, e.g. Forbidden or Invalid.
	Reason metav1.StatusReason
	// Message is the Status message.
	Message string
	// Causes are the Status details' causes as "type field: message", with
	// empty parts left out (PodResizeValidator's is "NodeCapacity").
	Causes []string
}

func (e *APIError) Error() string { return fmt.Sprintf("%d %s: %s", e.Code, e.Reason, e.Message) }

// NewAPIError keeps what a Status the API server answered says: code,
// reason, message and causes.
func NewAPIError(st metav1.Status) *APIError {
	ae := &APIError{Code: st.Code, Reason: st.Reason, Message: st.Message}
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			ae.Causes = append(ae.Causes, causeString(c))
		}
	}
	return ae
}

// jsonPatchApplyFailure is the message the API server gives when a JSON
// patch cannot be applied to the stored object. The patch handler
// (k8s.io/apiserver endpoints/handlers/patch.go) wraps the json-patch
// library's error with NewGenericServerResponse(422, ...), which drops the
// library's own text ("testing value ... failed: test failed"), so this
// generic sentence, with no causes and no kind, is all a client sees.
const jsonPatchApplyFailure = "the server rejected our request due to an error in our request"

// ClassifyPatchError turns the error of a PATCH to the resize subresource
// into an outcome. It returns:
//
//   - Unknown, nil, nil for no error (the patch was accepted);
//   - Conflict for a failed test operation (422 without kind or causes, see
//     jsonPatchApplyFailure) and for a 409;
//   - Rejected for any other refusal of the request itself: 403 (admission,
//     such as 1.36+'s PodResizeValidator, or RBAC), 422 validation errors,
//     400, 413;
//   - an error for everything that is not an answer about this patch: pod
//     not found (wrapping ErrPodNotFound), unauthorized, server errors,
//     throttling, timeouts, connection failures.
func ClassifyPatchError(err error) (resize.Outcome, *APIError, error) {
	if err == nil {
		return resize.Unknown, nil, nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return resize.Unknown, nil, fmt.Errorf("reaching the API server: %w", err)
	}
	st := status.Status()
	ae := NewAPIError(st)
	kind := ""
	if st.Details != nil {
		kind = st.Details.Kind
	}
	switch {
	case st.Code == 422 && kind == "" && len(ae.Causes) == 0 && (st.Message == jsonPatchApplyFailure || isTestFailureText(st.Message)):
		return resize.Conflict, ae, nil
	case st.Code == 409:
		return resize.Conflict, ae, nil
	case st.Code == 404:
		return resize.Unknown, ae, fmt.Errorf("patching resize: %w: %s", ErrPodNotFound, st.Message)
	case st.Code == 401:
		return resize.Unknown, ae, fmt.Errorf("patching resize: not authorized (check the kubeconfig's credentials): %w", err)
	case st.Code == 400 || st.Code == 403 || st.Code == 413 || st.Code == 422:
		return resize.Rejected, ae, nil
	}
	return resize.Unknown, ae, fmt.Errorf("patching resize: %w", err)
}

// isTestFailureText recognizes the json-patch library's own messages, in
// case a server passes them through.
func isTestFailureText(msg string) bool {
	return strings.Contains(msg, "test failed") || strings.Contains(msg, "test operation does not apply")
}

func causeString(c metav1.StatusCause) string {
	s := strings.TrimSpace(string(c.Type) + " " + c.Field)
	if c.Message != "" {
		if s != "" {
			s += ": "
		}
		s += c.Message
	}
	return s
}
