#!/bin/bash
# Waits until this node's chassis is registered in the Southbound database:
# the agent finds its Chassis_Private row by the node's system-id at start
# and gives up if there is none, so it must not start before ovn-controller
# registered the node. The system-id is read from the node's OVS database,
# where the chassis's apply step wrote it.
set -uo pipefail
if [[ -z "${OVN_SB_CONNECTION:-}" ]]; then
  echo "OVN_SB_CONNECTION is empty: the operator resolved no Southbound address" >&2
  exit 1
fi
uuid='^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
tls=(--private-key=/etc/ovn/tls/tls.key --certificate=/etc/ovn/tls/tls.crt --ca-cert=/etc/ovn/tls/ca.crt)
while true; do
  id="$(ovs-vsctl --db=unix:/run/openvswitch/db.sock --timeout=5 --if-exists get Open_vSwitch . external_ids:system-id 2>/dev/null | tr -d '"')"
  if [[ "${id}" =~ ${uuid} ]]; then
    # --no-leader-only: any member of a clustered Southbound answers.
    row="$(ovn-sbctl --db="${OVN_SB_CONNECTION}" --no-leader-only --timeout=5 "${tls[@]}" \
      --bare --columns=name find Chassis_Private name="${id}" 2>/dev/null)"
    if [[ "${row}" == "${id}" ]]; then
      echo "chassis ${id} is registered in the Southbound database"
      exit 0
    fi
  fi
  sleep 2
done
