#!/bin/bash
# Runs ovn-controller against the node's OVS database; it reads the
# Southbound address the apply step wrote there.
set -euo pipefail
exec ovn-controller unix:/run/openvswitch/db.sock \
  --private-key=/etc/ovn/tls/tls.key --certificate=/etc/ovn/tls/tls.crt --ca-cert=/etc/ovn/tls/ca.crt \
  --pidfile=/run/ovn/ovn-controller.pid
