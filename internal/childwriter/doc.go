// Package childwriter writes the children of Anvil's objects, on the
// management cluster or on a compute cluster: server-side apply that sends
// nothing for a settled child, deletion conditional on the live object's
// UID, the sweep of a deleted owner's children, and the ownership rules
// all of them check first (a controller reference locally, ownership
// labels remotely). Nothing here knows how a compute cluster is found; the
// registry in internal/targetcluster hands out a Writer for one.
package childwriter
