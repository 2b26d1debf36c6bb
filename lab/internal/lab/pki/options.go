package pki

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"time"
)

// dnsName is an RFC 1123 subdomain, which node names must be.
var dnsName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// Options says what the certificates must cover. Every field is required.
type Options struct {
	// NodeName is the Kubernetes node name, a lowercase DNS name; it is the
	// kubelet's identity (system:node:<NodeName>) and a kubelet SAN.
	NodeName string
	// NodeIPs are the node's addresses; both serving certificates cover them.
	NodeIPs []net.IP
	// ServiceCIDR is the service range, e.g. 10.215.0.0/24; its first address
	// (the kubernetes service) is an apiserver SAN.
	ServiceCIDR string
	// ServerURL is the apiserver URL written into every kubeconfig, e.g.
	// https://10.213.0.2:6443.
	ServerURL string
	// Now is the current time: certificates start at it (less a little slack
	// for clock skew) and existing ones are checked against it.
	Now time.Time
}

// Validate reports every problem in o at once.
func (o Options) Validate() error {
	var errs []error
	if o.NodeName == "" {
		errs = append(errs, errors.New("node name is empty"))
	} else if !dnsName.MatchString(o.NodeName) {
		errs = append(errs, fmt.Errorf("node name %q is not a lowercase DNS name", o.NodeName))
	}
	if len(o.NodeIPs) == 0 {
		errs = append(errs, errors.New("no node IPs"))
	}
	for i, ip := range o.NodeIPs {
		if ip.To16() == nil || ip.IsUnspecified() {
			errs = append(errs, fmt.Errorf("node IP %d (%q) is not a usable address", i, ip))
		}
	}
	if _, err := firstServiceIP(o.ServiceCIDR); err != nil {
		errs = append(errs, fmt.Errorf("service CIDR %q: %w", o.ServiceCIDR, err))
	}
	if u, err := url.Parse(o.ServerURL); err != nil {
		errs = append(errs, fmt.Errorf("server URL: %w", err))
	} else if u.Scheme != "https" || u.Hostname() == "" {
		errs = append(errs, fmt.Errorf("server URL %q is not https://host[:port]", o.ServerURL))
	}
	if o.Now.IsZero() {
		errs = append(errs, errors.New("now is zero; pass the current time"))
	}
	return errors.Join(errs...)
}

// firstServiceIP returns the address the apiserver gives the kubernetes
// service: the first one after the network address of cidr.
func firstServiceIP(cidr string) (net.IP, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, err
	}
	ip := p.Masked().Addr().Next()
	if !ip.IsValid() || !p.Contains(ip) {
		return nil, errors.New("no room for a service IP")
	}
	return net.IP(ip.AsSlice()), nil
}
