// Package kube is the agent's core/v1 client: pods, nodes, namespaces,
// configmaps and events over a rest.RESTClient whose scheme registers
// core/v1 only.
//
// It exists for memory. client-go's typed core/v1 client imports
// k8s.io/client-go/kubernetes/scheme, whose package init registers every
// API group's types; a binary that links it has about 13 MiB more RSS
// than one that does not (docs/agent.md, "Memory against the 30 MiB
// target"), and the agent runs on every node. The requests are client-go's
// own (gentype's generic typed client over rest.RESTClient), so the
// semantics and the errors (apierrors' StatusError) are those of the
// typed client.
//
// Client satisfies actuate.Client and, through EventSink,
// k8s.io/client-go/tools/record's EventSink.
package kube
