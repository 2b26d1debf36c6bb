// Package pki makes the certificates, keys and kubeconfigs of snug's lab
// cluster: one CA, the kube-apiserver and kubelet serving certificates, the
// client certificates of the admin, the controller manager, the scheduler, the
// kubelet, kube-proxy, the apiserver's kubelet client and its front proxy (the aggregation
// layer's client), the service-account key pair and one kubeconfig per client
// with everything embedded. Keys are ECDSA P-256,
// except the RSA 2048 service-account key, all as PKCS#8 PEM.
//
// It owns the files it writes in the directory passed to Ensure and nothing
// else: it does not start components, build their command lines or decide
// where the lab directory lives. It is meant for a throwaway lab, not for
// production: the CA key sits next to the certificates it signed.
package pki
