#!/bin/bash
# Moves gateway duties off a chassis that lost its gateway role: removes
# every Gateway_Chassis and HA_Chassis row naming it in one transaction,
# then checks that none is left.
set -euo pipefail
nb=(--db="${OVN_NB_DB}" --private-key=/etc/ovn/tls/tls.key --certificate=/etc/ovn/tls/tls.crt --ca-cert=/etc/ovn/tls/ca.crt)
cmds=()
for row in $(ovn-nbctl "${nb[@]}" --bare --columns=_uuid find Gateway_Chassis chassis_name="${SYSTEM_ID}"); do
  cmds+=(-- destroy Gateway_Chassis "${row}")
done
for row in $(ovn-nbctl "${nb[@]}" --bare --columns=_uuid find HA_Chassis chassis_name="${SYSTEM_ID}"); do
  cmds+=(-- destroy HA_Chassis "${row}")
done
if (( ${#cmds[@]} > 0 )); then ovn-nbctl "${nb[@]}" "${cmds[@]:1}"; fi
left="$(ovn-nbctl "${nb[@]}" --bare --columns=_uuid find Gateway_Chassis chassis_name="${SYSTEM_ID}")"
left+="$(ovn-nbctl "${nb[@]}" --bare --columns=_uuid find HA_Chassis chassis_name="${SYSTEM_ID}")"
[[ -z "${left}" ]] || { echo "rows still name chassis ${SYSTEM_ID}" >&2; exit 1; }
