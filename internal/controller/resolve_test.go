package controller

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestWorkloadSelector(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tmpl := func(l map[string]string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}}
	}
	tests := []struct {
		name    string
		obj     runtime.Object
		want    *metav1.LabelSelector
		wantErr bool
	}{
		{"deployment", &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Selector: sel}}, sel, false},
		{"statefulset", &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Selector: sel}}, sel, false},
		{"daemonset", &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Selector: sel}}, sel, false},
		{"replicaset", &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Selector: sel}}, sel, false},
		{"job", &batchv1.Job{Spec: batchv1.JobSpec{Selector: sel}}, sel, false},
		{"cronjob uses its pod template's labels", &batchv1.CronJob{Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{
			Spec: batchv1.JobSpec{Template: tmpl(map[string]string{"app": "web"})}}}}, sel, false},
		{"cronjob without labels", &batchv1.CronJob{}, nil, true},
		{"other kind", &corev1.Pod{}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := workloadSelector(tt.obj)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, errNoSelector) {
				t.Errorf("err = %v, want errNoSelector", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseSelector(t *testing.T) {
	tests := []struct {
		name    string
		in      *metav1.LabelSelector
		want    string
		wantErr bool
	}{
		{"labels", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "fe"}}, "app=web,tier=fe", false},
		{"expressions", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}, "app in (a,b)", false},
		{"nil", nil, "", true},
		{"empty selects everything: refused", &metav1.LabelSelector{}, "", true},
		{"bad operator", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSelector(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && got.String() != tt.want {
				t.Errorf("selector = %q, want %q", got.String(), tt.want)
			}
		})
	}
}
