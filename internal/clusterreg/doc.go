// Package clusterreg registers a compute cluster with Anvil's management
// cluster. It reads the token of the ServiceAccount that the
// target-cluster-access chart created on the compute cluster, turns it into a
// kubeconfig with everything embedded, and writes the registration Secret
// that the operator's cluster registry watches.
//
// Nothing this package prints or returns as an error carries the token, the
// kubeconfig or any other Secret data.
package clusterreg
