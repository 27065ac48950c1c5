#!/bin/bash
# Prepares a hypervisor node for Open vSwitch (docs/design/ovn.md,
# "Chassis"): the kernel modules, the run directories and the OVS database.
set -euo pipefail
modprobe openvswitch
modprobe geneve || true
install -d -o 42424 -g 42424 -m 0755 /run/openvswitch /run/ovn
if [[ -s /etc/openvswitch/conf.db ]]; then
  # A node that ran an older OVS keeps its database, in the new schema.
  ovsdb-tool convert /etc/openvswitch/conf.db /usr/share/openvswitch/vswitch.ovsschema
else
  ovsdb-tool create /etc/openvswitch/conf.db /usr/share/openvswitch/vswitch.ovsschema
fi
