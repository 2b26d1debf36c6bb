package experiment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerName is the name of every experiment pod's only container.
const containerName = "app"

// markerScript writes a marker that differs on every container start (so a
// restarted container shows a new one), then sleeps. The trap lets the pod
// stop at once when deleted: a shell as PID 1 ignores SIGTERM otherwise.
const markerScript = `echo started $(cat /proc/sys/kernel/random/uuid) >/tmp/marker; trap 'exit 0' TERM; sleep 3600 & wait`

// sleepScript sleeps until deleted.
const sleepScript = `trap 'exit 0' TERM; sleep 3600 & wait`

// podSpec describes an experiment pod; build turns it into a Pod.
type podSpec struct {
	name    string
	image   string
	command []string
	args    []string
	// requests and limits as quantities; "" leaves a value unset.
	cpuRequest, cpuLimit, memRequest, memLimit string
	// cpuPolicy and memPolicy are the container's resizePolicy; "" leaves
	// it out (the API server defaults NotRequired).
	cpuPolicy, memPolicy corev1.ResourceResizeRestartPolicy
	restartPolicy        corev1.RestartPolicy
}

// markerPod is the field report's test pod: busybox writing /tmp/marker,
// Guaranteed with the given cpu and memory, resizePolicy NotRequired for
// both, restartPolicy Never as in the report's manifest.
func markerPod(name, cpu, mem string) podSpec {
	return podSpec{
		name: name, image: BusyboxImage, command: []string{"sh", "-c", markerScript},
		cpuRequest: cpu, cpuLimit: cpu, memRequest: mem, memLimit: mem,
		cpuPolicy: corev1.NotRequired, memPolicy: corev1.NotRequired,
		restartPolicy: corev1.RestartPolicyNever,
	}
}

// fillerPod requests cpu (and a little memory) without limits, to take room
// on the node.
func fillerPod(name, cpu string) podSpec {
	return podSpec{
		name: name, image: BusyboxImage, command: []string{"sh", "-c", sleepScript},
		cpuRequest: cpu, memRequest: "16Mi", restartPolicy: corev1.RestartPolicyAlways,
	}
}

func (s podSpec) build() *corev1.Pod {
	grace := int64(5)
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	set := func(l corev1.ResourceList, name corev1.ResourceName, v string) {
		if v != "" {
			l[name] = resource.MustParse(v)
		}
	}
	set(res.Requests, corev1.ResourceCPU, s.cpuRequest)
	set(res.Requests, corev1.ResourceMemory, s.memRequest)
	set(res.Limits, corev1.ResourceCPU, s.cpuLimit)
	set(res.Limits, corev1.ResourceMemory, s.memLimit)
	c := corev1.Container{
		Name:            containerName,
		Image:           s.image,
		ImagePullPolicy: corev1.PullNever,
		Command:         s.command,
		Args:            s.args,
		Resources:       res,
	}
	if s.cpuPolicy != "" {
		c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: corev1.ResourceCPU, RestartPolicy: s.cpuPolicy})
	}
	if s.memPolicy != "" {
		c.ResizePolicy = append(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: corev1.ResourceMemory, RestartPolicy: s.memPolicy})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: map[string]string{"app.kubernetes.io/name": s.name}},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{c},
			RestartPolicy:                 s.restartPolicy,
			TerminationGracePeriodSeconds: &grace,
		},
	}
}

// createRunning creates the pod, waits until its container runs and
// records that on the timeline. The returned watch follows the pod until
// stopped.
func (s *session) createRunning(ctx context.Context, spec podSpec) (*podWatch, PodState, error) {
	pod := spec.build()
	pod.Spec.NodeSelector = nodeSelector(s.env.Node)
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, s.env.Tolerations...)
	if _, err := s.env.Client.CoreV1().Pods(s.run.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return nil, PodState{}, fmt.Errorf("creating pod %s: %w", spec.name, err)
	}
	w, err := s.watchPod(ctx, spec.name)
	if err != nil {
		return nil, PodState{}, err
	}
	st, _, err := w.until(ctx, 0, s.env.timeout(), "pod "+spec.name+" running", running)
	if err != nil {
		w.stop()
		return nil, st, err
	}
	s.step("pod "+spec.name+" running", st, "")
	return w, st, nil
}
