package rbac

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/snug-dev/snug/config/crd"
)

// perm is one verb on one resource (with its subresource), optionally
// limited to one name, or on a non-resource URL (resource is the URL,
// which starts with a slash; group and name are empty).
type perm struct {
	group, resource, verb, name string
}

// nonResource reports whether p is a verb on a non-resource URL.
func (p perm) nonResource() bool { return strings.HasPrefix(p.resource, "/") }

func (p perm) String() string {
	if p.nonResource() {
		return p.verb + " " + p.resource
	}
	s := p.verb + " " + p.resource
	if p.group != "" {
		s += "." + p.group
	}
	if p.name != "" {
		s += " named " + p.name
	}
	return s
}

// use is where the code needs a permission: a file of the module and a
// piece of it that makes the call. pending names the change that adds the
// file, for a permission granted ahead of it: until the file exists, the
// test only logs it.
type use struct {
	file, snippet string
	pending       string
}

// needs lists, per role, every permission the code needs and where. The
// roles must grant exactly these: a permission no code uses fails the test
// as much as a missing one.
var needs = map[string]map[perm]use{
	"ClusterRole/snug-agent": {
		{"", "pods", "list", ""}:                              {file: "internal/agent/pods.go", snippet: "client.Pods(metav1.NamespaceAll).List(ctx, o)"},
		{"", "pods", "watch", ""}:                             {file: "internal/agent/pods.go", snippet: "client.Pods(metav1.NamespaceAll).Watch(ctx, o)"},
		{"", "pods", "patch", ""}:                             {file: "internal/agent/checkpoint.go", snippet: "cs.Pods(ns).Patch(ctx, name, types.MergePatchType, ", pending: "the agent publishing the snapshot annotation"},
		{"", "pods/resize", "patch", ""}:                      {file: "internal/actuate/actuator.go", snippet: `PatchPod(ctx, pod.Namespace, pod.Name, pt, patch, opts, "resize")`},
		{"", "pods/status", "patch", ""}:                      {file: "internal/agent/condition.go", snippet: `types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")`},
		{"", "nodes", "get", ""}:                              {file: "internal/agent/pods.go", snippet: "client.Nodes().Get("},
		{"", "nodes", "list", ""}:                             {file: "internal/agent/pods.go", snippet: "client.Nodes().List(ctx, o)"},
		{"", "nodes", "watch", ""}:                            {file: "internal/agent/pods.go", snippet: "client.Nodes().Watch(ctx, o)"},
		{"", "resourcequotas", "list", ""}:                    {file: "internal/agent/namespace.go", snippet: "client.ResourceQuotas(ns).List(ctx, metav1.ListOptions{})"},
		{"", "limitranges", "list", ""}:                       {file: "internal/agent/namespace.go", snippet: "client.LimitRanges(metav1.NamespaceAll).List(ctx, o)"},
		{"", "limitranges", "watch", ""}:                      {file: "internal/agent/namespace.go", snippet: "client.LimitRanges(metav1.NamespaceAll).Watch(ctx, o)"},
		{"", "events", "create", ""}:                          {file: "internal/agent/run.go", snippet: `kube.EventSink{Client: cs.core}`},
		{"", "events", "patch", ""}:                           {file: "internal/agent/run.go", snippet: `kube.EventSink{Client: cs.core}`},
		{"", "configmaps", "get", ""}:                         {file: "internal/agent/checkpoint.go", snippet: "cs.ConfigMaps(ns).Get(ctx, name, ", pending: "the agent seeding new containers from checkpoints"},
		{"autoscaling.snug.dev", "snugpolicies", "list", ""}:  {file: "internal/agent/policy.go", snippet: `pc.SnugPolicies("").List(`},
		{"autoscaling.snug.dev", "snugpolicies", "watch", ""}: {file: "internal/agent/policy.go", snippet: `pc.SnugPolicies("").Watch(`},
		// --auth: httpauth.ForConfig(cs.config) in run.go.
		{"authentication.k8s.io", "tokenreviews", "create", ""}:        {file: "internal/httpauth/review.go", snippet: `"/apis/authentication.k8s.io/v1/tokenreviews"`},
		{"authorization.k8s.io", "subjectaccessreviews", "create", ""}: {file: "internal/httpauth/review.go", snippet: `"/apis/authorization.k8s.io/v1/subjectaccessreviews"`},
	},
	"ClusterRole/snug-controller": {
		{"autoscaling.snug.dev", "snugpolicies", "list", ""}:          {file: "internal/controller/controller.go", snippet: `pc.SnugPolicies("").List(`},
		{"autoscaling.snug.dev", "snugpolicies", "watch", ""}:         {file: "internal/controller/controller.go", snippet: `pc.SnugPolicies("").Watch(`},
		{"autoscaling.snug.dev", "snugpolicies/status", "update", ""}: {file: "internal/controller/controller.go", snippet: ".UpdateStatus(ctx, "},
		{"", "pods", "list", ""}:                                      {file: "internal/controller/controller.go", snippet: "c.factory.Core().V1().Pods()"},
		{"", "pods", "watch", ""}:                                     {file: "internal/controller/controller.go", snippet: "c.factory.Core().V1().Pods()"},
		{"", "pods/eviction", "create", ""}:                           {file: "internal/controller/evict.go", snippet: ".EvictV1(ctx, "},
		{"", "pods/status", "patch", ""}:                              {file: "internal/controller/restart.go", snippet: `types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")`},
		{"", "configmaps", "list", ""}:                                {file: "internal/controller/controller.go", snippet: "c.cmFactory.Core().V1().ConfigMaps()"},
		{"", "configmaps", "watch", ""}:                               {file: "internal/controller/controller.go", snippet: "c.cmFactory.Core().V1().ConfigMaps()"},
		{"", "configmaps", "create", ""}:                              {file: "internal/controller/controller.go", snippet: "cms.Create(ctx, cm, "},
		{"", "configmaps", "update", ""}:                              {file: "internal/controller/controller.go", snippet: "cms.Update(ctx, cm, "},
		{"", "events", "create", ""}:                                  {file: "internal/controller/events.go", snippet: `EventSinkImpl{Interface: cs.CoreV1().Events("")}`},
		{"", "events", "patch", ""}:                                   {file: "internal/controller/events.go", snippet: `EventSinkImpl{Interface: cs.CoreV1().Events("")}`},
		{"apps", "deployments", "list", ""}:                           {file: "internal/controller/controller.go", snippet: "apps.Deployments().Informer()"},
		{"apps", "deployments", "watch", ""}:                          {file: "internal/controller/controller.go", snippet: "apps.Deployments().Informer()"},
		{"apps", "statefulsets", "list", ""}:                          {file: "internal/controller/controller.go", snippet: "apps.StatefulSets().Informer()"},
		{"apps", "statefulsets", "watch", ""}:                         {file: "internal/controller/controller.go", snippet: "apps.StatefulSets().Informer()"},
		{"apps", "daemonsets", "list", ""}:                            {file: "internal/controller/controller.go", snippet: "apps.DaemonSets().Informer()"},
		{"apps", "daemonsets", "watch", ""}:                           {file: "internal/controller/controller.go", snippet: "apps.DaemonSets().Informer()"},
		{"apps", "replicasets", "list", ""}:                           {file: "internal/controller/controller.go", snippet: "apps.ReplicaSets().Informer()"},
		{"apps", "replicasets", "watch", ""}:                          {file: "internal/controller/controller.go", snippet: "apps.ReplicaSets().Informer()"},
		{"batch", "jobs", "list", ""}:                                 {file: "internal/controller/controller.go", snippet: "batch.Jobs().Informer()"},
		{"batch", "jobs", "watch", ""}:                                {file: "internal/controller/controller.go", snippet: "batch.Jobs().Informer()"},
		{"batch", "cronjobs", "list", ""}:                             {file: "internal/controller/controller.go", snippet: "batch.CronJobs().Informer()"},
		{"batch", "cronjobs", "watch", ""}:                            {file: "internal/controller/controller.go", snippet: "batch.CronJobs().Informer()"},
		{"autoscaling", "horizontalpodautoscalers", "list", ""}:       {file: "internal/controller/controller.go", snippet: "c.factory.Autoscaling().V2().HorizontalPodAutoscalers()"},
		{"autoscaling", "horizontalpodautoscalers", "watch", ""}:      {file: "internal/controller/controller.go", snippet: "c.factory.Autoscaling().V2().HorizontalPodAutoscalers()"},
		{"autoscaling.k8s.io", "verticalpodautoscalers", "list", ""}:  {file: "internal/controller/vpa.go", snippet: "dynamicinformer.NewFilteredDynamicInformer(c.cfg.Dynamic, convert.VPAResource, "},
		{"autoscaling.k8s.io", "verticalpodautoscalers", "watch", ""}: {file: "internal/controller/vpa.go", snippet: "dynamicinformer.NewFilteredDynamicInformer(c.cfg.Dynamic, convert.VPAResource, "},
		// --auth: httpauth.ForConfig(cfg) in run.go.
		{"authentication.k8s.io", "tokenreviews", "create", ""}:        {file: "internal/httpauth/review.go", snippet: `"/apis/authentication.k8s.io/v1/tokenreviews"`},
		{"authorization.k8s.io", "subjectaccessreviews", "create", ""}: {file: "internal/httpauth/review.go", snippet: `"/apis/authorization.k8s.io/v1/subjectaccessreviews"`},
		// The admission webhook's caBundle (the leader's Rotator).
		{"admissionregistration.k8s.io", "mutatingwebhookconfigurations", "get", "snug"}:   {file: "internal/admission/serving.go", snippet: "api.Get(ctx, r.cfg.WebhookConfig, "},
		{"admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch", "snug"}: {file: "internal/admission/serving.go", snippet: "api.Patch(ctx, r.cfg.WebhookConfig, types.JSONPatchType, "},
	},
	// The admission webhook's serving certificate: every replica watches
	// the Secret, the leader creates and renews it.
	"Role/snug-system/snug-controller-admission": {
		{"", "secrets", "create", ""}:                   {file: "internal/admission/serving.go", snippet: "Secrets(r.cfg.Namespace).Create(ctx, sec, "},
		{"", "secrets", "get", "snug-admission-tls"}:    {file: "internal/admission/serving.go", snippet: "Secrets(r.cfg.Namespace).Get(ctx, r.cfg.SecretName, "},
		{"", "secrets", "update", "snug-admission-tls"}: {file: "internal/admission/serving.go", snippet: "Secrets(r.cfg.Namespace).Update(ctx, sec, "},
		{"", "secrets", "list", "snug-admission-tls"}:   {file: "internal/admission/serving.go", snippet: `fields.OneTermEqualSelector("metadata.name", name)`},
		{"", "secrets", "watch", "snug-admission-tls"}:  {file: "internal/admission/serving.go", snippet: `fields.OneTermEqualSelector("metadata.name", name)`},
	},
	// The paths that --auth guards, which the filter asks get of
	// (httpauth.Verb): the agent's /metrics and JSON API, the
	// controller's /metrics.
	"ClusterRole/snug-metrics-reader": {
		{"", "/metrics", "get", ""}:   {file: "internal/agent/http.go", snippet: `mux.Handle("GET /metrics", `},
		{"", "/snug/v1/*", "get", ""}: {file: "internal/agent/http.go", snippet: `mux.HandleFunc("GET /snug/v1/containers", `},
	},
	// client-go's LeaseLock: Get, then Create or Update.
	"Role/snug-system/snug-controller-leader-election": {
		{"coordination.k8s.io", "leases", "create", ""}:                {file: "internal/controller/lead.go", snippet: "&resourcelock.LeaseLock{"},
		{"coordination.k8s.io", "leases", "get", "snug-controller"}:    {file: "internal/controller/run.go", snippet: `leaseName = "snug-controller"`},
		{"coordination.k8s.io", "leases", "update", "snug-controller"}: {file: "internal/controller/run.go", snippet: `leaseName = "snug-controller"`},
	},
	// Server-side apply sends a PATCH, authorized as a create of the same
	// name too when the CRD is new (apiserver handlers/patch.go); the wait
	// GETs.
	"ClusterRole/snug-controller-install-crds": {
		{"apiextensions.k8s.io", "customresourcedefinitions", "get", "snugpolicies.autoscaling.snug.dev"}:    {file: "internal/install/install.go", snippet: "c.CustomResourceDefinitions().Get(ctx, name, "},
		{"apiextensions.k8s.io", "customresourcedefinitions", "patch", "snugpolicies.autoscaling.snug.dev"}:  {file: "internal/install/install.go", snippet: "c.CustomResourceDefinitions().Patch(ctx, crd.Name, types.ApplyPatchType, "},
		{"apiextensions.k8s.io", "customresourcedefinitions", "create", "snugpolicies.autoscaling.snug.dev"}: {file: "internal/install/install.go", snippet: "c.CustomResourceDefinitions().Patch(ctx, crd.Name, types.ApplyPatchType, "},
	},
}

// all decodes every embedded manifest.
func all(t *testing.T) *Objects {
	t.Helper()
	o, err := Decode(append(slices.Clone(Files), InstallCRDsFile)...)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// roles returns every role's rules by "ClusterRole/NAME" or
// "Role/NAMESPACE/NAME".
func roles(o *Objects) map[string][]rbacv1.PolicyRule {
	out := map[string][]rbacv1.PolicyRule{}
	for _, r := range o.ClusterRoles {
		out["ClusterRole/"+r.Name] = r.Rules
	}
	for _, r := range o.Roles {
		out["Role/"+r.Namespace+"/"+r.Name] = r.Rules
	}
	return out
}

func flatten(t *testing.T, rules []rbacv1.PolicyRule) map[perm]bool {
	t.Helper()
	out := map[perm]bool{}
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 && (len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0) {
			t.Errorf("rule %v: non-resource URLs and resources in one rule", r)
		}
		for _, u := range r.NonResourceURLs {
			for _, v := range r.Verbs {
				p := perm{resource: u, verb: v}
				if out[p] {
					t.Errorf("%s granted twice", p)
				}
				out[p] = true
			}
		}
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						p := perm{g, res, v, n}
						if out[p] {
							t.Errorf("%s granted twice", p)
						}
						out[p] = true
					}
				}
			}
		}
	}
	return out
}

func TestRulesAreWhatTheCodeUses(t *testing.T) {
	got := roles(all(t))
	for role := range got {
		if _, ok := needs[role]; !ok {
			t.Errorf("%s: no list of what the code needs from it", role)
		}
	}
	for role, want := range needs {
		rules, ok := got[role]
		if !ok {
			t.Errorf("%s: not in the manifests", role)
			continue
		}
		granted := flatten(t, rules)
		for p := range granted {
			if _, ok := want[p]; !ok {
				t.Errorf("%s grants %s, which no code needs", role, p)
			}
		}
		for p, u := range want {
			if !granted[p] {
				t.Errorf("%s lacks %s, which %s needs", role, p, u.file)
			}
			src, err := os.ReadFile(filepath.Join("..", "..", u.file))
			if errors.Is(err, fs.ErrNotExist) && u.pending != "" {
				t.Logf("%s: %s is for %s (%s is not in this tree yet)", role, p, u.pending, u.file)
				continue
			}
			if err != nil {
				t.Errorf("%s: %s: %v", role, p, err)
				continue
			}
			if !strings.Contains(string(src), u.snippet) {
				t.Errorf("%s: %s: %s no longer has %q; is the permission still needed?", role, p, u.file, u.snippet)
			}
		}
	}
}

// TestRulesNameRealResources checks every rule against the API: built-in
// resources from client-go's scheme, snugpolicies from the embedded CRD,
// and only the verbs the API server knows.
func TestRulesNameRealResources(t *testing.T) {
	resources := map[string]bool{}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		resources[plural.Group+"/"+plural.Resource] = true
	}
	resources["apiextensions.k8s.io/customresourcedefinitions"] = true
	// VPA's CRD (upstream's, VPA 1.8.1), for condition VPAConflict.
	resources["autoscaling.k8s.io/verticalpodautoscalers"] = true
	c, err := crd.SnugPolicies()
	if err != nil {
		t.Fatal(err)
	}
	resources[c.Spec.Group+"/"+c.Spec.Names.Plural] = true
	subresources := map[string]bool{"/pods/resize": true, "/pods/eviction": true, "/pods/status": true}
	for _, v := range c.Spec.Versions {
		if v.Storage && v.Subresources != nil && v.Subresources.Status != nil {
			subresources[c.Spec.Group+"/"+c.Spec.Names.Plural+"/status"] = true
		}
	}
	verbs := map[string]bool{"get": true, "list": true, "watch": true, "create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}
	for role, rules := range roles(all(t)) {
		for p := range flatten(t, rules) {
			if p.nonResource() {
				if p.verb != "get" {
					t.Errorf("%s: %s: snug's endpoints are only read", role, p)
				}
				continue
			}
			base, sub, isSub := strings.Cut(p.resource, "/")
			if !resources[p.group+"/"+base] {
				t.Errorf("%s: %s: no resource %s in group %q", role, p, base, p.group)
			}
			if isSub && !subresources[p.group+"/"+base+"/"+sub] {
				t.Errorf("%s: %s: no subresource %s of %s", role, p, sub, base)
			}
			if !verbs[p.verb] || p.verb == "*" {
				t.Errorf("%s: %s: not a verb of the API", role, p)
			}
		}
	}
}

// TestObjectsFitTogether checks names and references: namespaced objects
// in snug-system, bindings to roles and ServiceAccounts that exist.
func TestObjectsFitTogether(t *testing.T) {
	o := all(t)
	if len(o.Namespaces) != 1 || o.Namespaces[0].Name != Namespace {
		t.Fatalf("namespaces %v, want one, %s", o.Namespaces, Namespace)
	}
	sas := map[string]bool{}
	for _, sa := range o.ServiceAccounts {
		if sa.Namespace != Namespace {
			t.Errorf("ServiceAccount %s in namespace %q, want %s", sa.Name, sa.Namespace, Namespace)
		}
		sas[sa.Name] = true
	}
	for _, name := range []string{AgentServiceAccount, ControllerServiceAccount} {
		if !sas[name] {
			t.Errorf("no ServiceAccount %s", name)
		}
	}
	have := roles(o)
	checkSubjects := func(binding string, subjects []rbacv1.Subject) {
		if len(subjects) == 0 {
			t.Errorf("%s: no subjects", binding)
		}
		for _, s := range subjects {
			if s.Kind != rbacv1.ServiceAccountKind || s.Namespace != Namespace || !sas[s.Name] {
				t.Errorf("%s: subject %v is not one of snug's ServiceAccounts", binding, s)
			}
		}
	}
	for _, b := range o.ClusterRoleBindings {
		if b.RoleRef.Kind != "ClusterRole" || have["ClusterRole/"+b.RoleRef.Name] == nil || b.RoleRef.Name != b.Name {
			t.Errorf("ClusterRoleBinding %s: roleRef %v, want the ClusterRole of its name", b.Name, b.RoleRef)
		}
		checkSubjects("ClusterRoleBinding/"+b.Name, b.Subjects)
	}
	for _, b := range o.RoleBindings {
		if b.Namespace != Namespace || b.RoleRef.Kind != "Role" || have["Role/"+b.Namespace+"/"+b.RoleRef.Name] == nil {
			t.Errorf("RoleBinding %s/%s: roleRef %v, want a Role in %s", b.Namespace, b.Name, b.RoleRef, Namespace)
		}
		checkSubjects("RoleBinding/"+b.Name, b.Subjects)
	}
	for _, r := range o.Roles {
		if r.Namespace != Namespace {
			t.Errorf("Role %s in namespace %q, want %s", r.Name, r.Namespace, Namespace)
		}
	}
	// snug-metrics-reader is for the user to bind to their readers.
	if n := len(o.ClusterRoleBindings) + len(o.RoleBindings); n != len(have)-1 {
		t.Errorf("%d bindings for %d roles, want one each but %s", n, len(have), MetricsReaderClusterRole)
	}
	for _, b := range o.ClusterRoleBindings {
		if b.RoleRef.Name == MetricsReaderClusterRole {
			t.Errorf("ClusterRoleBinding %s binds %s, which is the user's to bind", b.Name, MetricsReaderClusterRole)
		}
	}
}

func TestDecodeIsStrict(t *testing.T) {
	o := &Objects{}
	if err := o.add([]byte("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\nautomount: true\n")); err == nil {
		t.Error("an unknown field decoded")
	}
	if err := o.add([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n")); err == nil {
		t.Error("an unexpected kind decoded")
	}
	if err := o.add([]byte("# only a comment\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\n")); err != nil || len(o.ServiceAccounts) != 1 {
		t.Errorf("comment then one object: %v, %d ServiceAccounts", err, len(o.ServiceAccounts))
	}
}
