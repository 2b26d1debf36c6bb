package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/internal/kube"
)

// cacheOnlyRead is the transform of the controller's informers: it keeps
// of each object what the controller reads, so that its cache of every
// pod and workload in the cluster costs what it must. It drops
// managedFields everywhere; of a pod, the parts of its spec that nothing
// here reads (volumes, and each container's command, arguments,
// environment, mounts, liveness and start-up probes and lifecycle hooks:
// names, resources, resize policies and readiness probes stay); of a
// workload, its pod template's spec (its selector, replicas, status and
// template labels stay). TestCacheOnlyRead lists what stays.
func cacheOnlyRead(obj any) (any, error) {
	obj, err := kube.StripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Spec.Volumes = nil
		for _, list := range [][]corev1.Container{o.Spec.Containers, o.Spec.InitContainers} {
			for i := range list {
				c := &list[i]
				c.Command, c.Args, c.Env, c.EnvFrom = nil, nil, nil, nil
				c.VolumeMounts, c.VolumeDevices = nil, nil
				c.LivenessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil
			}
		}
		o.Spec.EphemeralContainers = nil
	case *appsv1.Deployment:
		o.Spec.Template.Spec = corev1.PodSpec{}
	case *appsv1.StatefulSet:
		o.Spec.Template.Spec = corev1.PodSpec{}
		o.Spec.VolumeClaimTemplates = nil
	case *appsv1.DaemonSet:
		o.Spec.Template.Spec = corev1.PodSpec{}
	case *appsv1.ReplicaSet:
		o.Spec.Template.Spec = corev1.PodSpec{}
	case *batchv1.Job:
		o.Spec.Template.Spec = corev1.PodSpec{}
	case *batchv1.CronJob:
		o.Spec.JobTemplate.Spec.Template.Spec = corev1.PodSpec{}
	}
	return obj, nil
}
