package controller

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// errNoSelector is returned for a workload whose pods cannot be selected by
// labels.
var errNoSelector = errors.New("workload has no usable pod selector")

// workloadSelector returns the label selector of the pods a workload owns.
// A CronJob has no selector of its own, and each Job it creates gets a
// selector on that Job's controller-uid, which names one run only; the pods
// of every run carry the labels of jobTemplate's pod template, so those
// labels, as a matchLabels selector, select the pods of all its runs.
func workloadSelector(obj runtime.Object) (*metav1.LabelSelector, error) {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return w.Spec.Selector, nil
	case *appsv1.StatefulSet:
		return w.Spec.Selector, nil
	case *appsv1.DaemonSet:
		return w.Spec.Selector, nil
	case *appsv1.ReplicaSet:
		return w.Spec.Selector, nil
	case *batchv1.Job:
		return w.Spec.Selector, nil
	case *batchv1.CronJob:
		l := w.Spec.JobTemplate.Spec.Template.Labels
		if len(l) == 0 {
			return nil, fmt.Errorf("cronjob %s: %w: its jobTemplate's pod template has no labels", w.Name, errNoSelector)
		}
		return &metav1.LabelSelector{MatchLabels: l}, nil
	default:
		return nil, fmt.Errorf("%T: %w", obj, errNoSelector)
	}
}

// parseSelector turns a LabelSelector into a Selector, refusing the empty
// selector (which would select every pod in the namespace) and nil.
func parseSelector(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil || (len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0) {
		return nil, fmt.Errorf("%w: selector is empty", errNoSelector)
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("parsing selector: %w", err)
	}
	return sel, nil
}
