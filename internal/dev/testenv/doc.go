// Package testenv starts real clusters for integration tests: one management
// cluster and N compute clusters, each a kube-apiserver and etcd process run
// through controller-runtime's envtest from the binaries `make tools` builds.
//
// The management cluster gets Anvil's CRDs and one registration Secret per
// compute cluster, exactly as an operator would find them in production. A
// compute cluster can additionally run kube-controller-manager,
// kube-scheduler and kwok, so that DaemonSets get pods and Jobs complete on
// fake nodes, and the dev volume provisioner (internal/dev/provisioner), so
// that StatefulSets' claims get volumes.
//
// A test package starts one Environment in TestMain through Run and shares
// it between its tests; each test works in objects of its own.
package testenv
