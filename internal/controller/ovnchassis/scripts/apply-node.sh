#!/bin/bash
# Writes this node's chassis identity and settings into its OVS database
# (docs/design/ovn.md, "Chassis"). The node's entry in the chassis's nodes
# ConfigMap says what; it appears once the operator rendered it.
set -euo pipefail
entry="/etc/ovn/nodes/${NODE_NAME}"
for _ in $(seq 120); do [[ -s "${entry}" ]] && break; sleep 1; done
[[ -s "${entry}" ]] || { echo "no entry for node ${NODE_NAME} in the nodes ConfigMap" >&2; exit 1; }
# shellcheck disable=SC1090
source "${entry}"
db=(--db=unix:/run/openvswitch/db.sock)
set_ids=(
  external_ids:system-id="${SYSTEM_ID}"
  external_ids:hostname="${NODE_NAME}"
  external_ids:ovn-remote="${OVN_REMOTE}"
  external_ids:ovn-remote-probe-interval="${OVN_REMOTE_PROBE_INTERVAL_MS}"
  external_ids:ovn-encap-type="${ENCAP_TYPE}"
  external_ids:ovn-encap-ip="${NODE_IP}"
)
ovs-vsctl "${db[@]}" set Open_vSwitch . "${set_ids[@]}"
if [[ -n "${BRIDGE_MAPPINGS:-}" ]]; then
  ovs-vsctl "${db[@]}" set Open_vSwitch . external_ids:ovn-bridge-mappings="${BRIDGE_MAPPINGS}"
  IFS=, read -ra pairs <<<"${BRIDGE_MAPPINGS}"
  for pair in "${pairs[@]}"; do ovs-vsctl "${db[@]}" --may-exist add-br "${pair#*:}"; done
else
  ovs-vsctl "${db[@]}" remove Open_vSwitch . external_ids ovn-bridge-mappings
fi
if [[ "${GATEWAY:-false}" == true ]]; then
  ovs-vsctl "${db[@]}" set Open_vSwitch . external_ids:ovn-cms-options=enable-chassis-as-gw
else
  ovs-vsctl "${db[@]}" remove Open_vSwitch . external_ids ovn-cms-options
fi
