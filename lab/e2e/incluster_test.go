//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/config/deploy"
	"github.com/snug-dev/snug/config/rbac"
	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/lab/image"
)

// The lab plumbing that running snug in-cluster needs: kube-proxy (the
// kubernetes Service's ClusterIP, which in-cluster clients dial), the
// registry (pods pull snug's images by tag) and the images themselves.

var (
	pushOnce   sync.Once
	pushed     map[string]image.Built
	pushFailed error
)

// pushedImages pushes this build's images (SNUG_BIN's static snug-agent and
// snug-controller) to the lab registry once per run, by product name.
func pushedImages(t *testing.T) map[string]image.Built {
	t.Helper()
	pushOnce.Do(func() {
		builts, err := lab.PushImages(context.Background(), labOpts, filepath.Dir(labOpts.LoadBinary))
		if err != nil {
			pushFailed = err
			return
		}
		pushed = map[string]image.Built{}
		for _, b := range builts {
			pushed[b.Product] = b
			t.Logf("pushed %s %s (%d bytes)", b.Ref, b.Digest, b.Size)
		}
	})
	if pushFailed != nil {
		t.Fatalf("pushing the images: %v", pushFailed)
	}
	return pushed
}

// runPod creates pod in ns and waits until it has ended; it returns the
// pod and its log.
func runPod(t *testing.T, ns string, pod *corev1.Pod) (*corev1.Pod, string) {
	t.Helper()
	ctx := t.Context()
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	var got *corev1.Pod
	waitFor(t, "pod "+pod.Name+" to end", waitLimit, func() (bool, error) {
		var err error
		got, err = client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed, nil
	})
	log, err := client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of %s: %v", pod.Name, err)
	}
	return got, string(log)
}

// TestKubeProxyClusterIP: a pod reaches the API server through the
// kubernetes Service's ClusterIP ($KUBERNETES_SERVICE_HOST, what client-go's
// InClusterConfig dials). Without kube-proxy nothing routes the service
// range and the connection times out. busybox has no working TLS client
// (its wget crashes on https), so the pod speaks plain HTTP to the TLS
// port, and the answer that only Go's TLS server gives proves who
// answered. TestAgentInCluster shows a real client-go in-cluster client.
func TestKubeProxyClusterIP(t *testing.T) {
	ns := testNamespace(t, "kube-proxy-")
	svc, err := client.CoreV1().Services("default").Get(t.Context(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, log := runPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "clusterip"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "nc", Image: busybox, ImagePullPolicy: corev1.PullNever,
			Command: []string{"sh", "-c", `echo "dialing $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; ` +
				`printf 'GET /version HTTP/1.0\r\n\r\n' | nc -w 10 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT" | grep .`},
		}}},
	})
	t.Logf("pod log:\n%s", log)
	if pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod %s: the API server was not reached through %s", pod.Status.Phase, svc.Spec.ClusterIP)
	}
	if want := fmt.Sprintf("dialing %s:443", svc.Spec.ClusterIP); !strings.Contains(log, want) {
		t.Errorf("log does not say %q", want)
	}
	if want := "Client sent an HTTP request to an HTTPS server."; !strings.Contains(log, want) {
		t.Errorf("the answer is not the API server's (%q)", want)
	}
}

// TestRegistryPull: the images make images builds, pushed to the lab's
// registry, are pulled by tag with the normal pull policy; the pod's
// imageID is the pushed digest and the binary says its version.
func TestRegistryPull(t *testing.T) {
	imgs := pushedImages(t)
	ns := testNamespace(t, "registry-")
	for _, product := range image.Products {
		b := imgs[product]
		pod, log := runPod(t, ns, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: product},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "version", Image: b.Ref, ImagePullPolicy: corev1.PullIfNotPresent, Args: []string{"--version"},
			}}},
		})
		if pod.Status.Phase != corev1.PodSucceeded || len(pod.Status.ContainerStatuses) != 1 {
			t.Fatalf("%s: pod %s, log %q", product, pod.Status.Phase, log)
		}
		st := pod.Status.ContainerStatuses[0]
		if want := "@" + b.Digest.String(); !strings.HasSuffix(st.ImageID, want) {
			t.Errorf("%s: imageID %s, want the pushed digest %s", product, st.ImageID, b.Digest)
		}
		if !strings.HasPrefix(log, product+" ") || strings.Contains(log, " dev\n") {
			t.Errorf("%s --version said %q, want %s <version>", product, log, product)
		}
		t.Logf("%s: pulled %s, imageID %s, says %q", product, b.Ref, st.ImageID, strings.TrimSpace(log))
	}
}

// TestCgroupsReadableAsNonRoot answers the question of the DaemonSet's
// security posture: as 65532:65532, all capabilities dropped, read-only
// root, no privilege escalation, with the host's /sys/fs/cgroup mounted
// read-only, a container reads a pod's cpu and memory files of the v1
// hierarchies.
func TestCgroupsReadableAsNonRoot(t *testing.T) {
	ns := testNamespace(t, "cgroup-read-")
	sc := agentSecurityContext(t)
	pod, log := runPod(t, ns, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Spec: corev1.PodSpec{
			SecurityContext: sc.pod,
			Containers: []corev1.Container{{
				Name: "cat", Image: busybox, ImagePullPolicy: corev1.PullNever,
				SecurityContext: sc.container,
				Env: []corev1.EnvVar{{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}}},
				Command: []string{"sh", "-ec", `id
grep Cap /proc/self/status
for h in cpu cpuacct memory; do
  d=$(find /host/sys/fs/cgroup/$h/kubepods -maxdepth 2 -type d -name "pod$POD_UID")
  echo "pod cgroup: $d"
  for f in cpu.stat cpuacct.usage memory.usage_in_bytes memory.stat; do
    if [ -e "$d/$f" ]; then head -c 60 "$d/$f" >/dev/null; echo "read $h/$f"; fi
  done
done
echo x > "$d/memory.limit_in_bytes" 2>/dev/null && echo WROTE || echo "write refused"`},
				VolumeMounts: []corev1.VolumeMount{{Name: "cgroup", MountPath: "/host/sys/fs/cgroup", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "cgroup", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/sys/fs/cgroup", Type: ptr.To(corev1.HostPathDirectory)}}}},
		},
	})
	t.Logf("pod log:\n%s", log)
	if pod.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod %s", pod.Status.Phase)
	}
	for _, want := range []string{"uid=65532 gid=65532", "CapEff:\t0000000000000000",
		"read cpu/cpu.stat", "read cpuacct/cpuacct.usage", "read memory/memory.usage_in_bytes", "read memory/memory.stat", "write refused"} {
		if !strings.Contains(log, want) {
			t.Errorf("log does not say %q", want)
		}
	}
}

type securityContexts struct {
	pod       *corev1.PodSecurityContext
	container *corev1.SecurityContext
}

// agentSecurityContext is the agent DaemonSet's (config/deploy).
func agentSecurityContext(t *testing.T) securityContexts {
	t.Helper()
	ds, err := deploy.Agent()
	if err != nil {
		t.Fatal(err)
	}
	return securityContexts{ds.Spec.Template.Spec.SecurityContext, ds.Spec.Template.Spec.Containers[0].SecurityContext}
}

// TestAgentInCluster runs the agent's DaemonSet of config/deploy with the
// pushed image, in-cluster config (through kube-proxy) and the agent's
// ClusterRole bound to a throwaway ServiceAccount, and waits for the pod
// to be Ready (its readiness probe is /readyz: pods listed and a sampling
// pass done). Then the agent's API, from the host, lists containers it
// sampled from the cgroups as 65532 with no capabilities.
func TestAgentInCluster(t *testing.T) {
	imgs := pushedImages(t)
	installPolicyCRD(t)
	ns := testNamespace(t, "agent-incluster-")
	ctx := t.Context()
	objs, err := rbac.Default()
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	for _, r := range objs.ClusterRoles {
		if r.Name == "snug-agent" {
			role = r
		}
	}
	if role == nil {
		t.Fatal("config/rbac has no snug-agent ClusterRole")
	}
	role.Name = ns + "-agent"
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-agent"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "snug-agent", Namespace: ns}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = client.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "snug-agent"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ds, err := deploy.Agent()
	if err != nil {
		t.Fatal(err)
	}
	ds.Namespace = ns
	ds.Spec.Template.Spec.Containers[0].Image = imgs["snug-agent"].Ref
	// The lab has no PriorityClass objects beyond the built-in ones; keep
	// whatever config/deploy says.
	if _, err := client.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the agent DaemonSet: %v", err)
	}
	var pod corev1.Pod
	waitFor(t, "the in-cluster agent to be Ready", waitLimit, func() (bool, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 {
			return false, err
		}
		pod = pods.Items[0]
		for _, st := range pod.Status.ContainerStatuses {
			if st.RestartCount > 0 {
				return false, fmt.Errorf("agent restarted: %+v", st.LastTerminationState)
			}
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	st := pod.Status.ContainerStatuses[0]
	if !strings.HasSuffix(st.ImageID, "@"+imgs["snug-agent"].Digest.String()) {
		t.Errorf("imageID %s, want %s", st.ImageID, imgs["snug-agent"].Digest)
	}
	// config/deploy serves HTTPS (--tls, self-signed) and checks tokens
	// (--auth): read as a ServiceAccount bound to snug-metrics-reader.
	reader, err := experiment.NewReader(ctx, client, ns, "reader")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reader.Delete(context.Background()) })
	base := "https://" + pod.Status.PodIP + ":9464"
	hc := experiment.SelfSignedClient()
	var body string
	waitFor(t, "the agent's API to list its own container", 30*time.Second, func() (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/snug/v1/namespaces/"+ns+"/pods/"+pod.Name+"?limit=1", nil)
		if err != nil {
			return false, err
		}
		req.Header.Set("Authorization", "Bearer "+reader.Token)
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK, nil
	})
	t.Logf("in-cluster agent %s (%s) Ready; its own pod from its API: %s", pod.Name, st.ImageID, tail(body, 3))
}
