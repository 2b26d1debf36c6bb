package labcli

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/lab/internal/lab"
)

// requestTimeout bounds each request to the API server. Watches end with
// it too; the code that watches starts them again.
const requestTimeout = 30 * time.Second

// labCgroupRoot is where the lab's node, this machine, mounts its cgroups.
const labCgroupRoot = "/sys/fs/cgroup"

// workNode is where the demo's pods, and the agent it reads, run: with
// --v2-node the cgroup-v2 node (its taint tolerated, its cgroups read from
// the copy the guest keeps, lab.Options.V2CgroupRoot), else the lab's node.
func workNode(o *lab.Options) (node, cgroupRoot string, tolerations []corev1.Toleration) {
	if !o.WithV2Node {
		return o.NodeName, labCgroupRoot, nil
	}
	return o.V2.Name, o.V2CgroupRoot(), lab.V2Tolerations()
}

func workNodeName(o *lab.Options) string { n, _, _ := workNode(o); return n }
