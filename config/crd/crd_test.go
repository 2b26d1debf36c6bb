package crd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/snug-dev/snug/api/v1alpha1"
)

// field is one property of the schema, by its documented path
// (spec.resourcePolicy.containerPolicies[].mode).
type field struct {
	path   string
	schema apiextensionsv1.JSONSchemaProps
}

// foreign are subtrees whose types come from Kubernetes itself; their
// documentation is upstream's.
var foreign = []string{"spec.selector.", "status.conditions[]."}

func schemaOf(t *testing.T) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	c, err := SnugPolicies()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Spec.Versions) != 1 || c.Spec.Versions[0].Name != v1alpha1.SchemeGroupVersion.Version {
		t.Fatalf("versions = %+v, want only %s", c.Spec.Versions, v1alpha1.SchemeGroupVersion.Version)
	}
	return *c.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// fields lists the properties under spec and status, depth first.
func fields(t *testing.T) []field {
	t.Helper()
	root := schemaOf(t)
	var out []field
	var walk func(prefix string, s apiextensionsv1.JSONSchemaProps)
	walk = func(prefix string, s apiextensionsv1.JSONSchemaProps) {
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			p := s.Properties[n]
			path := prefix + n
			out = append(out, field{path, p})
			switch {
			case p.Type == "object":
				walk(path+".", p)
			case p.Type == "array" && p.Items != nil && p.Items.Schema != nil && p.Items.Schema.Type == "object":
				walk(path+"[].", *p.Items.Schema)
			}
		}
	}
	walk("spec.", root.Properties["spec"])
	walk("status.", root.Properties["status"])
	return out
}

func isForeign(path string) bool {
	for _, f := range foreign {
		if strings.HasPrefix(path, f) {
			return true
		}
	}
	return false
}

func TestCRDNames(t *testing.T) {
	c, err := SnugPolicies()
	if err != nil {
		t.Fatal(err)
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	check("name", c.Name, "snugpolicies."+v1alpha1.GroupName)
	check("group", c.Spec.Group, v1alpha1.GroupName)
	check("kind", c.Spec.Names.Kind, "SnugPolicy")
	check("plural", c.Spec.Names.Plural, v1alpha1.SnugPolicyResource.Resource)
	check("scope", string(c.Spec.Scope), string(apiextensionsv1.NamespaceScoped))
	if !slices.Contains(c.Spec.Names.ShortNames, "sp") {
		t.Errorf("short names %v, want sp among them", c.Spec.Names.ShortNames)
	}
	if v := c.Spec.Versions[0]; v.Subresources == nil || v.Subresources.Status == nil {
		t.Errorf("the status subresource is missing")
	}
	var cols []string
	for _, col := range c.Spec.Versions[0].AdditionalPrinterColumns {
		if col.Priority == 0 {
			cols = append(cols, col.Name)
		}
	}
	if diff := cmp.Diff([]string{"Kind", "Target", "Mode", "Ready", "Age"}, cols); diff != "" {
		t.Errorf("printer columns (-want +got):\n%s", diff)
	}
}

// TestEveryFieldDocumented holds the schema to snug's rule: every field's
// description starts with its JSON name.
func TestEveryFieldDocumented(t *testing.T) {
	for _, f := range fields(t) {
		if isForeign(f.path) {
			continue
		}
		name := f.path[strings.LastIndex(f.path, ".")+1:]
		if !strings.HasPrefix(f.schema.Description, name+" ") {
			t.Errorf("%s: description %q does not start with %q", f.path, f.schema.Description, name)
		}
	}
}

// render writes a default the way docs/policy.md and the doc comments do:
// [cpu, memory], {}, [{containerName: "*"}].
func render(v any, nested bool) string {
	switch v := v.(type) {
	case string:
		if nested && !regexp.MustCompile(`^[A-Za-z0-9]+$`).MatchString(v) {
			return fmt.Sprintf("%q", v)
		}
		return v
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = render(e, true)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + render(v[k], true)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		return fmt.Sprint(v)
	}
}

// defaults maps each field with a schema default to the rendered default.
func defaults(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range fields(t) {
		if f.schema.Default == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(f.schema.Default.Raw, &v); err != nil {
			t.Fatalf("%s: default %s: %v", f.path, f.schema.Default.Raw, err)
		}
		out[f.path] = render(v, false)
	}
	return out
}

// TestDefaultsDocumentedInComments: a field with a default says "Defaults
// to" it (scalars and lists of scalars verbatim), and a field without one
// does not claim one.
func TestDefaultsDocumentedInComments(t *testing.T) {
	want := defaults(t)
	if len(want) == 0 {
		t.Fatal("the schema has no defaults")
	}
	for _, f := range fields(t) {
		if isForeign(f.path) {
			continue
		}
		d, ok := want[f.path]
		says := strings.Contains(f.schema.Description, "Defaults to ")
		switch {
		case !ok && says:
			t.Errorf("%s: the description claims a default the schema does not have", f.path)
		case ok && !says:
			t.Errorf("%s: default %s is not documented", f.path, d)
		case ok && f.schema.Type != "object" && !strings.Contains(d, "{") && !saysDefault(f.schema.Description, d):
			t.Errorf("%s: description %q, want it to say %q", f.path, f.schema.Description, "Defaults to "+d+".")
		}
	}
}

// saysDefault reports whether a description says "Defaults to d." or
// "Defaults to d, ...".
func saysDefault(description, d string) bool {
	text := strings.Join(strings.Fields(description), " ")
	return strings.Contains(text, "Defaults to "+d+".") || strings.Contains(text, "Defaults to "+d+",")
}

// docRow is one row of docs/policy.md's field table.
var docRow = regexp.MustCompile("^\\| `((?:spec|status)\\.[^`]+)` \\| [^|]+ \\| ([^|]+) \\|")

// TestDefaultsDocumentedInDocs: docs/policy.md's Fields table has a row for every field,
// and its Default column equals the schema's default.
func TestDefaultsDocumentedInDocs(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "docs", "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	docs := map[string]string{}
	sc := bufio.NewScanner(f)
	section := ""
	for sc.Scan() {
		if h, ok := strings.CutPrefix(sc.Text(), "## "); ok {
			section = h
		}
		if m := docRow.FindStringSubmatch(sc.Text()); m != nil && section == "Fields" {
			docs[m[1]] = strings.Trim(strings.TrimSpace(m[2]), "`")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	want := defaults(t)
	for _, fl := range fields(t) {
		if isForeign(fl.path) {
			continue
		}
		got, ok := docs[fl.path]
		if !ok {
			t.Errorf("docs/policy.md has no row for %s", fl.path)
			continue
		}
		delete(docs, fl.path)
		d, has := want[fl.path]
		if !has {
			d = "—"
		}
		if got != d {
			t.Errorf("docs/policy.md: %s default %q, the schema says %q", fl.path, got, d)
		}
	}
	for path := range docs {
		t.Errorf("docs/policy.md documents %s, which the schema does not have", path)
	}
}

// TestEveryRuleHasAMessage: a CEL rule without a message would show the
// rule itself to the user.
func TestEveryRuleHasAMessage(t *testing.T) {
	var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
	n := 0
	walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
		for _, r := range s.XValidations {
			n++
			if r.Message == "" && r.MessageExpression == "" {
				t.Errorf("%s: rule %q has no message", path, r.Rule)
			}
		}
		for name, p := range s.Properties {
			walk(path+"."+name, &p)
		}
		if s.Items != nil && s.Items.Schema != nil {
			walk(path+"[]", s.Items.Schema)
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			walk(path+"{}", s.AdditionalProperties.Schema)
		}
	}
	root := schemaOf(t)
	walk("", &root)
	if n == 0 {
		t.Error("the schema has no CEL rules")
	}
}

// TestSamplesDecode: every sample is a SnugPolicy whose fields all exist.
// The API server's verdict on them is in lab/e2e/policy_test.go.
func TestSamplesDecode(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "samples", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var sp v1alpha1.SnugPolicy
		if err := yaml.UnmarshalStrict(b, &sp); err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if sp.APIVersion != v1alpha1.SchemeGroupVersion.String() || sp.Kind != "SnugPolicy" {
			t.Errorf("%s: %s %s, want %s SnugPolicy", p, sp.APIVersion, sp.Kind, v1alpha1.SchemeGroupVersion)
		}
	}
}
