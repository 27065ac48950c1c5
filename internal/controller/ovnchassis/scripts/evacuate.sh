#!/bin/bash
# Moves gateway duties off a chassis that lost its gateway role: takes
# every Gateway_Chassis and HA_Chassis row naming it out of the router
# ports and HA groups that hold it, in one transaction, then checks that
# none is left. The rows are not in root tables, so destroying them does
# nothing while they are referenced; dropping the last reference deletes
# them.
set -euo pipefail
nb=(--db="${OVN_NB_DB}" --private-key=/etc/ovn/tls/tls.key --certificate=/etc/ovn/tls/tls.crt --ca-cert=/etc/ovn/tls/ca.crt)
rows() { ovn-nbctl "${nb[@]}" --bare --columns=_uuid find "$@"; }
cmds=()
for row in $(rows Gateway_Chassis chassis_name="${SYSTEM_ID}"); do
  for port in $(rows Logical_Router_Port "gateway_chassis{>=}${row}"); do
    cmds+=(-- remove Logical_Router_Port "${port}" gateway_chassis "${row}")
  done
done
for row in $(rows HA_Chassis chassis_name="${SYSTEM_ID}"); do
  for group in $(rows HA_Chassis_Group "ha_chassis{>=}${row}"); do
    cmds+=(-- remove HA_Chassis_Group "${group}" ha_chassis "${row}")
  done
done
if (( ${#cmds[@]} > 0 )); then ovn-nbctl "${nb[@]}" "${cmds[@]:1}"; fi
left="$(rows Gateway_Chassis chassis_name="${SYSTEM_ID}")$(rows HA_Chassis chassis_name="${SYSTEM_ID}")"
[[ -z "${left}" ]] || { echo "rows still name chassis ${SYSTEM_ID}" >&2; exit 1; }
