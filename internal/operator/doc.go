// Package operator assembles the anvil-operator manager: its flags, its
// scheme, its probes and the controllers it runs. cmd/anvil-operator is a thin
// wrapper around it, so tests can start the same manager in-process.
package operator
