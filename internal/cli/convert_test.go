package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/snug-dev/snug/api/v1alpha1"
)

func TestConvertOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*convertOptions)
		want string
	}{
		{"defaults", func(*convertOptions) {}, ""},
		{"json", func(o *convertOptions) { o.output = "json" }, ""},
		{"apply", func(o *convertOptions) { o.apply, o.forceConflicts = true, true }, ""},
		{"bad output", func(o *convertOptions) { o.output = "table" }, "use yaml or json"},
		{"apply and output", func(o *convertOptions) { o.apply, o.output = true, "yaml" }, "-o prints"},
		{"force without apply", func(o *convertOptions) { o.forceConflicts = true }, "needs --apply"},
		{"-A and -n", func(o *convertOptions) { o.allNamespaces, o.kube = true, withNamespace("x") }, "exclude each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &convertOptions{}
			tt.edit(o)
			err := o.Validate()
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func vpaObject(ns, name, kind, mode string) map[string]any {
	return map[string]any{
		"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{
			"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": kind, "name": name},
			"updatePolicy": map[string]any{"updateMode": mode},
		},
	}
}

// TestConvertOutput prints two convertible VPAs and one that is not, in
// both formats, and reads the policies back.
func TestConvertOutput(t *testing.T) {
	cs := convertAll([]map[string]any{
		vpaObject("b", "web", "Deployment", "Off"),
		vpaObject("a", "db", "StatefulSet", "Recreate"),
		vpaObject("a", "odd", "Rollout", "Off"),
	})
	var notes bytes.Buffer
	if n := reportNotes(&notes, cs); n != 1 {
		t.Errorf("%d failed, want 1", n)
	}
	wantNotes := []string{"a/db: spec.updatePolicy.updateMode: Recreate", "a/odd: not converted: spec.targetRef"}
	for _, w := range wantNotes {
		if !strings.Contains(notes.String(), w) {
			t.Errorf("notes lack %q:\n%s", w, notes.String())
		}
	}
	var objs []map[string]any
	for _, c := range cs {
		if c.err == nil {
			u, err := policyObject(c.policy)
			if err != nil {
				t.Fatal(err)
			}
			objs = append(objs, u)
		}
	}
	want := []string{"a/db InPlaceOrRecreate", "b/web Off"}
	for _, format := range []string{"yaml", "json"} {
		var out bytes.Buffer
		if err := writePolicies(&out, format, objs); err != nil {
			t.Fatal(err)
		}
		printed := out.String()
		if strings.Contains(printed, "status") || strings.Contains(printed, "creationTimestamp") {
			t.Errorf("%s: output has status or creationTimestamp:\n%s", format, printed)
		}
		var got []string
		read := func(p v1alpha1.SnugPolicy) {
			if p.Kind != "SnugPolicy" {
				t.Errorf("%s: kind %q in:\n%s", format, p.Kind, printed)
			}
			got = append(got, p.Namespace+"/"+p.Name+" "+string(p.Spec.UpdatePolicy.UpdateMode))
		}
		if format == "json" {
			var l struct{ Items []v1alpha1.SnugPolicy }
			if err := json.Unmarshal(out.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			for _, p := range l.Items {
				read(p)
			}
		} else {
			dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
			for {
				var p v1alpha1.SnugPolicy
				if err := dec.Decode(&p); err != nil {
					break
				}
				read(p)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: policies (-want +got):\n%s", format, diff)
		}
	}
}
