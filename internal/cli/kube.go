package cli

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/snug-dev/snug/internal/kube"
)

// requestTimeout bounds each request to the API server. Watches end with
// it too; the code that watches starts them again.
const requestTimeout = 30 * time.Second

// noKubeconfig is the error of a command that found no kubeconfig.
const noKubeconfig = "no kubeconfig found (tried --kubeconfig, $KUBECONFIG, ~/.kube/config)"

// kubeOptions are the flags of subcommands that talk to a cluster: the
// standard kubeconfig flags of kubectl and its plugins (cli-runtime's
// genericclioptions: --kubeconfig, --context, --cluster, --user, -n, -s,
// --as, --as-group, --token, --request-timeout, ...), resolved the way
// kubectl resolves them.
type kubeOptions struct {
	flags *genericclioptions.ConfigFlags
	// timeout bounds each request unless --request-timeout is given.
	timeout time.Duration
}

func (o *kubeOptions) AddFlags(fs *pflag.FlagSet) {
	o.init()
	o.flags.AddFlags(fs)
}

func (o *kubeOptions) init() {
	if o.flags == nil {
		// Not persistent: each command loads the kubeconfig once anyway,
		// and a test may change the flags between loads.
		o.flags = genericclioptions.NewConfigFlags(false)
		// snug reads no discovery cache; --cache-dir would be a flag that
		// does nothing.
		o.flags.CacheDir = nil
	}
}

// namespaceFlag is -n as given ("" when not given).
func (o *kubeOptions) namespaceFlag() string {
	o.init()
	return *o.flags.Namespace
}

// restConfig is the client config the flags and kubeconfig give, and the
// namespace (-n, else the context's, else "default").
func (o *kubeOptions) restConfig(userAgent string) (*rest.Config, string, error) {
	o.init()
	loader := o.flags.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	// With no kubeconfig, no --server and not in a pod, clientcmd would
	// fall back to http://localhost:8080; say what is missing instead.
	if len(raw.Clusters) == 0 && *o.flags.APIServer == "" && os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		return nil, "", errors.New(noKubeconfig)
	}
	cfg, err := o.flags.ToRESTConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", errors.New(noKubeconfig)
		}
		return nil, "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("reading the kubeconfig's namespace: %w", err)
	}
	if t := *o.flags.Timeout; t == "" || t == "0" {
		cfg.Timeout = o.timeout
		if cfg.Timeout == 0 {
			cfg.Timeout = requestTimeout
		}
	}
	cfg.UserAgent = userAgent
	return cfg, ns, nil
}

// cluster is a connection to the API server.
type cluster struct {
	client kubernetes.Interface
	// core is the core/v1 client actuate takes, over the same config.
	core      *kube.Client
	namespace string
	server    string
	// cfg is the client config, for clients of other API groups.
	cfg *rest.Config
}

// connect loads the kubeconfig and builds a client. It does not contact
// the server.
func (o *kubeOptions) connect() (*cluster, error) {
	cfg, ns, err := o.restConfig("snug")
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", cfg.Host, err)
	}
	core, err := kube.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", cfg.Host, err)
	}
	return &cluster{client: client, core: core, namespace: ns, server: cfg.Host, cfg: cfg}, nil
}

// explain makes an error that is not an answer from the API server say
// which server could not be reached.
func (c *cluster) explain(err error) error {
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	var uerr *url.Error
	if errors.As(err, &status) || !errors.As(err, &uerr) {
		return err
	}
	return fmt.Errorf("cannot reach the API server at %s (is the cluster up, and is the kubeconfig's context the one meant?): %w", c.server, err)
}
