package agent

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/snug-dev/snug/internal/httpauth"
	"github.com/snug-dev/snug/internal/kube"
	"github.com/snug-dev/snug/internal/recommend"
)

// Options configure the snug-agent binary: its flags.
type Options struct {
	// Node is the node whose pods the agent samples; required.
	Node string
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, then
	// ~/.kube/config, then the in-cluster service account.
	Kubeconfig string
	// Interval is the time between sampling passes.
	Interval time.Duration
	// History is how many points each container keeps.
	History int
	// Listen is the address of /metrics, /healthz, /readyz and the JSON API.
	Listen string
	// Serving guards /metrics and the JSON API (Serving.Auth: each
	// request's bearer token checked with a TokenReview and its access
	// with a SubjectAccessReview, internal/httpauth; /healthz and /readyz
	// stay open for probes) and says whether to serve HTTPS.
	Serving httpauth.ServingOptions
	// CgroupRoot is where cgroups are mounted.
	CgroupRoot string
	// APITimeout bounds the start-up checks against the API server.
	APITimeout time.Duration
	// KubeAPIContentType is what the core/v1 client speaks: protobuf
	// (default) or JSON (kube.ContentTypeProtobuf, kube.ContentTypeJSON).
	KubeAPIContentType string
	// Autoscale turns the decision step on: pods under a SnugPolicy are
	// resized in place.
	Autoscale bool
	// DryRun decides and logs, but never patches a pod.
	DryRun bool
	// CPUHalfLife is the half-life of the CPU usage percentiles
	// (cluster-wide tuning; the policy's behavior tunes the rest).
	CPUHalfLife time.Duration
	// RegrowWindow is the longest load cycle the recommender remembers
	// (recommend.Config.RegrowWindow): how long a regrow floor holds, and
	// the span of a Guaranteed container's memory peak.
	RegrowWindow time.Duration
	// SnapshotInterval is the least time between two publications of a
	// pod's learnt history; 0 publishes none and seeds from no checkpoint.
	SnapshotInterval time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	c := NewConfig()
	return &Options{
		Interval:           c.Interval,
		History:            c.HistorySize,
		Listen:             "127.0.0.1:9464",
		Serving:            httpauth.NewServingOptions(),
		CgroupRoot:         c.CgroupRoot,
		APITimeout:         15 * time.Second,
		KubeAPIContentType: kube.ContentTypeProtobuf,
		Autoscale:          true,
		CPUHalfLife:        recommend.DefaultConfig().CPUHalfLife,
		RegrowWindow:       recommend.DefaultConfig().RegrowWindow,

		SnapshotInterval: DefaultPublishInterval,
	}
}

// AddFlags registers the options' flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Node, "node", o.Node, "name of the node whose pods to sample (required; usually this machine's node)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)")
	fs.DurationVar(&o.Interval, "interval", o.Interval, fmt.Sprintf("time between sampling passes, %v to %v", MinInterval, MaxInterval))
	fs.IntVar(&o.History, "history", o.History, fmt.Sprintf("points kept per container, 1 to %d (264 bytes each)", MaxHistorySize))
	fs.StringVar(&o.Listen, "listen", o.Listen, "address for /metrics, /healthz, /readyz and /snug/v1/")
	o.Serving.AddFlags(fs, "/metrics and /snug/v1/ (/healthz and /readyz stay open)")
	fs.StringVar(&o.CgroupRoot, "cgroup-root", o.CgroupRoot, "where the cgroup hierarchies are mounted")
	fs.DurationVar(&o.APITimeout, "api-timeout", o.APITimeout, "how long to wait for the API server at start-up")
	fs.StringVar(&o.KubeAPIContentType, "kube-api-content-type", o.KubeAPIContentType, "content type of requests for pods, nodes, events and the other core/v1 objects: "+kube.ContentTypeProtobuf+" or "+kube.ContentTypeJSON+" (SnugPolicies are always JSON)")
	fs.BoolVar(&o.Autoscale, "autoscale", o.Autoscale, "decide and resize in place the pods that a SnugPolicy covers (false: only sample)")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "decide and log resizes, but never patch a pod")
	fs.DurationVar(&o.CPUHalfLife, "cpu-half-life", o.CPUHalfLife, "half-life of the CPU usage percentiles behind grows and shrinks that are not starvation (1s to 24h)")
	fs.DurationVar(&o.RegrowWindow, "regrow-window", o.RegrowWindow, "the longest load cycle remembered: how long shrinks stop at a level the load came back to, and the span of the peak a Guaranteed container's memory is not shrunk under, nor shrunk at all before it has been seen (1m to 168h)")
	fs.DurationVar(&o.SnapshotInterval, "snapshot-interval", o.SnapshotInterval, "least time between two looks at a pod's learnt history, published in its annotation when it changed materially (1s to 1h; 0: neither publish nor start pods from their policy's checkpoint)")
}

// Config is the loop's configuration the options make.
func (o *Options) Config() Config {
	c := NewConfig()
	c.Node, c.Interval, c.HistorySize, c.CgroupRoot = o.Node, o.Interval, o.History, o.CgroupRoot
	return c
}

// Validate reports options that cannot work, naming their flags.
func (o *Options) Validate() error {
	var errs []error
	if o.Node == "" {
		errs = append(errs, errors.New("--node is required"))
	}
	if err := o.Config().Validate(); err != nil {
		// Name the flags, not the config fields.
		msg := strings.NewReplacer("interval", "--interval", "history size", "--history", "cgroup root", "--cgroup-root").Replace(err.Error())
		errs = append(errs, errors.New(msg))
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		errs = append(errs, fmt.Errorf("--listen %q: %w", o.Listen, err))
	}
	if err := o.Serving.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.APITimeout <= 0 {
		errs = append(errs, errors.New("--api-timeout must be positive"))
	}
	if err := kube.CheckContentType(o.KubeAPIContentType); err != nil {
		errs = append(errs, err)
	}
	if o.CPUHalfLife < time.Second || o.CPUHalfLife > 24*time.Hour {
		errs = append(errs, fmt.Errorf("--cpu-half-life %v is out of range [1s, 24h]", o.CPUHalfLife))
	}
	if o.RegrowWindow < time.Minute || o.RegrowWindow > 7*24*time.Hour {
		errs = append(errs, fmt.Errorf("--regrow-window %v is out of range [1m, 168h]", o.RegrowWindow))
	}
	if o.SnapshotInterval != 0 && (o.SnapshotInterval < time.Second || o.SnapshotInterval > time.Hour) {
		errs = append(errs, fmt.Errorf("--snapshot-interval %v is out of range [1s, 1h] (or 0)", o.SnapshotInterval))
	}
	if o.DryRun && !o.Autoscale {
		errs = append(errs, errors.New("--dry-run needs --autoscale"))
	}
	return errors.Join(errs...)
}
