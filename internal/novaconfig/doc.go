// Package novaconfig renders Nova's configuration files: the compute
// contract, the Secret data a Nova publishes so that a nova-compute, on this
// cluster or another one, can join it; nova-manage.conf; and the control
// plane's nova.conf, which is the in-cluster contract extended with the
// credentials, databases and sections only the control plane may hold. The
// package is pure: it turns inputs the controller has already read into
// bytes, and it never talks to a cluster.
//
// Every value is written literally: File.Render refuses control characters
// and spells '$', quotes and surrounding spaces so that oslo.config reads
// back exactly what was given, never a variable it would substitute.
//
// The contract is versioned by its reference page,
// docs/reference/nova-compute-contract.md; the golden files under testdata
// pin the exact bytes, and integration tests check them against the
// oslo-config-validator of a real Nova and read values back with the real
// oslo.config.
package novaconfig
