#!/bin/bash
# Runs the switch. The revalidator thread count comes from the chassis's
# spec; the database is the node's own.
set -euo pipefail
ovs-vsctl --no-wait --db=unix:/run/openvswitch/db.sock init
ovs-vsctl --no-wait --db=unix:/run/openvswitch/db.sock set Open_vSwitch . \
  other_config:n-revalidator-threads="${OVS_REVALIDATOR_THREADS}"
exec ovs-vswitchd unix:/run/openvswitch/db.sock \
  --pidfile=/run/openvswitch/ovs-vswitchd.pid --mlockall
