package install

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// FieldManager is the server-side apply field manager that owns the CRDs
// snug installs.
const FieldManager = "snug"

// pollInterval is how often a wait looks at the CRD again.
const pollInterval = 200 * time.Millisecond

// CRDs applies each CRD, creating it or bringing it to the given content,
// and waits, up to timeout in all, until every one is Established. A CRD
// whose names conflict with another's fails at once with the API server's
// message. On an upgrade the CRD was already Established, so the wait ends
// at once; the API server serves the new schema moments later.
func CRDs(ctx context.Context, c apiextensionsclient.CustomResourceDefinitionsGetter, crds []*apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, crd := range crds {
		if err := apply(ctx, c, crd); err != nil {
			return err
		}
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, c, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

// apply sends the CRD as a server-side apply patch, so fields an earlier
// version set and this one does not are removed.
func apply(ctx context.Context, c apiextensionsclient.CustomResourceDefinitionsGetter, crd *apiextensionsv1.CustomResourceDefinition) error {
	// Only what the CRD's author gave: status and server-set metadata would
	// be rejected or ignored.
	meta := map[string]any{"name": crd.Name}
	if len(crd.Labels) > 0 {
		meta["labels"] = crd.Labels
	}
	if len(crd.Annotations) > 0 {
		meta["annotations"] = crd.Annotations
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": apiextensionsv1.SchemeGroupVersion.String(),
		"kind":       "CustomResourceDefinition",
		"metadata":   meta,
		"spec":       crd.Spec,
	})
	if err != nil {
		return fmt.Errorf("encoding CRD %s: %w", crd.Name, err)
	}
	_, err = c.CustomResourceDefinitions().Patch(ctx, crd.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)})
	if err != nil {
		return fmt.Errorf("applying CRD %s: %w", crd.Name, err)
	}
	return nil
}

// waitEstablished polls until the CRD is Established, or fails once its
// names are refused.
func waitEstablished(ctx context.Context, c apiextensionsclient.CustomResourceDefinitionsGetter, name string) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		crd, err := c.CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, cond := range crd.Status.Conditions {
			switch {
			case cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse:
				return false, fmt.Errorf("names not accepted: %s", cond.Message)
			case cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue:
				return true, nil
			case cond.Type == apiextensionsv1.Established:
				last = fmt.Sprintf("Established=%s %s: %s", cond.Status, cond.Reason, cond.Message)
			}
		}
		return false, nil
	})
	if err != nil {
		if last != "" && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (last seen: %s)", err, last)
		}
		return fmt.Errorf("waiting for CRD %s to be established: %w", name, err)
	}
	return nil
}

// Uninstall deletes each CRD, which deletes every object of its kind, and
// waits, up to timeout in all, until all of them are gone. CRDs that are
// not installed are skipped.
func Uninstall(ctx context.Context, c apiextensionsclient.CustomResourceDefinitionsGetter, crds []*apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, crd := range crds {
		err := c.CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
			_, err := c.CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CRD %s to be deleted: %w", crd.Name, err)
		}
	}
	return nil
}
