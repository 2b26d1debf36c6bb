// Package client is a typed client for SnugPolicy objects, built on
// client-go's generic typed client (k8s.io/client-go/gentype), the same code
// that generated clientsets use, so it needs no generator and no dependency
// beyond client-go. It owns talking to the API server about snugpolicies and
// nothing else: no caching (build informers on top of it with
// cache.NewListWatchFromClient or a ListWatch of its List and Watch).
package client
