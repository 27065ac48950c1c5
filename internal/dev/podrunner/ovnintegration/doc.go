// Package ovnintegration holds the integration tests of the pod runner's
// OVN mappings: a three-member northbound database, a southbound database
// and ovn-northd from a central, and a chassis, all run by one runner as
// this host's Debian OVS and OVN programs against a real apiserver and
// controller manager. They live apart from package podrunner's tests,
// whose TestMain starts the OpenStack services, because OVN needs none.
package ovnintegration
