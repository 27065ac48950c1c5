// Package openstack wraps gophercloud v2 behind the small interfaces Anvil's
// controllers use: Identity, ComputeServices, Hypervisors, Aggregates,
// Servers and Placement. One Session authenticates once per reconcile pass
// and implements all of them. Each call pins its API microversion, so a
// cloud upgrade cannot change what a request means. Errors carry the
// operation, the HTTP status and the request id, and never a credential or
// a response body.
package openstack
