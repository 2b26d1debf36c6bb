package labcli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/lab/internal/experiment"
	"github.com/snug-dev/snug/lab/internal/lab"
	"github.com/snug-dev/snug/lab/internal/lab/helm"
)

// installOptions are the flags of snug-lab install and uninstall.
type installOptions struct {
	lab *lab.Options
	// agentArgs are the agent's extra flags (agent.extraArgs).
	agentArgs []string
	// timeout bounds the install and each wait in it.
	timeout time.Duration
}

func newInstallOptions() *installOptions {
	return &installOptions{lab: lab.NewOptions(), timeout: 3 * time.Minute}
}

func (o *installOptions) AddFlags(fs *pflag.FlagSet, install bool) {
	o.lab.AddFlags(fs)
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "how long helm and each wait may take")
	if install {
		fs.StringArrayVar(&o.agentArgs, "agent-arg", nil, "an extra flag of the agent (agent.extraArgs), e.g. --agent-arg=--cpu-half-life=10s; repeatable")
	}
}

// Validate reports every bad flag, before anything starts.
func (o *installOptions) Validate() error {
	errs := []error{o.lab.Validate()}
	if o.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout must be positive, got %v", o.timeout))
	}
	return errors.Join(errs...)
}

// logDir is where install and uninstall keep the chart they install and
// the pods' logs at uninstall.
func (o *installOptions) logDir() string { return filepath.Join(o.lab.Dir, "snug-install") }

// upClient is a client of the lab's API server, which answers: a lab that
// is not up is an error that says so.
func upClient(o *lab.Options) (*kubernetes.Clientset, error) {
	client, err := o.Client()
	if err != nil {
		return nil, err
	}
	if _, err := client.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("the lab's API server does not answer (is the lab up? snug-lab up): %w", err)
	}
	return client, nil
}

// newInstallCommands are snug-lab install and uninstall: snug on the lab
// the way a user installs it on a cluster, left running to play with.
func newInstallCommands(stdout io.Writer) []*cobra.Command {
	inst := newInstallOptions()
	install := &cobra.Command{
		Use:   "install",
		Short: "Install this build of snug on the lab, as the demo does, and leave it running",
		Long: `Install this build of snug on the lab that is up: snug-agent's and
snug-controller's images (from the binaries next to this one) are pushed to
the lab's registry and charts/snug is installed with helm upgrade --install
(release snug in snug-system): the agent a DaemonSet, the controller a
Deployment of two replicas. It returns once the agent is ready and a
controller leads, and leaves snug running; snug-lab uninstall removes it.
Running it again upgrades the release to this build.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := inst.Validate(); err != nil {
				return err
			}
			o := inst.lab
			client, err := upClient(o)
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			start := time.Now()
			fmt.Fprintf(stdout, "installing snug on the lab (Kubernetes %s): images to %s, then the chart\n", o.KubernetesVersion, o.Registry())
			s, err := installInLab(cmd.Context(), client, labInstall{lab: o, binDir: filepath.Dir(exe), agentArgs: inst.agentArgs,
				logDir: inst.logDir(), timeout: inst.timeout, out: stdout})
			if err != nil {
				if s != nil {
					err = errors.Join(err, s.Stop())
				}
				return err
			}
			fmt.Fprintf(stdout, "snug is installed (%.1fs): agent %s ready, controller %s leads\n\n", time.Since(start).Seconds(), s.AgentPod, s.ControllerPod)
			fmt.Fprintf(stdout, "  eval \"$(snug-lab env)\"\n  kubectl -n snug-system get pods\n  kubectl apply -f config/samples/    # SnugPolicies to start from\n  snug status -A\n  snug-lab uninstall                  # when done\n")
			return nil
		},
	}
	inst.AddFlags(install.Flags(), true)

	uo := newInstallOptions()
	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove what snug-lab install installed (helm uninstall; the pods' logs are kept)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := uo.Validate(); err != nil {
				return err
			}
			o := uo.lab
			client, err := upClient(o)
			if err != nil {
				return err
			}
			helmBin, err := helm.Ensure(cmd.Context(), o.CacheDir, helm.DefaultVersion, stdout)
			if err != nil {
				return err
			}
			err = experiment.UninstallSnug(cmd.Context(), client, experiment.InstallOptions{
				Helm: helmBin, Kubeconfig: o.Kubeconfig(), LogDir: uo.logDir(), Timeout: uo.timeout,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "snug uninstalled; its pods' logs are in %s\n", uo.logDir())
			return nil
		},
	}
	uo.AddFlags(uninstall.Flags(), false)
	return []*cobra.Command{install, uninstall}
}
