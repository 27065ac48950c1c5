// Package novacompute reconciles NovaCompute pools. A pool turns the
// labelled nodes of one cluster into Nova hosts: it renders their
// configuration, runs nova-compute on them through a DaemonSet, maps their
// hosts into the cell, keeps their availability-zone aggregates and custom
// traits, and drains each node it lets go without ever migrating or losing
// a server. The end of a pool's teardown reaps the copies of the compute
// contract the ControlPlane delivered to the pool's cluster.
package novacompute
