package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// LoadDeployment describes a Deployment of snug-load pods whose targets
// follow the control file LoadDir/$POD_NAME (or LoadDir/all).
type LoadDeployment struct {
	Name     string
	Replicas int32
	// CPU and memory requests and limits of the one container "app"; empty
	// leaves a value unset.
	CPURequest, CPULimit, MemoryRequest, MemoryLimit string
	// Args are snug-load's flags after --listen= (e.g. --cpu=50m).
	Args []string
	// LoadDir is the host directory of the control files (lab.Options.LoadDir).
	LoadDir string
	// Labels are added to app=Name on the pods.
	Labels map[string]string
	// Node, if set, keeps the pods on that node (a nodeSelector on
	// kubernetes.io/hostname); Tolerations are the pods'.
	Node        string
	Tolerations []corev1.Toleration
}

// Build returns the Deployment.
func (d LoadDeployment) Build() *appsv1.Deployment {
	labels := map[string]string{"app": d.Name}
	for k, v := range d.Labels {
		labels[k] = v
	}
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, q := range []struct {
		l corev1.ResourceList
		n corev1.ResourceName
		v string
	}{
		{res.Requests, corev1.ResourceCPU, d.CPURequest}, {res.Requests, corev1.ResourceMemory, d.MemoryRequest},
		{res.Limits, corev1.ResourceCPU, d.CPULimit}, {res.Limits, corev1.ResourceMemory, d.MemoryLimit},
	} {
		if q.v != "" {
			q.l[q.n] = resource.MustParse(q.v)
		}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Labels: map[string]string{"app": d.Name}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(d.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.Name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  nodeSelector(d.Node),
					Tolerations:                   d.Tolerations,
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name: "app", Image: LoadImage, ImagePullPolicy: corev1.PullNever,
						Args: append([]string{"--listen="}, d.Args...),
						Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
						Resources:    res,
						VolumeMounts: []corev1.VolumeMount{{Name: "control", MountPath: "/control", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "control", VolumeSource: corev1.VolumeSource{
						HostPath: &corev1.HostPathVolumeSource{Path: d.LoadDir, Type: ptr.To(corev1.HostPathDirectory)}}}},
				},
			},
		},
	}
}

// nodeSelector keeps a pod on node; nil for "".
func nodeSelector(node string) map[string]string {
	if node == "" {
		return nil
	}
	return map[string]string{corev1.LabelHostname: node}
}

// Create creates the Deployment in ns and waits until Replicas of its pods
// run; it returns those pods, sorted by name.
func (d LoadDeployment) Create(ctx context.Context, client kubernetes.Interface, ns string, timeout time.Duration) ([]corev1.Pod, error) {
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, d.Build(), metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating deployment %s/%s: %w", ns, d.Name, err)
	}
	return RunningPods(ctx, client, ns, "app="+d.Name, int(d.Replicas), timeout)
}

// RunningPods waits until exactly n pods match selector in ns, none of them
// terminating, each with all containers running, and returns them.
func RunningPods(ctx context.Context, client kubernetes.Interface, ns, selector string, n int, timeout time.Duration) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := poll(wctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil // transient; the deadline reports a lasting failure
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				return false, nil
			}
			if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
				return false, fmt.Errorf("pod %s/%s ended: %s", ns, p.Name, p.Status.Phase)
			}
			running := len(p.Status.ContainerStatuses) == len(p.Spec.Containers)
			for _, cs := range p.Status.ContainerStatuses {
				running = running && cs.State.Running != nil
			}
			if !running {
				return false, nil
			}
			pods = append(pods, p)
		}
		return len(pods) == n, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for %d running pods %s in %s: %w", n, selector, ns, err)
	}
	return pods, nil
}

// WriteLoad sets snug-load's targets (for example "cpu=400m" or
// "memory=100Mi") for the pod named pod (or "all") through its control
// file in loadDir, atomically, and returns when it was written; snug-load
// applies it within about 100 ms (50 ms polls, two equal reads).
func WriteLoad(loadDir, pod, targets string) (time.Time, error) {
	p := filepath.Join(loadDir, pod)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(targets+"\n"), 0o644); err != nil {
		return time.Time{}, err
	}
	if err := os.Rename(tmp, p); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}
