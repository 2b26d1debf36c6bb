// Package lab brings up and tears down snug's lab: a real single-node
// Kubernetes on one machine (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, an image registry, containerd, runc, a kubelet and
// kube-proxy), built from the Go module
// proxy and run inside a network namespace that the lab creates, so that the
// node has a real, non-loopback address that only this machine can reach.
//
// It owns: Debian packages the lab needs, the Kubernetes build cache, the
// lab directory (certificates, configs, data, logs, PID files), the network
// namespace and its veth pair, the processes it starts, the local images
// it imports, and pushing snug's own images to its registry (PushImages). It does not own anything it did not create: down stops only
// PIDs recorded by up (and the container processes their runtime started),
// and removes only the namespace, links and mounts the lab made.
package lab
