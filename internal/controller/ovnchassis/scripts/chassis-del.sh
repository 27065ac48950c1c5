#!/bin/bash
# Removes a departed node's chassis from the Southbound database.
set -euo pipefail
exec ovn-sbctl --db="${OVN_SB_DB}" --private-key=/etc/ovn/tls/tls.key --certificate=/etc/ovn/tls/tls.crt \
  --ca-cert=/etc/ovn/tls/ca.crt --if-exists chassis-del "${SYSTEM_ID}"
