//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/snug-dev/snug/api/v1alpha1"
	policyclient "github.com/snug-dev/snug/api/v1alpha1/client"
	"github.com/snug-dev/snug/config/rbac"
	"github.com/snug-dev/snug/internal/agent"
	"github.com/snug-dev/snug/lab/internal/experiment"
)

// TestRBAC installs snug with its chart and holds its ServiceAccounts to
// config/rbac (the chart's rendering, TestConfigIsTheChart): through a
// token of each from the TokenRequest API, they may do exactly what their
// roles grant and not the rest; the in-cluster controller leads from
// snug-system; a snug-load Deployment at cpu 50m/100m under an InPlace
// policy, stepped to 400m, gets a larger cpu limit in its status without
// a restart; neither pod's log has a "forbidden".
func TestRBAC(t *testing.T) {
	ctx := t.Context()
	objs, err := rbac.Decode(rbac.Files...)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ag := installSnug(t, snugInstall{
		set: []string{"crds.enabled=true", "crds.keep=false"},
		afterStop: func(t *testing.T, s *experiment.Snug) {
			for _, l := range []string{s.AgentLog, s.ControllerLog} {
				if b, _ := os.ReadFile(l); strings.Contains(strings.ToLower(string(b)), "forbidden") {
					t.Errorf("%s has a forbidden:\n%s", filepath.Base(l), forbiddenLines(string(b)))
				}
			}
		},
	})
	s := ag.snug
	t.Logf("agent ready and controller %s leading from %s/snug-controller in %.1fs", s.ControllerPod, rbac.Namespace, time.Since(start).Seconds())
	agentKube := serviceAccountKubeconfig(t, rbac.AgentServiceAccount)
	controllerKube := serviceAccountKubeconfig(t, rbac.ControllerServiceAccount)
	ns := testNamespace(t, "snug-rbac-")
	t.Run("access", func(t *testing.T) { testRBACAccess(t, objs, agentKube, controllerKube, ns) })

	pc, err := policyclient.NewForConfig(adminConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	createPolicy(t, pc, ns, "load", v1alpha1.SnugPolicySpec{
		TargetRef:    deploymentRef("load"),
		UpdatePolicy: &v1alpha1.PodUpdatePolicy{UpdateMode: v1alpha1.UpdateModeInPlace},
	})
	pods, err := experiment.LoadDeployment{
		Name: "load", Replicas: 1, LoadDir: labOpts.LoadDir(), Args: []string{"--cpu=50m"},
		CPURequest: "50m", CPULimit: "100m", MemoryRequest: "64Mi", MemoryLimit: "128Mi",
	}.Create(ctx, client, ns, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pod := pods[0]
	t.Cleanup(func() { os.Remove(filepath.Join(labOpts.LoadDir(), pod.Name)) })
	containerID := pod.Status.ContainerStatuses[0].ContainerID
	tl := watchPod(t, ns, pod.Name)

	// The controller can write the policy's status; the agent covers the
	// pod and has seen it at 50m.
	waitPolicy(t, pc, ns, "load", "Ready", func(p *v1alpha1.SnugPolicy) bool {
		return p.Status.ObservedGeneration == p.Generation && meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionReady)
	})
	ag.waitAutoscale(t, ns, pod.Name, time.Minute, func(c agent.ContainerJSON) bool {
		return c.Autoscale != nil && c.Autoscale.LastDecision != nil && len(ratePointsAfter(c.History, time.Time{})) >= 3
	})

	step, err := experiment.WriteLoad(labOpts.LoadDir(), pod.Name, "cpu=400m")
	if err != nil {
		t.Fatal(err)
	}
	var grown int64
	// At 50m under a 100m limit snug-load is throttled in bursts, so snug
	// may grow it before the step; a limit of 400m or more is the step's.
	waitFor(t, "the pod's actual cpu limit to reach the 400m load", 2*time.Minute, func() (bool, error) {
		p := getPod(t, ns, pod.Name)
		if r := p.Status.ContainerStatuses[0].Resources; r != nil {
			lim := r.Limits[corev1.ResourceCPU]
			grown = lim.MilliValue()
		}
		return grown >= 400, nil
	})
	seen := tl.firstStatusCPULimit(step, grown)
	t.Logf("RBAC %s: cpu limit 100m -> %dm (>= the 400m load) in the pod's status %s after the load step, as ServiceAccounts %s and %s",
		labOpts.KubernetesVersion, grown, secondsSince(seen, step), rbac.AgentServiceAccount, rbac.ControllerServiceAccount)
	assertInPlace(t, ns, pod.Name, containerID, corev1.PodQOSBurstable)
	waitEvent(t, ns, pod.Name, agent.ReasonResized)
}

// testRBACAccess asks the API server, as each ServiceAccount, whether it
// may do what its roles grant (all of it) and a few things it must not.
func testRBACAccess(t *testing.T, objs *rbac.Objects, agentKube, controllerKube, ns string) {
	type ask struct {
		verb, group, resource, sub, ns, name string
	}
	asks := func(rules []rbacv1.PolicyRule, ns string) []ask {
		var out []ask
		for _, r := range rules {
			names := r.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					base, sub, _ := strings.Cut(res, "/")
					for _, v := range r.Verbs {
						for _, n := range names {
							out = append(out, ask{v, g, base, sub, ns, n})
						}
					}
				}
			}
		}
		return out
	}
	role := func(kind, name string) []rbacv1.PolicyRule {
		for _, r := range objs.ClusterRoles {
			if kind == "ClusterRole" && r.Name == name {
				return r.Rules
			}
		}
		for _, r := range objs.Roles {
			if kind == "Role" && r.Name == name {
				return r.Rules
			}
		}
		t.Fatalf("no %s %s", kind, name)
		return nil
	}
	for _, sa := range []struct {
		name, kubeconfig string
		allowed, denied  []ask
	}{
		{
			name: rbac.AgentServiceAccount, kubeconfig: agentKube,
			allowed: asks(role("ClusterRole", "snug-agent"), ns),
			denied: []ask{
				{"delete", "", "pods", "", ns, ""}, {"update", "", "pods", "", ns, ""}, {"create", "", "pods", "eviction", ns, ""},
				{"update", "", "pods", "resize", ns, ""}, {"get", "", "secrets", "", ns, ""}, {"create", "", "configmaps", "", ns, ""},
				{"patch", "apps", "deployments", "", ns, ""}, {"update", v1alpha1.GroupName, "snugpolicies", "status", ns, ""},
				{"patch", "", "nodes", "", "", labOpts.NodeName}, {"update", "coordination.k8s.io", "leases", "", rbac.Namespace, "snug-controller"},
			},
		},
		{
			name: rbac.ControllerServiceAccount, kubeconfig: controllerKube,
			allowed: append(asks(role("ClusterRole", "snug-controller"), ns),
				asks(role("Role", "snug-controller-leader-election"), rbac.Namespace)...),
			denied: []ask{
				{"patch", "", "pods", "resize", ns, ""}, {"patch", "", "pods", "", ns, ""}, {"delete", "", "pods", "", ns, ""},
				{"get", "", "secrets", "", ns, ""}, {"delete", "", "configmaps", "", ns, ""}, {"patch", "apps", "deployments", "", ns, ""},
				{"update", v1alpha1.GroupName, "snugpolicies", "", ns, ""},
				{"update", "coordination.k8s.io", "leases", "", rbac.Namespace, "kube-controller-manager"},
				{"create", "coordination.k8s.io", "leases", "", "kube-system", ""},
				{"patch", "apiextensions.k8s.io", "customresourcedefinitions", "", "", "other.example.com"},
				{"delete", "apiextensions.k8s.io", "customresourcedefinitions", "", "", "snugpolicies." + v1alpha1.GroupName},
			},
		},
	} {
		cs := kubeconfigClient(t, sa.kubeconfig)
		check := func(a ask, want bool) {
			r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: a.ns, Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub, Name: a.name,
				}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("asking as %s: %v", sa.name, err)
			}
			if r.Status.Allowed != want {
				t.Errorf("%s may %s %s/%s (group %q, namespace %q, name %q): %v, want %v",
					sa.name, a.verb, a.resource, a.sub, a.group, a.ns, a.name, r.Status.Allowed, want)
			}
		}
		for _, a := range sa.allowed {
			check(a, true)
		}
		for _, a := range sa.denied {
			check(a, false)
		}
		t.Logf("%s: %d grants allowed, %d other requests denied", sa.name, len(sa.allowed), len(sa.denied))
	}
}

func adminConfig(t *testing.T) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", labOpts.Kubeconfig())
	if err != nil {
		t.Fatalf("loading lab kubeconfig: %v", err)
	}
	cfg.Timeout = 30 * time.Second
	return cfg
}

func kubeconfigClient(t *testing.T, path string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// serviceAccountKubeconfig mints a one-hour token for the ServiceAccount
// (TokenRequest) and writes a kubeconfig that uses it against the lab.
func serviceAccountKubeconfig(t *testing.T, sa string) string {
	t.Helper()
	tr, err := client.CoreV1().ServiceAccounts(rbac.Namespace).CreateToken(t.Context(), sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s: %v", sa, err)
	}
	admin, err := clientcmd.LoadFromFile(labOpts.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lab"] = cluster
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts[sa] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: sa}
	cfg.CurrentContext = sa
	path := filepath.Join(t.TempDir(), sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func forbiddenLines(log string) string {
	var b strings.Builder
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(strings.ToLower(l), "forbidden") {
			fmt.Fprintln(&b, l)
		}
	}
	return b.String()
}
