// Package kwok runs kwok (sigs.k8s.io/kwok) against the lab's API server,
// as the kubelets of Node objects labelled NodeLabel: for the scale bench
// (issue 29), where thousands of pods need kubelets and no machine could
// run them. kwok plays its own node stages (node-initialize from its fast
// set, node-heartbeat-with-lease) and pod deletion; the pods' start and
// the kubelet's part of an in-place resize are snug's own stages
// (stages.yaml), which kwok does not have: ready with container IDs and
// resources, admitted (allocatedResources, PodResizeInProgress), actuated
// about a second later, or deferred (PodResizePending) and retried.
//
// kwok is built from the Go module proxy into the cache like Kubernetes
// (lab.Module) and runs as a lab add-on process (lab.StartProcess),
// so snug-lab down stops it.
package kwok

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/snug-dev/snug/lab/internal/lab"
)

// Version is the kwok release built: the newest the Go module proxy
// serves.
const Version = "0.8.0"

// Process is kwok's add-on process name.
const Process = "kwok"

// NodeLabel (value "true") marks the nodes kwok plays; they also carry
// Taint, which the bench's pods tolerate, and no kubernetes.io/os label,
// so that no DaemonSet (snug's agent among them) lands on them.
const NodeLabel = "snug.dev/kwok"

// Taint keeps everything but the bench's pods off kwok's nodes.
var Taint = corev1.Taint{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}

// Toleration is what a pod needs to run on a kwok node.
var Toleration = corev1.Toleration{Key: Taint.Key, Operator: corev1.TolerationOpEqual, Value: Taint.Value, Effect: Taint.Effect}

// ResizeAnnotation on a pod fixes the outcome of its resizes on a kwok
// node: "admit" (always admitted and actuated) or "defer" (always
// Deferred); without it, 9 in 10 are admitted.
const ResizeAnnotation = "snug.dev/kwok-resize"

// kwok's own stages the bench plays, files inside its module.
var upstreamStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

//go:embed stages.yaml
var podStages string

// Module is kwok's build.
func Module() lab.Module {
	const m = "sigs.k8s.io/kwok"
	return lab.Module{
		CacheName: "kwok", Path: m, Version: Version,
		Packages: []string{m + "/cmd/kwok"},
		Files:    upstreamStages,
	}
}

// Stages returns kwok's configuration: its node and pod-deletion stages
// (from the built module in cacheDir) and snug's pod stages, as one
// multi-document YAML.
func Stages(cacheDir string) (string, error) {
	m := Module()
	docs := []string{}
	for _, f := range upstreamStages {
		b, err := os.ReadFile(m.File(cacheDir, f))
		if err != nil {
			return "", fmt.Errorf("reading kwok's stage %s (is kwok v%s built?): %w", filepath.Base(f), Version, err)
		}
		docs = append(docs, strings.TrimSpace(string(b)))
	}
	docs = append(docs, strings.TrimSpace(podStages))
	return strings.Join(docs, "\n---\n") + "\n", nil
}

// Up builds kwok if needed and starts it against the lab's API server,
// managing the nodes labelled NodeLabel. It is an error if kwok runs
// already.
func Up(ctx context.Context, o *lab.Options, log io.Writer) error {
	if _, running := lab.ProcessRunning(o, Process); running {
		return fmt.Errorf("kwok runs already; run 'snug-lab down' first")
	}
	if err := Module().Ensure(ctx, o.CacheDir, log); err != nil {
		return err
	}
	stages, err := Stages(o.CacheDir)
	if err != nil {
		return err
	}
	dir := filepath.Join(o.Dir, "kwok")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	config := filepath.Join(dir, "stages.yaml")
	if err := os.WriteFile(config, []byte(stages), 0o644); err != nil {
		return err
	}
	// kwok reads $KWOK_WORKDIR/kwok.yaml (default ~/.kwok) before
	// --config: its own directory keeps anyone's stages out.
	argv := []string{
		"env", "KWOK_WORKDIR=" + dir,
		filepath.Join(Module().BinDir(o.CacheDir), "kwok"),
		"--kubeconfig=" + o.Kubeconfig(),
		"--manage-nodes-with-label-selector=" + NodeLabel + "=true",
		"--config=" + config,
		"--node-lease-duration-seconds=40",
		"--cidr=10.240.0.0/12",
	}
	if _, err := lab.StartProcess(o, Process, argv); err != nil {
		return err
	}
	fmt.Fprintf(log, "kwok v%s started (log: %s)\n", Version, lab.LogFile(o, Process))
	return nil
}

// Down stops kwok, if it runs.
func Down(o *lab.Options) error { return lab.StopProcess(o, Process, 10*time.Second) }

// Node returns a kwok node named name with the given allocatable cpu,
// memory and pods (the status kwok's node-initialize stage keeps), the
// NodeLabel and the Taint. Create it; kwok makes it Ready.
func Node(name, cpu, memory string, pods int) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{NodeLabel: "true", corev1.LabelHostname: name, "type": "kwok"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{Taint}},
		Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc.DeepCopy()},
	}
}
