//go:build tools

// Package tools pins the Kubernetes commands the platform runs locally (kube-apiserver for the
// private API server of `npm run dev` and the tests, kubectl for people and tests). k8s.io/kubernetes
// cannot be `go install`ed: its go.mod replaces its staging modules, so this wrapper module requires
// it and pins each staging module (go.mod's replace block) to the matching v0.X release.
// scripts/bootstrap.sh builds both commands from here into the cache folder.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
