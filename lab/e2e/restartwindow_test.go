//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/internal/policy"
	"github.com/snug-dev/snug/lab/internal/experiment"
)

// TestRestartWindow is issue 31's restart windows on the real kubelet,
// with snug (agent and controller) installed by its chart: a three-replica
// Deployment whose memory is resizePolicy RestartContainer (as a JVM's or a
// GOMEMLIMIT program's is), under a policy with restartWindow
// (minIntervalSeconds 120: no pod asks twice within the test) and a
// PodDisruptionBudget that allows one
// disruption; each pod's snug-load holds 58Mi of its 64Mi limit. snug
// grows each pod's memory by restarting its container exactly once, one
// pod at a time (never two pods not Ready at once), with no OOM kill; each
// restarted container's Go runtime reads the new limit (GOMEMLIMIT from the
// downward API's limits.memory, which snug-load logs at start); the
// policy's status.restarts records the three; and, the grow sized to last
// (sizeForRestart), no pod holds a further change that needs a restart.
func TestRestartWindow(t *testing.T) {
	pc := installPolicyCRD(t)
	ag := installSnug(t, snugInstall{})
	ns := testNamespace(t, "snug-restart-")
	drainNamespace(t, ns)
	const name = "jvm"
	labels := map[string]string{"app": name}
	createPolicy(t, pc, ns, name, v1alpha1.SnugPolicySpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{
			UpdateMode:    v1alpha1.UpdateModeInPlace,
			RestartWindow: &v1alpha1.RestartWindow{MinIntervalSeconds: ptr.To[int32](120)},
		},
	})
	createPDB(t, ns, name, 2)
	createRestartDeployment(t, ns, name, labels, 3)
	pods := readyPods(t, ns, name, 3)
	waitPDB(t, ns, name, 1)
	// Every change of the pods, from a watch: how many are not Ready at
	// once (a poll could miss a restart of a second or two).
	w, err := client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	notReadyNow, mostNotReadyWatched := map[string]bool{}, 0
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			notReadyNow[p.Name] = ev.Type != watch.Deleted && !podReady(p)
			n := 0
			for _, nr := range notReadyNow {
				if nr {
					n++
				}
			}
			mostNotReadyWatched = max(mostNotReadyWatched, n)
			mu.Unlock()
		}
	}()
	start := time.Now()
	for _, p := range pods {
		writeLoad(t, p.Name, "memory=58Mi")
	}

	type seen struct {
		restarts  int32
		restartAt time.Time
		limit     *resource.Quantity
	}
	byPod := map[string]*seen{}
	for _, p := range pods {
		byPod[p.Name] = &seen{}
	}
	mostNotReady, oom := 0, ""
	waitFor(t, "each pod's container restarted once with more memory", 8*time.Minute, func() (bool, error) {
		list, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, nil
		}
		notReady, done := 0, 0
		for i := range list.Items {
			p := &list.Items[i]
			s := byPod[p.Name]
			if s == nil || len(p.Status.ContainerStatuses) != 1 {
				return false, fmt.Errorf("pod %s is not one of the Deployment's first three: a pod was replaced, not restarted", p.Name)
			}
			cst := p.Status.ContainerStatuses[0]
			if tm := cst.LastTerminationState.Terminated; tm != nil && tm.Reason == "OOMKilled" {
				oom = p.Name
			}
			if cst.RestartCount > s.restarts {
				s.restarts, s.restartAt = cst.RestartCount, time.Now()
			}
			if !podReady(p) {
				notReady++
			}
			s.limit = p.Spec.Containers[0].Resources.Limits.Memory()
			if cst.RestartCount >= 1 && podReady(p) && s.limit.Cmp(resource.MustParse("64Mi")) > 0 && !policy.PodConditionTrue(p, policy.ConditionRestartWanted) {
				done++
			}
		}
		mostNotReady = max(mostNotReady, notReady)
		return done == 3, nil
	})
	for name, s := range byPod {
		t.Logf("RESTART %s %s: restarted %d time(s), %.1fs after the load; memory limit now %s",
			labOpts.KubernetesVersion, name, s.restarts, s.restartAt.Sub(start).Seconds(), s.limit)
		if s.restarts != 1 {
			t.Errorf("pod %s restarted %d times, want exactly once", name, s.restarts)
		}
	}
	w.Stop()
	<-watched
	mu.Lock()
	mostNotReady = max(mostNotReady, mostNotReadyWatched)
	mu.Unlock()
	t.Logf("RESTART %s: at most %d pod(s) not Ready at once (a watch of the pods)", labOpts.KubernetesVersion, mostNotReady)
	if mostNotReady > 1 {
		t.Errorf("%d pods were not Ready at once, want one restart at a time", mostNotReady)
	}
	// The kubelet may restart a container within one status update (the
	// watch then sees no pod not Ready): the containers' own times say
	// whether two restarts overlapped. Each restart is from the old
	// container's end to the new one's start; the next pod's must begin
	// no earlier than the last one's ended (whole seconds).
	type span struct {
		pod        string
		down, back time.Time
	}
	var spans []span
	list, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		cst := p.Status.ContainerStatuses[0]
		if cst.LastTerminationState.Terminated == nil || cst.State.Running == nil {
			t.Errorf("pod %s: last state %+v, state %+v; want a terminated container and a running one", p.Name, cst.LastTerminationState, cst.State)
			continue
		}
		spans = append(spans, span{p.Name, cst.LastTerminationState.Terminated.FinishedAt.Time, cst.State.Running.StartedAt.Time})
	}
	slices.SortFunc(spans, func(a, b span) int { return a.down.Compare(b.down) })
	for _, s := range spans {
		t.Logf("RESTART %s %s: container down %s, back %s", labOpts.KubernetesVersion, s.pod, s.down.Format(time.TimeOnly), s.back.Format(time.TimeOnly))
	}
	for i := 1; i < len(spans); i++ {
		if spans[i].down.Before(spans[i-1].back) {
			t.Errorf("pod %s's container went down at %s, before pod %s's was back (%s): two restarts at once", spans[i].pod, spans[i].down.Format(time.TimeOnly), spans[i-1].pod, spans[i-1].back.Format(time.TimeOnly))
		}
	}
	if oom != "" {
		t.Errorf("pod %s was OOM-killed: the window came too late", oom)
	}
	// The policy's status records the three restarts.
	waitFor(t, "the policy's status.restarts", time.Minute, func() (bool, error) {
		pol, err := pc.SnugPolicies(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(pol.Status.Restarts) >= 3, nil
	})
	for _, p := range pods {
		// The runtime side: the restarted container's Go runtime read the
		// new limit from the downward API at its start.
		want := fmt.Sprintf("GOMEMLIMIT %d: ", byPod[p.Name].limit.Value())
		raw, err := client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "app"}).DoRaw(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), want) {
			t.Errorf("pod %s's restarted container logged %q, want %q (the new limit)", p.Name, firstLine(string(raw), "GOMEMLIMIT"), want)
		}
		waitEvent(t, ns, p.Name, agent.ReasonRestartWindow)
		// The grow was sized to last: the agent holds no further change
		// that would need another restart.
		c := ag.waitAutoscale(t, ns, p.Name, time.Minute, func(c agent.ContainerJSON) bool {
			d := c.Autoscale.LastDecision
			return d != nil && d.Time.After(byPod[p.Name].restartAt)
		})
		if m := c.Autoscale.LastDecision.Memory; m.Why == "RestartRequired" {
			t.Errorf("pod %s: after its restart the agent holds another memory change that needs one (%s): the grow did not last", p.Name, m.Reason)
		}
	}
}

// firstLine is s's first line that contains sub, "" if none.
func firstLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// createRestartDeployment runs snug-load in replicas pods whose memory is
// resizePolicy RestartContainer (cpu NotRequired), at 50m/100m cpu and
// 32Mi/64Mi memory, each reading its targets from its control file.
func createRestartDeployment(t *testing.T, ns, name string, labels map[string]string, replicas int32) {
	t.Helper()
	hostPathType := corev1.HostPathDirectory
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To(int64(2)),
					Containers: []corev1.Container{{
						Name: "app", Image: experiment.LoadImage, ImagePullPolicy: corev1.PullNever,
						Args: []string{"--listen="},
						Env: []corev1.EnvVar{
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							// A Go program's memory limit, read once at start
							// from the container's own limit.
							{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
						},
						ResizePolicy: []corev1.ContainerResizePolicy{
							{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
							{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "control", MountPath: "/control", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "control", VolumeSource: corev1.VolumeSource{
						HostPath: &corev1.HostPathVolumeSource{Path: labOpts.LoadDir(), Type: &hostPathType}}}},
				},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating deployment %s: %v", name, err)
	}
}
