package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/snug-dev/snug/lab/internal/lab/pki"
)

// The sandbox image containerd runs for every pod; the lab imports an image
// of that name (snug-load in pause mode) since no public registry can be
// reached.
const sandboxImage = "registry.k8s.io/pause:3.10"

// registryPort is where the lab's registry listens, on the node's address.
const registryPort = "5000"

// registryHostsDir is containerd's registry config_path: one directory per
// registry host, each with a hosts.toml.
func registryHostsDir(o *Options) string { return o.path("containerd", "certs.d") }

func containerdSock(o *Options) string { return o.path("run", "containerd", "containerd.sock") }

// nodeRuntime is what differs between the lab's nodes in the files that
// containerd, the CNI plugins, the kubelet and kube-proxy read: paths,
// addresses, the cgroup driver and the node's identity.
type nodeRuntime struct {
	name, ip, podCIDR string
	// systemd selects the systemd cgroup driver (the cgroup-v2 node) over
	// cgroupfs (the first node: this machine has no systemd).
	systemd bool
	// restrictOOMScoreAdj: see containerdConfig.
	restrictOOMScoreAdj                                            bool
	containerdRoot, containerdState, containerdSock, containerdOpt string
	cniConfDir, ipamDir, registryHostsDir, podLogsDir              string
	kubeletCert, kubeletKey, caCert, kubeProxyKubeconfig           string
	// taints are registerWithTaints, as key=value:Effect.
	taints []corev1.Taint
}

// hostRuntime is the first node's: processes on this machine, in the lab's
// network namespace, with their state under the lab directory.
func hostRuntime(o *Options, p *pki.Set) nodeRuntime {
	return nodeRuntime{
		name: o.NodeName, ip: o.NodeIP, podCIDR: o.PodCIDR, restrictOOMScoreAdj: true,
		containerdRoot: o.path("containerd", "root"), containerdState: o.path("run", "containerd", "state"),
		containerdSock: containerdSock(o), containerdOpt: o.path("containerd", "opt"),
		cniConfDir: o.path("cni", "net.d"), ipamDir: o.path("cni", "ipam"),
		registryHostsDir: registryHostsDir(o), podLogsDir: o.path("pod-logs"),
		kubeletCert: p.KubeletCert, kubeletKey: p.KubeletKey, caCert: p.CACert,
		kubeProxyKubeconfig: p.KubeProxyKubeconfig,
	}
}

// containerdConfig is containerd 1.6's CRI configuration. On the first node
// restrict_oom_score_adj keeps containerd from asking runc for an
// oom_score_adj below its own: this machine has no CAP_SYS_RESOURCE, and
// the kubelet's -998/-997 would make runc fail ("can't get final child's
// PID from pipe: EOF"). The cgroup-v2 node is a kernel of its own, where
// root has every capability.
func containerdConfig(r nodeRuntime) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
oom_score = 0

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = %t
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = %t
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`, r.containerdRoot, r.containerdState, r.containerdSock,
		r.containerdSock+".ttrpc", r.containerdOpt, sandboxImage, r.restrictOOMScoreAdj, r.systemd,
		r.cniConfDir, r.registryHostsDir)
}

// registryHosts is containerd's hosts.toml for the lab's registry: plain
// HTTP, pulls only.
func registryHosts(o *Options) string {
	return fmt.Sprintf(`server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`, o.Registry())
}

// registryConfig is the configuration of distribution's registry (Debian's
// docker-registry 2.8): filesystem storage in the lab directory, deletes
// allowed (so a test can remove what it pushed), plain HTTP on the node's
// address with a fixed upload secret (one registry, nothing to share it with), and no upload purging, which would only log on a lab that lives
// minutes.
func registryConfig(o *Options) string {
	return fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
  secret: snug-lab
health:
  storagedriver:
    enabled: false
`, o.path("registry", "data"), o.Registry())
}

// kubeProxyConfig is the KubeProxyConfiguration: iptables mode in the lab's
// namespace, every port on the node's address. conntrack maxPerCore 0 and
// the zero timeouts leave the conntrack sysctls alone: nf_conntrack_max is
// read-only outside the initial namespace, and the others need not change.
// localhostNodePorts false keeps it from setting route_localnet.
func kubeProxyConfig(r nodeRuntime) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
mode: iptables
clusterCIDR: %s
bindAddress: %s
healthzBindAddress: %s:10256
metricsBindAddress: %s:10249
nodePortAddresses: ["%s/32"]
iptables:
  localhostNodePorts: false
  syncPeriod: 30s
  minSyncPeriod: 0s
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, r.kubeProxyKubeconfig, r.name, r.podCIDR, r.ip, r.ip, r.ip, r.ip)
}

// cniConfig is a bridge network for the node's pods (on the first node it
// lives inside the lab namespace).
func cniConfig(r nodeRuntime) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "snug-lab",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "snugbr0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
`, r.ipamDir, r.podCIDR)
}

// kubeletConfig is the KubeletConfiguration. The first node runs the
// cgroupfs driver (there is no systemd) with failCgroupV1 false (this
// machine's cgroups are hybrid, v1 for cpu and memory); the second the
// systemd driver on unified cgroup v2. No reserved resources, so
// allocatable is the machine.
func kubeletConfig(r nodeRuntime) string {
	driver := "cgroupfs"
	if r.systemd {
		driver = "systemd"
	}
	var taints strings.Builder
	if len(r.taints) > 0 {
		taints.WriteString("registerWithTaints:\n")
		for _, t := range r.taints {
			fmt.Fprintf(&taints, "- key: %s\n  value: %q\n  effect: %s\n", t.Key, t.Value, t.Effect)
		}
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: %s
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
imageServiceEndpoint: unix://%s
podLogsDir: %s
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: %s
healthzPort: 10248
tlsCertFile: %s
tlsPrivateKeyFile: %s
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
protectKernelDefaults: false
makeIPTablesUtilChains: false
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%%"
  imagefs.available: "1%%"
nodeStatusUpdateFrequency: 4s
%s`, driver, r.containerdSock, r.containerdSock, r.podLogsDir, r.ip, r.ip,
		r.kubeletCert, r.kubeletKey, r.caCert, taints.String())
}

// writeConfigs writes every generated config file of the lab.
func writeConfigs(o *Options, p *pki.Set) error {
	r := hostRuntime(o, p)
	files := map[string]string{
		o.path("containerd", "config.toml"):                            containerdConfig(r),
		o.path("cni", "net.d", "10-snug-lab.conflist"):                 cniConfig(r),
		o.path("kubelet", "config.yaml"):                               kubeletConfig(r),
		o.path("kube-proxy", "config.yaml"):                            kubeProxyConfig(r),
		o.path("registry", "config.yml"):                               registryConfig(o),
		filepath.Join(registryHostsDir(o), o.Registry(), "hosts.toml"): registryHosts(o),
		o.path("audit-policy.yaml"):                                    auditPolicy,
	}
	return writeFiles(files)
}

// auditPolicy records who deleted or evicted a pod, and nothing else: a
// test's pod that vanished (TestChaos's workload once did, during a helm
// upgrade, with nothing in any component's log to say why) is then
// explained by logs/audit.log, which names the user (each of the
// controller-manager's controllers has its own service account) and the
// user agent. Metadata only, so the file stays small.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["delete", "deletecollection"]
  resources: [{group: "", resources: ["pods"]}]
- level: Metadata
  verbs: ["create"]
  resources: [{group: "", resources: ["pods/eviction"]}]
- level: None
`

// writeFiles writes each path's content (0644), making its directory.
func writeFiles(files map[string]string) error {
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// component is one process of the lab, in start order.
type component struct {
	name string
	argv []string
}

func components(o *Options, p *pki.Set) []component {
	bin := func(name string) string { return filepath.Join(o.BinDir(), name) }
	return []component{
		{"etcd", []string{o.EtcdPath(),
			"--name=snug-lab",
			"--data-dir=" + o.path("etcd"),
			"--listen-client-urls=http://127.0.0.1:2379",
			"--advertise-client-urls=http://127.0.0.1:2379",
			"--listen-peer-urls=http://127.0.0.1:2380",
			"--initial-advertise-peer-urls=http://127.0.0.1:2380",
			"--initial-cluster=snug-lab=http://127.0.0.1:2380",
			"--listen-metrics-urls=http://" + o.NodeIP + ":2381",
		}},
		{"kube-apiserver", []string{bin("kube-apiserver"),
			"--etcd-servers=http://127.0.0.1:2379",
			"--bind-address=0.0.0.0",
			"--secure-port=6443",
			"--advertise-address=" + o.NodeIP,
			"--tls-cert-file=" + p.APIServerCert,
			"--tls-private-key-file=" + p.APIServerKey,
			"--client-ca-file=" + p.CACert,
			"--service-account-key-file=" + p.SAPub,
			"--service-account-signing-key-file=" + p.SAKey,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-cluster-ip-range=" + o.ServiceCIDR,
			"--authorization-mode=Node,RBAC",
			"--kubelet-client-certificate=" + p.KubeletClientCert,
			"--kubelet-client-key=" + p.KubeletClientKey,
			"--kubelet-preferred-address-types=InternalIP",
			// The aggregation layer (metrics.k8s.io for metrics-server): the
			// front proxy's identity, and routing to a service's endpoints
			// rather than its ClusterIP, so that add-ons work before (and
			// without) kube-proxy.
			"--requestheader-client-ca-file=" + p.CACert,
			"--requestheader-allowed-names=front-proxy-client",
			"--requestheader-username-headers=X-Remote-User",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--proxy-client-cert-file=" + p.FrontProxyClientCert,
			"--proxy-client-key-file=" + p.FrontProxyClientKey,
			"--enable-aggregator-routing=true",
			"--allow-privileged=true",
			"--profiling=false",
			"--audit-policy-file=" + o.path("audit-policy.yaml"),
			"--audit-log-path=" + o.path("logs", "audit.log"),
			"--audit-log-maxsize=20",
			"--audit-log-maxbackup=2",
		}},
		{"kube-controller-manager", []string{bin("kube-controller-manager"),
			"--kubeconfig=" + p.ControllerManagerKubeconfig,
			"--authentication-kubeconfig=" + p.ControllerManagerKubeconfig,
			"--authorization-kubeconfig=" + p.ControllerManagerKubeconfig,
			"--bind-address=" + o.NodeIP,
			"--leader-elect=false",
			"--use-service-account-credentials=true",
			"--service-account-private-key-file=" + p.SAKey,
			"--root-ca-file=" + p.CACert,
			"--cluster-name=snug-lab",
		}},
		{"kube-scheduler", []string{bin("kube-scheduler"),
			"--kubeconfig=" + p.SchedulerKubeconfig,
			"--authentication-kubeconfig=" + p.SchedulerKubeconfig,
			"--authorization-kubeconfig=" + p.SchedulerKubeconfig,
			"--bind-address=" + o.NodeIP,
			"--leader-elect=false",
		}},
		{"registry", []string{"docker-registry", "serve", o.path("registry", "config.yml")}},
		{"containerd", []string{"containerd", "--config=" + o.path("containerd", "config.toml")}},
		{"kubelet", []string{bin("kubelet"),
			"--config=" + o.path("kubelet", "config.yaml"),
			"--kubeconfig=" + p.KubeletKubeconfig,
			"--root-dir=" + o.path("kubelet", "root"),
			"--node-ip=" + o.NodeIP,
			"--hostname-override=" + o.NodeName,
		}},
		{"kube-proxy", []string{bin("kube-proxy"), "--config=" + o.path("kube-proxy", "config.yaml")}},
	}
}
