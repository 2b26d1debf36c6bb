package labcli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/snug-dev/snug/internal/cli"
	"github.com/snug-dev/snug/lab/internal/lab"
)

// newLabCommands are the lab's commands (up, down, status, kubeconfig, env,
// kubectl, build, vpa): a real single-node Kubernetes on this machine (etcd,
// control plane, containerd, kubelet). Each carries the lab's flags.
func newLabCommands(stdout, stderr io.Writer) []*cobra.Command {
	opts := lab.NewOptions()

	up := &cobra.Command{
		Use:   "up",
		Short: "Build (once) and start the lab; waits until the node is Ready",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			err := lab.Up(cmd.Context(), opts, stdout)
			if errors.Is(err, lab.ErrAlreadyUp) {
				if opts.WithV2Node && !lab.V2Running(opts) {
					return lab.AddV2Node(cmd.Context(), opts, stdout)
				}
				fmt.Fprintf(stdout, "the lab is already up; nothing changed\n  export KUBECONFIG=%s\n", opts.Kubeconfig())
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "took %.1fs\n", time.Since(start).Seconds())
			return nil
		},
	}
	var purge bool
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop everything the lab started and remove its namespace and mounts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lab.Down(cmd.Context(), opts, stdout); err != nil {
				return err
			}
			if purge {
				if err := lab.Purge(opts); err != nil {
					return err
				}
			}
			fmt.Fprintln(stdout, "lab down")
			return nil
		},
	}
	down.Flags().BoolVar(&purge, "purge", false, "also delete the lab directory (logs, certificates)")
	status := &cobra.Command{
		Use:   "status",
		Short: "Show each lab component, its PID and health",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "COMPONENT\tPID\tRUNNING\tHEALTHY\tRSS\tDETAIL")
			allOK := true
			var totalRSS uint64
			var v2 string
			for _, h := range lab.Status(cmd.Context(), opts) {
				if h.Name == "v2-node" {
					v2 = h.Detail
				}
				pid, rss := "-", "-"
				if h.PID > 0 {
					pid = fmt.Sprint(h.PID)
				}
				if h.RSSBytes > 0 {
					rss = fmt.Sprintf("%dMi", h.RSSBytes>>20)
					totalRSS += h.RSSBytes
				}
				allOK = allOK && h.Healthy
				fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%s\t%s\n", h.Name, pid, h.Running, h.Healthy, rss, truncate(h.Detail, 60))
			}
			if totalRSS > 0 {
				fmt.Fprintf(tw, "total\t\t\t\t%dMi\t(resident memory of the components, without pods)\n", totalRSS>>20)
			}
			tw.Flush()
			if v2 != "" {
				// Its detail is longer than the table's column.
				fmt.Fprintf(stdout, "v2-node: %s\n", v2)
			}
			if !allOK {
				return cli.WithExitCode(3, errors.New("the lab is not (fully) up"))
			}
			return nil
		},
	}
	kubeconfig := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the path of the lab's admin kubeconfig",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(stdout, opts.Kubeconfig())
			return nil
		},
	}
	env := &cobra.Command{
		Use:   "env",
		Short: "Print shell exports for kubectl against the lab: eval \"$(snug-lab env)\"",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(stdout, "export KUBECONFIG=%s\nexport PATH=%s:$PATH\n", opts.Kubeconfig(), opts.BinDir())
			return nil
		},
	}
	kubectl := &cobra.Command{
		Use:                "kubectl [ARGS...]",
		Short:              "Run the lab's kubectl against the lab",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			c := exec.CommandContext(cmd.Context(), opts.BinDir()+"/kubectl", append([]string{"--kubeconfig", opts.Kubeconfig()}, args...)...)
			c.Stdin, c.Stdout, c.Stderr = os.Stdin, stdout, stderr
			if err := c.Run(); err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return cli.WithExitCode(ee.ExitCode(), fmt.Errorf("kubectl: %w", err))
				}
				return err
			}
			return nil
		},
	}
	build := &cobra.Command{
		Use:   "build",
		Short: "Build (or find cached) the Kubernetes binaries of --kubernetes-version (with --v2-node also the cgroup-v2 node's kernel and root filesystem)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lab.EnsureBinaries(cmd.Context(), opts, stdout); err != nil {
				return err
			}
			fmt.Fprintln(stdout, opts.BinDir())
			if opts.WithV2Node {
				if err := lab.EnsureV2Node(cmd.Context(), opts, stdout); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "%s\n%s\n", opts.KernelPath(), opts.RootfsPath())
			}
			return nil
		},
	}
	v2 := &cobra.Command{
		Use:   "v2-node",
		Short: "Add the cgroup-v2 node (User-Mode Linux, systemd cgroup driver) to the running lab, reboot it, or remove it",
	}
	v2.AddCommand(&cobra.Command{
		Use:   "add",
		Short: "Start the cgroup-v2 node and join it to the running lab; waits until it is Ready",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lab.AddV2Node(cmd.Context(), opts, stdout)
		},
	}, &cobra.Command{
		Use:   "reboot",
		Short: "Start the cgroup-v2 node's guest afresh (a hung one too: 'snug-lab status' says when its heartbeat stopped); its pods are deleted, the Node stays",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return lab.RebootV2Node(cmd.Context(), opts, stdout)
		},
	}, &cobra.Command{
		Use:   "remove",
		Short: "Delete the cgroup-v2 node and its pods, stop its guest and remove its network",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lab.RemoveV2Node(cmd.Context(), opts, stdout); err != nil {
				return err
			}
			fmt.Fprintln(stdout, "cgroup-v2 node removed")
			return nil
		},
	})
	cmds := []*cobra.Command{up, down, status, kubeconfig, env, kubectl, build, v2}
	for _, c := range cmds {
		opts.AddFlags(c.PersistentFlags())
		c.PersistentPreRunE = func(*cobra.Command, []string) error { return opts.Validate() }
	}
	return append(cmds, newLabVPACommand(opts, stdout), newLabPrometheusCommand(opts, stdout))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
