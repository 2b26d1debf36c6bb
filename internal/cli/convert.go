package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/snug-dev/snug/api/v1alpha1"
	"github.com/snug-dev/snug/internal/convert"
)

const convertVPALong = `Read VerticalPodAutoscaler objects (autoscaling.k8s.io/v1) and write the
equivalent SnugPolicies: same name, namespace, labels and targetRef, with
updateMode, minReplicas and each containerPolicy's mode, controlledResources,
controlledValues, minAllowed and maxAllowed carried over. Every VPA field
that does not map as it is is listed on stderr, with what snug does instead.
docs/migrating-from-vpa.md has the whole mapping.

Without --apply the policies are printed (-o yaml, the default, or json: a
v1 List) for review or kubectl apply. With --apply they are server-side
applied (field manager snug-convert): all of them first as a server dry
run, and only if every one passes, for real; on any error nothing is
changed. A VPA that cannot be converted (no targetRef, or a kind snug does
not size) is reported and makes the command fail; with --apply nothing is
then applied.

Leave the VPA in updateMode Off while its SnugPolicy acts, or delete it: a
SnugPolicy whose pods a VPA that is not Off also covers yields to it (its
condition VPAConflict says so) and changes no pod.`

// convertFieldManager is the field manager of --apply.
const convertFieldManager = "snug-convert"

// convertOptions configures `snug convert vpa`.
type convertOptions struct {
	kube           kubeOptions
	allNamespaces  bool
	output         string
	apply          bool
	forceConflicts bool
}

func (o *convertOptions) AddFlags(fs *pflag.FlagSet) {
	o.kube.AddFlags(fs)
	fs.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "VerticalPodAutoscalers of every namespace")
	fs.StringVarP(&o.output, "output", "o", "", "output format without --apply: yaml (default) or json")
	fs.BoolVar(&o.apply, "apply", false, "server-side apply the policies (after a server dry run of all of them) instead of printing them")
	fs.BoolVar(&o.forceConflicts, "force-conflicts", false, "with --apply, take over fields another manager set on an existing SnugPolicy")
}

func (o *convertOptions) Validate() error {
	var errs []error
	switch {
	case o.apply && o.output != "":
		errs = append(errs, errors.New("-o prints the policies instead of applying them; drop it or --apply"))
	case o.output == "", o.output == "yaml", o.output == "json":
	default:
		errs = append(errs, fmt.Errorf("-o %q: use yaml or json", o.output))
	}
	if o.forceConflicts && !o.apply {
		errs = append(errs, errors.New("--force-conflicts needs --apply"))
	}
	if o.allNamespaces && o.kube.namespaceFlag() != "" {
		errs = append(errs, errors.New("-A and -n exclude each other"))
	}
	return errors.Join(errs...)
}

func newConvertCommand(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert",
		Short: "Convert other autoscalers' objects to SnugPolicies",
	}
	o := &convertOptions{}
	vpa := &cobra.Command{
		Use:   "vpa [-n NS | -A] [-o yaml|json] [--apply]",
		Short: "Write the SnugPolicies equivalent to VerticalPodAutoscalers, listing what does not map",
		Long:  convertVPALong,
		Example: `  snug convert vpa -A > policies.yaml
  snug convert vpa -n shop --apply`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return runConvertVPA(cmd.Context(), o, stdout, stderr)
		},
	}
	o.AddFlags(vpa.Flags())
	cmd.AddCommand(vpa)
	return cmd
}

// converted is one VPA's conversion.
type converted struct {
	key    string // namespace/name
	policy *v1alpha1.SnugPolicy
	notes  []convert.Note
	err    error
}

// convertAll converts VPA objects, sorted by namespace and name.
func convertAll(items []map[string]any) []converted {
	out := make([]converted, 0, len(items))
	for _, obj := range items {
		meta, _ := obj["metadata"].(map[string]any)
		ns, _ := meta["namespace"].(string)
		name, _ := meta["name"].(string)
		p, notes, err := convert.Object(obj)
		out = append(out, converted{key: ns + "/" + name, policy: p, notes: notes, err: err})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// policyObject is a policy as printed and applied: no status, no empty
// creationTimestamp.
func policyObject(p *v1alpha1.SnugPolicy) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		return nil, fmt.Errorf("encoding policy %s/%s: %w", p.Namespace, p.Name, err)
	}
	delete(u, "status")
	if m, ok := u["metadata"].(map[string]any); ok {
		delete(m, "creationTimestamp")
	}
	return u, nil
}

// writePolicies prints the policies as YAML documents or as a JSON List.
func writePolicies(w io.Writer, format string, objs []map[string]any) error {
	if format == "json" {
		items := make([]any, len(objs))
		for i := range objs {
			items[i] = objs[i]
		}
		b, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	for i, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// reportNotes lists each conversion's notes and errors on w, and returns
// how many VPAs could not be converted.
func reportNotes(w io.Writer, cs []converted) int {
	failed := 0
	for _, c := range cs {
		if c.err != nil {
			failed++
			fmt.Fprintf(w, "%s: not converted: %v\n", c.key, c.err)
			continue
		}
		for _, n := range c.notes {
			fmt.Fprintf(w, "%s: %s\n", c.key, n)
		}
	}
	return failed
}

func runConvertVPA(ctx context.Context, o *convertOptions, stdout, stderr io.Writer) error {
	cl, err := o.kube.connect()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cl.cfg)
	if err != nil {
		return fmt.Errorf("creating a client for %s: %w", cl.server, err)
	}
	ns := cl.namespace
	if o.allNamespaces {
		ns = ""
	}
	list, err := dyn.Resource(convert.VPAResource).Namespace(ns).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the cluster serves no %s: is VPA's CRD installed?", convert.VPAResource.GroupResource())
	}
	if err != nil {
		return cl.explain(fmt.Errorf("listing VerticalPodAutoscalers: %w", err))
	}
	items := make([]map[string]any, len(list.Items))
	for i := range list.Items {
		items[i] = list.Items[i].Object
	}
	cs := convertAll(items)
	failed := reportNotes(stderr, cs)
	if len(cs) == 0 {
		where := "namespace " + ns
		if ns == "" {
			where = "any namespace"
		}
		fmt.Fprintf(stderr, "no VerticalPodAutoscalers in %s\n", where)
		return nil
	}
	var objs []map[string]any
	for _, c := range cs {
		if c.err != nil {
			continue
		}
		u, err := policyObject(c.policy)
		if err != nil {
			return err
		}
		objs = append(objs, u)
	}
	if failed > 0 && o.apply {
		return fmt.Errorf("%d of %d VerticalPodAutoscalers cannot be converted; nothing applied", failed, len(cs))
	}
	if !o.apply {
		if err := writePolicies(stdout, o.output, objs); err != nil {
			return fmt.Errorf("writing policies: %w", err)
		}
		if failed > 0 {
			return fmt.Errorf("%d of %d VerticalPodAutoscalers cannot be converted", failed, len(cs))
		}
		return nil
	}
	return applyPolicies(ctx, dyn, objs, o.forceConflicts, stdout)
}

// applyPolicies server-side applies objs: first all of them as a dry run,
// then, if none failed, for real.
func applyPolicies(ctx context.Context, dyn dynamic.Interface, objs []map[string]any, force bool, stdout io.Writer) error {
	apply := func(o map[string]any, dryRun bool) error {
		meta := o["metadata"].(map[string]any)
		ns, name := meta["namespace"].(string), meta["name"].(string)
		b, err := json.Marshal(o)
		if err != nil {
			return err
		}
		opts := metav1.PatchOptions{FieldManager: convertFieldManager, Force: ptr.To(force)}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err = dyn.Resource(v1alpha1.SnugPolicyResource).Namespace(ns).Patch(ctx, name, types.ApplyPatchType, b, opts)
		if err != nil {
			return fmt.Errorf("snugpolicy %s/%s: %w", ns, name, err)
		}
		return nil
	}
	var errs []error
	for _, o := range objs {
		if err := apply(o, true); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		msg := fmt.Sprintf("%d of %d policies refused by the server's dry run; nothing applied", len(errs), len(objs))
		if anyConflict(errs) {
			msg += " (a conflict: another manager set those fields; --force-conflicts takes them over)"
		}
		return fmt.Errorf("%s:\n  %w", msg, joinLines(errs))
	}
	for i, o := range objs {
		if err := apply(o, false); err != nil {
			return fmt.Errorf("%w (%d of %d policies applied before it)", err, i, len(objs))
		}
		meta := o["metadata"].(map[string]any)
		fmt.Fprintf(stdout, "snugpolicy %s/%s applied\n", meta["namespace"], meta["name"])
	}
	return nil
}

func anyConflict(errs []error) bool {
	for _, err := range errs {
		if apierrors.IsConflict(err) {
			return true
		}
	}
	return false
}

// joinLines joins errors one an indented line.
func joinLines(errs []error) error {
	s := make([]string, len(errs))
	for i, err := range errs {
		s[i] = err.Error()
	}
	return errors.New(strings.Join(s, "\n  "))
}
