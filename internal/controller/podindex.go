package controller

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/tools/cache"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podLabelIndex indexes the pod cache by each of a pod's labels, as
// "namespace/key=value". A policy's pods were listed by scanning its
// namespace and matching every pod there, three times a minute per policy
// (a resync of each concern): with P policies of 30 pods in one namespace
// that is 90·P² label matches a minute: 1.3 cores of reconciling at 1,000 policies in
// BenchmarkSteadyReconcile. Looked up by one of the selector's equality
// requirements, a list costs the pods carrying that label instead.
const podLabelIndex = "snug-pod-label"

func podLabelKey(namespace, key, value string) string {
	return namespace + "/" + key + "=" + value
}

// podLabelKeys is podLabelIndex's index function.
func podLabelKeys(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	l := m.GetLabels()
	out := make([]string, 0, len(l))
	for k, v := range l {
		out = append(out, podLabelKey(m.GetNamespace(), k, v))
	}
	return out, nil
}

// podsSelected returns the cached pods of namespace ns that sel matches.
// The candidates are the pods carrying the label of sel's equality
// requirement (=, == or an In of one value) with the fewest pods; a
// selector without one scans the namespace.
func podsSelected(idx cache.Indexer, ns string, sel labels.Selector) ([]*corev1.Pod, error) {
	reqs, _ := sel.Requirements()
	var candidates []any
	found := false
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		vals := r.Values()
		if vals.Len() != 1 {
			continue
		}
		objs, err := idx.ByIndex(podLabelIndex, podLabelKey(ns, r.Key(), vals.UnsortedList()[0]))
		if err != nil {
			return nil, err
		}
		if !found || len(objs) < len(candidates) {
			candidates, found = objs, true
		}
	}
	if !found {
		var err error
		if candidates, err = idx.ByIndex(cache.NamespaceIndex, ns); err != nil {
			return nil, err
		}
	}
	out := make([]*corev1.Pod, 0, len(candidates))
	for _, o := range candidates {
		if p, ok := o.(*corev1.Pod); ok && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}
