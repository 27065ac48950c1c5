// Package osim is a stand-in for Keystone, Nova and Placement that serves,
// on loopback, the calls the operator's pools make, for the P4 scale
// measurement only. A real Nova cannot host three thousand computes on one
// machine; everywhere else Anvil is tested against the real services.
//
// The response bodies follow the shapes Keystone v3, Nova at microversion
// 2.53 and Placement at 1.6 return (hand-written from the API references
// and checked against the gophercloud structs the operator decodes them
// with, not recorded). The simulator keeps only the state those calls
// touch: compute services, hypervisors, aggregates and traits. A compute
// service appears when a nova-compute pod runs on a node (FollowComputePods),
// and its host is mapped into the hypervisor list when a host-discovery Job
// succeeds (FollowDiscovery), as `nova-manage cell_v2 discover_hosts` would.
// docs/design/scale-simulator.md says what it does and does not model.
package osim
