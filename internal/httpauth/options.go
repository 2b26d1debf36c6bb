package httpauth

import (
	"crypto/tls"
	"errors"
	"net"

	"github.com/spf13/pflag"
)

// ServingOptions are the flags of a guarded server, the same in the agent
// and the controller: --auth, --tls, --tls-cert-file,
// --tls-private-key-file.
type ServingOptions struct {
	// Auth checks every request but the open paths with the API server
	// (Filter).
	Auth bool
	// TLS serves HTTPS; with CertFile and KeyFile their certificate, else
	// a self-signed one made at start (TLSConfig). Either file implies
	// TLS.
	TLS               bool
	CertFile, KeyFile string
}

// NewServingOptions returns the defaults: auth on, plain HTTP.
func NewServingOptions() ServingOptions { return ServingOptions{Auth: true} }

// AddFlags registers the flags; paths names what they guard, for the help.
func (o *ServingOptions) AddFlags(fs *pflag.FlagSet, paths string) {
	fs.BoolVar(&o.Auth, "auth", o.Auth, "serve "+paths+" only to requests whose bearer token the API server authenticates (TokenReview) and authorizes for the path (SubjectAccessReview)")
	fs.BoolVar(&o.TLS, "tls", o.TLS, "serve HTTPS, with a self-signed certificate made at start unless --tls-cert-file and --tls-private-key-file name one")
	fs.StringVar(&o.CertFile, "tls-cert-file", o.CertFile, "PEM certificate (chain) to serve HTTPS with; implies --tls")
	fs.StringVar(&o.KeyFile, "tls-private-key-file", o.KeyFile, "PEM private key of --tls-cert-file")
}

// Validate reports flags that cannot work.
func (o *ServingOptions) Validate() error {
	if (o.CertFile == "") != (o.KeyFile == "") {
		return errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	return nil
}

// ServesTLS reports whether the server speaks HTTPS.
func (o *ServingOptions) ServesTLS() bool { return o.TLS || o.CertFile != "" }

// Scheme is "https" or "http".
func (o *ServingOptions) Scheme() string {
	if o.ServesTLS() {
		return "https"
	}
	return "http"
}

// Listener returns ln, wrapped in TLS when the options ask for it.
func (o *ServingOptions) Listener(ln net.Listener) (net.Listener, error) {
	if !o.ServesTLS() {
		return ln, nil
	}
	cfg, err := TLSConfig(o.CertFile, o.KeyFile)
	if err != nil {
		return nil, err
	}
	return tls.NewListener(ln, cfg), nil
}
