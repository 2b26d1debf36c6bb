package controller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCacheOnlyRead: the informers' transform keeps what the controller
// reads of a pod and a workload, and drops the rest.
func TestCacheOnlyRead(t *testing.T) {
	rr := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
	full := func() corev1.Container {
		return corev1.Container{
			Name: "app", Image: "img", Resources: rr, Command: []string{"run"}, Args: []string{"-x"},
			Env:            []corev1.EnvVar{{Name: "A", Value: "b"}},
			VolumeMounts:   []corev1.VolumeMount{{Name: "v", MountPath: "/v"}},
			ResizePolicy:   []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}},
			ReadinessProbe: &corev1.Probe{}, LivenessProbe: &corev1.Probe{},
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}, OwnerReferences: []metav1.OwnerReference{{Name: "rs"}}},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{full()}, InitContainers: []corev1.Container{full()},
			Volumes: []corev1.Volume{{Name: "v"}}, Resources: &rr},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Resources: &rr}}},
	}
	got, err := cacheOnlyRead(pod)
	if err != nil {
		t.Fatal(err)
	}
	p := got.(*corev1.Pod)
	c := p.Spec.Containers[0]
	if p.ManagedFields != nil || p.Spec.Volumes != nil || c.Command != nil || c.Args != nil || c.Env != nil || c.VolumeMounts != nil || c.LivenessProbe != nil || p.Spec.InitContainers[0].Env != nil {
		t.Errorf("pod kept what the controller does not read: %+v", p)
	}
	if c.Name != "app" || c.Resources.Requests.Cpu().String() != "100m" || len(c.ResizePolicy) != 1 || c.ReadinessProbe == nil ||
		p.Labels["app"] != "web" || p.Annotations["a"] != "b" || len(p.OwnerReferences) != 1 || p.Spec.NodeName != "n" || p.Spec.Resources == nil ||
		p.Status.Phase != corev1.PodRunning || len(p.Status.Conditions) != 1 || p.Status.ContainerStatuses[0].Resources == nil {
		t.Errorf("pod lost what the controller reads: %+v", p)
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Selector: sel, Replicas: new(int32),
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel.MatchLabels}, Spec: corev1.PodSpec{Containers: []corev1.Container{full()}}}}}
	got, _ = cacheOnlyRead(d)
	if dd := got.(*appsv1.Deployment); len(dd.Spec.Template.Spec.Containers) != 0 || dd.Spec.Selector == nil || dd.Spec.Replicas == nil || dd.Spec.Template.Labels["app"] != "web" {
		t.Errorf("deployment %+v: want the template's spec dropped, selector, replicas and template labels kept", dd.Spec)
	}
	cj := &batchv1.CronJob{Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel.MatchLabels}, Spec: corev1.PodSpec{Containers: []corev1.Container{full()}}}}}}}
	got, _ = cacheOnlyRead(cj)
	if cc := got.(*batchv1.CronJob); len(cc.Spec.JobTemplate.Spec.Template.Spec.Containers) != 0 || cc.Spec.JobTemplate.Spec.Template.Labels["app"] != "web" {
		t.Errorf("cronjob %+v: want the template's spec dropped and its labels kept", cc.Spec)
	}
}
