package labcli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	chart "github.com/snug-dev/snug/charts/snug"
	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/lab/helm"
)

// labInstall says how the demo and the benches install snug on the lab.
type labInstall struct {
	lab *lab.Options
	// binDir holds the static snug-agent and snug-controller that become
	// the images (make build's bin/).
	binDir string
	// agentArgs are the agent's extra flags.
	agentArgs []string
	// logDir receives the pods' logs when snug is uninstalled.
	logDir  string
	timeout time.Duration
	// out receives what is done, step by step.
	out io.Writer
}

// installInLab does what a user does on a cluster, on the lab: builds the
// images of this build and pushes them to the lab's registry, then installs
// the chart this binary was built with (helm upgrade --install). Stop on
// the result uninstalls it.
func installInLab(ctx context.Context, client kubernetes.Interface, li labInstall) (*experiment.Snug, error) {
	helmBin, err := helm.Ensure(ctx, li.lab.CacheDir, helm.DefaultVersion, li.out)
	if err != nil {
		return nil, err
	}
	builts, err := lab.PushImages(ctx, li.lab, li.binDir)
	if err != nil {
		return nil, err
	}
	var tag string
	for _, b := range builts {
		fmt.Fprintf(li.out, "   pushed %s (%s, %.1f MiB)\n", b.Ref, b.Digest, float64(b.Size)/(1<<20))
		_, tag, _ = strings.Cut(strings.TrimPrefix(b.Ref, li.lab.Registry()), ":")
	}
	chartDir := filepath.Join(li.logDir, "chart")
	if err := chart.WriteTo(chartDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(li.logDir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(li.out, "   helm upgrade --install snug charts/snug -n snug-system --create-namespace --set image.registry=%s --set image.tag=%s\n", li.lab.Registry(), tag)
	return experiment.InstallSnug(ctx, client, experiment.InstallOptions{
		Helm: helmBin, Chart: chartDir, Kubeconfig: li.lab.Kubeconfig(),
		Registry: li.lab.Registry(), Tag: tag, Node: workNodeName(li.lab),
		AgentArgs: li.agentArgs, LogDir: li.logDir, Timeout: li.timeout,
		// The lab's installs are throwaway: uninstall takes the CRD too,
		// so that the next install (or TestHelm) starts from none.
		Set: []string{"crds.keep=false"},
	})
}
