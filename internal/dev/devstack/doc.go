// Package devstack runs Anvil's local development stack: kwokctl clusters on
// the pinned binaries (one management cluster and N compute clusters with
// fake hypervisor nodes), the CRDs and registrations, the operator as a
// background process serving its admission webhooks with a certificate from
// a devstack CA, and a sample ControlPlane for the user guides to start
// from. Everything it starts is recorded in a state directory, so that Down
// stops exactly that and nothing else.
package devstack
