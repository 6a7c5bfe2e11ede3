//go:build tools

// Package kube pins the Kubernetes API server and etcd that the lab runs for
// every simulated cluster (tests/lab/talos). The Makefile builds both into
// .tools/bin from these pinned modules: the real components, not imitations.
// kube-controller-manager and kube-scheduler are pinned for `make
// kube-controllers` (the lab does not run them yet).
package kube

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
