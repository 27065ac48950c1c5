// Package metadataintegration holds the integration test of the pod
// runner's OVN metadata agent: a chassis on a node with a network
// namespace of its own and the userspace datapath, the agent beside it,
// the OpenStack service set's real Neutron and OVN central, and a test
// instance whose curl to 169.254.169.254 crosses OVN, haproxy and the
// agent. It lives apart from package podrunner's tests, whose TestMain
// starts the reference Nova this test does not need.
package metadataintegration
