#!/bin/bash
# Runs ovn-controller against the node's OVS database; it reads the
# Southbound address the apply step wrote there. It presents the node's own
# identity, which the node's identity Job installs once cert-manager issued
# it; until then the container waits, and after five minutes exits so that
# the kubelet's back-off shows the wait.
set -euo pipefail
tls=/etc/ovn/tls
for _ in $(seq 300); do
  [[ -s "${tls}/tls.key" && -s "${tls}/tls.crt" && -s "${tls}/ca.crt" ]] && break
  sleep 1
done
[[ -s "${tls}/tls.key" && -s "${tls}/tls.crt" && -s "${tls}/ca.crt" ]] ||
  { echo "no chassis identity installed in ${tls} on this node yet" >&2; exit 1; }
exec ovn-controller unix:/run/openvswitch/db.sock \
  --private-key="${tls}/tls.key" --certificate="${tls}/tls.crt" --ca-cert="${tls}/ca.crt" \
  --pidfile=/run/ovn/ovn-controller.pid
