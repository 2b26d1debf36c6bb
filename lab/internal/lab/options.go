package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Versions the lab knows how to build; the first is the default.
var Versions = []string{"1.35.4", "1.36.3", "1.37.2"}

// DefaultVersion is the Kubernetes version the lab runs unless told otherwise:
// the one the field report measured.
const DefaultVersion = "1.35.4"

// Options configures a lab. The zero value is not usable; start from
// NewOptions.
type Options struct {
	// Dir holds everything of one lab: PKI, configs, data, logs and PIDs.
	Dir string
	// KubernetesVersion is the version of every Kubernetes binary, e.g. 1.35.4.
	KubernetesVersion string
	// CacheDir keeps built binaries between runs (per version).
	CacheDir string
	// LoadBinary is the static snug-load binary shipped in the lab image.
	// Empty means "snug-load next to this executable".
	LoadBinary string
	// NetNS is the name of the network namespace the lab creates.
	NetNS string
	// HostIP and NodeIP are the two ends of the veth pair (a /30): HostIP
	// stays in the root namespace, NodeIP is the node's InternalIP.
	HostIP, NodeIP string
	// PodCIDR and ServiceCIDR are the pod and service ranges; both are only
	// routed inside the lab's namespace.
	PodCIDR, ServiceCIDR string
	// NodeName is the Kubernetes node name.
	NodeName string
	// ReadyTimeout bounds the wait for the node to become Ready.
	ReadyTimeout time.Duration
	// InstallPackages lets up run apt-get for missing Debian packages.
	InstallPackages bool
	// WithV2Node makes up start the cgroup-v2 node as well (node2.go).
	WithV2Node bool
	// V2 configures that node.
	V2 V2Node
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	cache := os.Getenv("SNUG_CACHE_DIR")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			home = "/root"
		}
		cache = filepath.Join(home, ".cache", "snug")
	}
	return &Options{
		Dir:               "/var/lib/snug-lab",
		KubernetesVersion: DefaultVersion,
		CacheDir:          cache,
		NetNS:             "snuglab",
		HostIP:            "10.213.0.1",
		NodeIP:            "10.213.0.2",
		PodCIDR:           "10.214.0.0/24",
		ServiceCIDR:       "10.215.0.0/24",
		NodeName:          "snug-lab",
		ReadyTimeout:      3 * time.Minute,
		InstallPackages:   true,
		V2:                defaultV2Node(),
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Dir, "dir", o.Dir, "directory holding the lab's state, configs, data and logs")
	fs.StringVar(&o.KubernetesVersion, "kubernetes-version", o.KubernetesVersion, fmt.Sprintf("Kubernetes version to build and run (one of %v)", Versions))
	fs.StringVar(&o.CacheDir, "cache-dir", o.CacheDir, "where built Kubernetes binaries are kept between runs")
	fs.StringVar(&o.LoadBinary, "load-binary", o.LoadBinary, "static snug-load binary for the lab image (default: snug-load next to this binary)")
	fs.DurationVar(&o.ReadyTimeout, "ready-timeout", o.ReadyTimeout, "how long to wait for the node to become Ready")
	fs.BoolVar(&o.InstallPackages, "install-packages", o.InstallPackages, "install missing Debian packages with apt-get")
	fs.BoolVar(&o.WithV2Node, "v2-node", o.WithV2Node, "also run a second node with unified cgroup v2 and the systemd cgroup driver (a User-Mode Linux guest; up, build, demo)")
	fs.IntVar(&o.V2.MemoryMiB, "v2-node-memory", o.V2.MemoryMiB, "memory of the cgroup-v2 node, MiB")
}

var (
	versionRE = regexp.MustCompile(`^1\.(\d+)\.(\d+)$`)
	netnsRE   = regexp.MustCompile(`^[a-z][a-z0-9-]{0,14}$`)
)

// Validate reports the first problem with the options.
func (o *Options) Validate() error {
	var errs []error
	if o.Dir == "" || !filepath.IsAbs(o.Dir) {
		errs = append(errs, fmt.Errorf("--dir must be an absolute path, got %q", o.Dir))
	} else if len(filepath.Join(o.Dir, "run", "containerd", "containerd.sock.ttrpc")) > 100 {
		errs = append(errs, fmt.Errorf("--dir %q is too long for a unix socket path", o.Dir))
	}
	switch {
	case !versionRE.MatchString(o.KubernetesVersion):
		errs = append(errs, fmt.Errorf("--kubernetes-version must look like 1.35.4, got %q", o.KubernetesVersion))
	case !slices.Contains(Versions, o.KubernetesVersion):
		// Each version's kubelet and node image are built and tested
		// here; another would be built and run untested.
		errs = append(errs, fmt.Errorf("--kubernetes-version %s: the lab supports %s", o.KubernetesVersion, strings.Join(Versions, ", ")))
	}
	if o.CacheDir == "" {
		errs = append(errs, errors.New("--cache-dir must not be empty"))
	}
	if !netnsRE.MatchString(o.NetNS) {
		errs = append(errs, fmt.Errorf("network namespace name %q is not valid", o.NetNS))
	}
	for _, a := range []string{o.HostIP, o.NodeIP} {
		if _, err := netip.ParseAddr(a); err != nil {
			errs = append(errs, fmt.Errorf("bad address %q: %w", a, err))
		}
	}
	for _, c := range []string{o.PodCIDR, o.ServiceCIDR} {
		if _, err := netip.ParsePrefix(c); err != nil {
			errs = append(errs, fmt.Errorf("bad CIDR %q: %w", c, err))
		}
	}
	if o.ReadyTimeout <= 0 {
		errs = append(errs, errors.New("--ready-timeout must be positive"))
	}
	if err := o.V2.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// minor returns the minor version, e.g. 35 for 1.35.4.
func (o *Options) minor() string { return versionRE.FindStringSubmatch(o.KubernetesVersion)[1] }

// paths of one lab directory.
func (o *Options) path(elem ...string) string {
	return filepath.Join(append([]string{o.Dir}, elem...)...)
}

// BinDir is where the Kubernetes binaries of this version are cached.
func (o *Options) BinDir() string {
	return filepath.Join(o.CacheDir, "k8s", "v"+o.KubernetesVersion, "bin")
}

// Kubeconfig is the admin kubeconfig of the lab.
func (o *Options) Kubeconfig() string { return o.path("pki", "admin.kubeconfig") }

// ServerURL is the API server's address as seen from the host.
func (o *Options) ServerURL() string { return "https://" + o.NodeIP + ":6443" }

// Registry is the host:port of the lab's image registry (plain HTTP), on
// the node's address: reachable from the host and from pods, and the name
// containerd pulls from, e.g. 10.213.0.2:5000/snug-dev/snug-agent:v1.
func (o *Options) Registry() string { return net.JoinHostPort(o.NodeIP, registryPort) }

func (o *Options) nodeIPs() []net.IP { return []net.IP{net.ParseIP(o.NodeIP)} }

// LoadDir is the host directory that pods mount (hostPath) as snug-load's
// control directory: writing "cpu=300m memory=100Mi" to LoadDir/POD_NAME
// (or LoadDir/all) changes that pod's load within 50 ms.
func (o *Options) LoadDir() string { return o.path("load") }
