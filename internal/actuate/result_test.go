package actuate

import (
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/snug-dev/snug/internal/resize"
)

func TestClassifyPatchError(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	forbidden := apierrors.NewForbidden(pods, "p", errors.New("node didn't have enough allocatable resources: cpu, requested: 2500, allocatable: 2000"))
	forbidden.ErrStatus.Details.Causes = append(forbidden.ErrStatus.Details.Causes, metav1.StatusCause{Type: "NodeCapacity"})
	tests := []struct {
		name        string
		err         error
		want        resize.Outcome
		wantAPI     *APIError
		wantErr     bool
		wantErrIs   error
		wantMessage string
	}{
		{name: "accepted", err: nil, want: resize.Unknown},
		{
			// What the API server sends for a failed test op: the patch
			// handler's NewGenericServerResponse(422) drops the library's text.
			name: "test op failed",
			err:  apierrors.NewGenericServerResponse(422, "", schema.GroupResource{}, "", "testing value /spec/containers/0/resources/requests/cpu failed: test failed", 0, false),
			want: resize.Conflict,
			wantAPI: &APIError{Code: 422, Reason: metav1.StatusReasonInvalid,
				Message: "the server rejected our request due to an error in our request"},
		},
		{
			name: "test op failed, text passed through",
			err: &apierrors.StatusError{ErrStatus: metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid,
				Message: "testing value /spec/containers/0/name failed: test failed"}},
			want: resize.Conflict,
			wantAPI: &APIError{Code: 422, Reason: metav1.StatusReasonInvalid,
				Message: "testing value /spec/containers/0/name failed: test failed"},
		},
		{
			name: "resourceVersion conflict",
			err:  apierrors.NewConflict(pods, "p", errors.New("the object has been modified")),
			want: resize.Conflict,
			wantAPI: &APIError{Code: 409, Reason: metav1.StatusReasonConflict,
				Message: `Operation cannot be fulfilled on pods "p": the object has been modified`},
		},
		{
			name: "QoS change is invalid",
			err: apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", field.ErrorList{
				field.Invalid(field.NewPath("spec"), "Guaranteed", "Pod QOS Class may not change as a result of resizing"),
			}),
			want: resize.Rejected,
			wantAPI: &APIError{Code: 422, Reason: metav1.StatusReasonInvalid,
				Message: `Pod "p" is invalid: spec: Invalid value: "Guaranteed": Pod QOS Class may not change as a result of resizing`,
				Causes:  []string{`FieldValueInvalid spec: Invalid value: "Guaranteed": Pod QOS Class may not change as a result of resizing`}},
		},
		{
			name: "1.36+ PodResizeValidator",
			err:  forbidden,
			want: resize.Rejected,
			wantAPI: &APIError{Code: 403, Reason: metav1.StatusReasonForbidden,
				Message: `pods "p" is forbidden: node didn't have enough allocatable resources: cpu, requested: 2500, allocatable: 2000`,
				Causes:  []string{"NodeCapacity"}},
		},
		{
			name:    "bad request",
			err:     apierrors.NewBadRequest("error decoding patch"),
			want:    resize.Rejected,
			wantAPI: &APIError{Code: 400, Reason: metav1.StatusReasonBadRequest, Message: "error decoding patch"},
		},
		{name: "pod gone", err: apierrors.NewNotFound(pods, "p"), wantErr: true, wantErrIs: ErrPodNotFound,
			wantAPI: &APIError{Code: 404, Reason: metav1.StatusReasonNotFound, Message: `pods "p" not found`}},
		{name: "unauthorized", err: apierrors.NewUnauthorized("no"), wantErr: true,
			wantAPI: &APIError{Code: 401, Reason: metav1.StatusReasonUnauthorized, Message: "no"}},
		{name: "server error", err: apierrors.NewInternalError(errors.New("etcd")), wantErr: true,
			wantAPI: &APIError{Code: 500, Reason: metav1.StatusReasonInternalError, Message: "Internal error occurred: etcd", Causes: []string{"etcd"}}},
		{name: "throttled", err: apierrors.NewTooManyRequests("slow down", 1), wantErr: true,
			wantAPI: &APIError{Code: 429, Reason: metav1.StatusReasonTooManyRequests, Message: "slow down"}},
		{name: "server down", err: fmt.Errorf("Patch %q: %w", "https://10.213.0.2:6443/api", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, api, err := ClassifyPatchError(tt.err)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErrIs != nil && !errors.Is(err, tt.wantErrIs) {
				t.Errorf("error %v does not wrap %v", err, tt.wantErrIs)
			}
			if got != tt.want {
				t.Errorf("outcome = %v, want %v", got, tt.want)
			}
			if diff := cmp.Diff(tt.wantAPI, api); diff != "" {
				t.Errorf("API error (-want +got):\n%s", diff)
			}
		})
	}
}
