// Package devstack runs Anvil's local development stack: kwokctl clusters on
// the pinned binaries (one management cluster and N compute clusters with
// fake hypervisor nodes), the CRDs and registrations, and the operator as a
// background process. Everything it starts is recorded in a state directory,
// so that Down stops exactly that and nothing else.
package devstack
