#!/bin/bash
# Runs ovn-northd against the central's members (docs/design/ovn.md,
# "northd"). Several replicas share the work through the Southbound lock:
# one is active, the others stand by.
set -euo pipefail
exec ovn-northd \
  --ovnnb-db="${OVN_NB_DB}" --ovnsb-db="${OVN_SB_DB}" \
  --n-threads="${OVN_NORTHD_THREADS}" \
  --private-key=/etc/ovn/tls/tls.key --certificate=/etc/ovn/tls/tls.crt --ca-cert=/etc/ovn/tls/ca.crt \
  --log-file=/dev/stdout
