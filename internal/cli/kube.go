package cli

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// kubeOptions are the flags of subcommands that talk to a cluster.
type kubeOptions struct {
	// kubeconfig is --kubeconfig; empty means $KUBECONFIG, then
	// ~/.kube/config (clientcmd's loading rules, as kubectl's).
	kubeconfig string
	// namespace is -n; empty means the kubeconfig context's namespace, then
	// "default".
	namespace string
}

func (o *kubeOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path of the kubeconfig (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVarP(&o.namespace, "namespace", "n", "", "namespace (default: the kubeconfig context's, else \"default\")")
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
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{}
	if o.namespace != "" {
		overrides.Context.Namespace = o.namespace
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New(noKubeconfig)
		}
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig's namespace: %w", err)
	}
	cfg.Timeout = requestTimeout
	cfg.UserAgent = "snug"
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
