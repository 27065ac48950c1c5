// Package novacompute reconciles NovaCompute pools. It holds, so far, the
// end of a pool's teardown: reaping the copies of the compute contract that
// the ControlPlane delivered to the pool's cluster.
package novacompute
