package vpa

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"time"

	"github.com/spf13/pflag"

	"github.com/snug-dev/snug/lab/internal/lab"
)

const (
	// DefaultVPAVersion is the newest release of
	// k8s.io/autoscaler/vertical-pod-autoscaler that the module proxy serves.
	DefaultVPAVersion = "1.8.1"
	// DefaultMetricsServerVersion is the newest release of
	// sigs.k8s.io/metrics-server that the module proxy serves.
	DefaultMetricsServerVersion = "0.9.0"
)

// Options configures VPA and metrics-server on a lab. Start from NewOptions.
type Options struct {
	// Lab is the lab they run against; its cache directory also holds
	// their builds, its directory their certificates, logs and PIDs.
	Lab *lab.Options
	// VPAVersion and MetricsServerVersion are module versions without the
	// v, e.g. 1.8.1 and 0.9.0.
	VPAVersion, MetricsServerVersion string
	// MetricsServerPort and WebhookPort are where metrics-server and VPA's
	// admission controller listen on the host end of the lab's veth.
	MetricsServerPort, WebhookPort int
	// MetricResolution is metrics-server's --metric-resolution; its own
	// manifests ship 15s.
	MetricResolution time.Duration
	// ReadyTimeout bounds each wait of Up.
	ReadyTimeout time.Duration
}

// NewOptions returns the defaults for the lab o.
func NewOptions(o *lab.Options) *Options {
	return &Options{
		Lab:                  o,
		VPAVersion:           DefaultVPAVersion,
		MetricsServerVersion: DefaultMetricsServerVersion,
		MetricsServerPort:    4443,
		WebhookPort:          8000,
		MetricResolution:     15 * time.Second,
		ReadyTimeout:         2 * time.Minute,
	}
}

// AddFlags registers the options (not the lab's) on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.VPAVersion, "vpa-version", o.VPAVersion, "version of k8s.io/autoscaler/vertical-pod-autoscaler to build and run")
	fs.StringVar(&o.MetricsServerVersion, "metrics-server-version", o.MetricsServerVersion, "version of sigs.k8s.io/metrics-server to build and run")
	fs.IntVar(&o.MetricsServerPort, "metrics-server-port", o.MetricsServerPort, "port metrics-server listens on at the lab's host address")
	fs.IntVar(&o.WebhookPort, "webhook-port", o.WebhookPort, "port VPA's admission controller listens on (all host addresses; registered at the lab's host address)")
	fs.DurationVar(&o.MetricResolution, "metric-resolution", o.MetricResolution, "metrics-server's --metric-resolution")
	fs.DurationVar(&o.ReadyTimeout, "wait-timeout", o.ReadyTimeout, "how long to wait for each piece to become ready")
}

var semverRE = regexp.MustCompile(`^\d+\.\d+\.\d+$`)

// Validate reports every problem with the options (the lab's included).
func (o *Options) Validate() error {
	if o.Lab == nil {
		return errors.New("vpa options: no lab options")
	}
	errs := []error{o.Lab.Validate()}
	for flag, v := range map[string]string{"--vpa-version": o.VPAVersion, "--metrics-server-version": o.MetricsServerVersion} {
		if !semverRE.MatchString(v) {
			errs = append(errs, fmt.Errorf("%s must look like 1.8.1 (no v), got %q", flag, v))
		}
	}
	for flag, p := range map[string]int{"--metrics-server-port": o.MetricsServerPort, "--webhook-port": o.WebhookPort} {
		if p <= 1024 || p > 65535 {
			errs = append(errs, fmt.Errorf("%s must be in 1025..65535, got %d", flag, p))
		}
	}
	if o.MetricsServerPort == o.WebhookPort {
		errs = append(errs, fmt.Errorf("--metrics-server-port and --webhook-port are both %d", o.WebhookPort))
	}
	if o.MetricResolution < 10*time.Second {
		errs = append(errs, fmt.Errorf("--metric-resolution must be at least 10s (metrics-server's minimum), got %s", o.MetricResolution))
	}
	if o.ReadyTimeout <= 0 {
		errs = append(errs, errors.New("--wait-timeout must be positive"))
	}
	return errors.Join(errs...)
}

func (o *Options) vpa() lab.Module           { return vpaModule(o.VPAVersion) }
func (o *Options) metricsServer() lab.Module { return metricsServerModule(o.MetricsServerVersion) }

// VPABinDir and MetricsServerBinDir are where the built binaries are cached.
func (o *Options) VPABinDir() string { return o.vpa().BinDir(o.Lab.CacheDir) }

// MetricsServerBinDir is where the metrics-server binary is cached.
func (o *Options) MetricsServerBinDir() string { return o.metricsServer().BinDir(o.Lab.CacheDir) }

// dir is this add-on's directory inside the lab directory.
func (o *Options) dir(elem ...string) string {
	return filepath.Join(append([]string{o.Lab.Dir, "vpa"}, elem...)...)
}

// EnsureBinaries builds VPA and metrics-server unless complete builds are
// cached.
func EnsureBinaries(ctx context.Context, o *Options, log io.Writer) error {
	if err := o.vpa().Ensure(ctx, o.Lab.CacheDir, log); err != nil {
		return err
	}
	return o.metricsServer().Ensure(ctx, o.Lab.CacheDir, log)
}
