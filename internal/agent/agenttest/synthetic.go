package agenttest

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// synthetic holds one container's cgroup files per version, copied from
// internal/cgroup's fixtures (v1 captured on the lab, v2 written from the
// kernel's documented formats), so generated trees cost what real files of
// real length cost to parse.
//
//go:embed synthetic
var synthetic embed.FS

// WriteSyntheticNode writes a cgroup tree under root that looks like a node
// with n Burstable single-container pods (cgroupfs driver, containerd
// naming), in layout "v1" (cpu, cpuacct and memory mounted separately) or
// "v2" (unified), and returns the pods as a watch would deliver them, ready
// for Agent.UpsertPod. It is for benchmarks and tests that need no cluster.
func WriteSyntheticNode(root, layout string, n int) ([]*corev1.Pod, error) {
	var files map[string][]byte
	switch layout {
	case "v1", "v2":
		var err error
		if files, err = syntheticFiles(layout); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("writing synthetic node: unknown layout %q (want v1 or v2)", layout)
	}
	if layout == "v2" {
		if err := writeFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory hugetlb pids\n")); err != nil {
			return nil, err
		}
	}
	pods := SyntheticPods(n)
	for _, pod := range pods {
		id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
		rel := filepath.Join("kubepods", "burstable", "pod"+string(pod.UID), id)
		for name, data := range files {
			var dir string
			switch {
			case layout == "v2":
				dir = filepath.Join(root, rel)
			case strings.HasPrefix(name, "cpuacct."):
				dir = filepath.Join(root, "cpuacct", rel)
			case strings.HasPrefix(name, "cpu."):
				dir = filepath.Join(root, "cpu", rel)
			default:
				dir = filepath.Join(root, "memory", rel)
			}
			if err := writeFile(filepath.Join(dir, name), data); err != nil {
				return nil, err
			}
		}
	}
	return pods, nil
}

// SyntheticPods returns n running Burstable single-container pods
// ("bench/pod-000", ...; container "app") on node "synthetic", as a
// watch would deliver them: the pods of WriteSyntheticNode, for an Agent
// whose Config.Sampler stands in for the cgroup files.
func SyntheticPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, n)
	for i := range n {
		uid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		id := fmt.Sprintf("%064x", i+1)
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("pod-%03d", i), UID: types.UID(uid)},
			Spec:       corev1.PodSpec{NodeName: "synthetic", Containers: []corev1.Container{{Name: "app"}}},
			Status: corev1.PodStatus{
				Phase:    corev1.PodRunning,
				QOSClass: corev1.PodQOSBurstable,
				ContainerStatuses: []corev1.ContainerStatus{{
					Name: "app", ContainerID: "containerd://" + id,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				}},
			},
		})
	}
	return pods
}

func syntheticFiles(layout string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(synthetic, path.Join("synthetic", layout), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := synthetic.ReadFile(p)
		files[path.Base(p)] = b
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading synthetic %s files: %w", layout, err)
	}
	return files, nil
}

func writeFile(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("writing synthetic node: %w", err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return fmt.Errorf("writing synthetic node: %w", err)
	}
	return nil
}
