package lab

import "path/filepath"

// EtcdVersion is the etcd the lab runs, built from the Go module proxy
// like Kubernetes: the 3.6 line, which kubeadm 1.35.4 installs (its
// DefaultEtcdVersion is 3.6.6-0; it refuses an external etcd older than
// 3.5.24). Debian 12's etcd-server (3.4.23), the lab's etcd before, lacks
// the fixed watch progress requests the API server's watch cache needs
// (3.4.31+, 3.5.13+): on it the API server refuses watch lists ("the
// required storage feature RequestWatchProgress is not enabled") and serves
// consistent lists from etcd instead of its cache, unlike any cluster a
// user runs.
const EtcdVersion = "3.6.16"

// etcdModule is etcd's server module; its main package is the etcd
// command.
func etcdModule() Module {
	const m = "go.etcd.io/etcd/server/v3"
	return Module{CacheName: "etcd", Path: m, Version: EtcdVersion, Packages: []string{m}}
}

// EtcdPath is the lab's etcd binary, built or not. Go names the command of
// go.etcd.io/etcd/server/v3 after the element before its major version:
// "server".
func (o *Options) EtcdPath() string {
	return filepath.Join(etcdModule().BinDir(o.CacheDir), "server")
}
