// Package targetcluster is the registry of compute clusters. A compute
// cluster is registered by a labelled Secret on the management cluster that
// carries a kubeconfig; this package turns those Secrets into clients.
package targetcluster
