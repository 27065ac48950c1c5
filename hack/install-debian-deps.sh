#!/usr/bin/env bash
# Installs the Debian packages the tests use, and nothing when they are
# already there:
#
# - python3-nova brings oslo-config-validator, which checks the rendered
#   compute contract against real Nova's option definitions;
# - jq runs the guide's commands in the e2e scripts as the guide writes them;
# - ovn-central, ovn-host and openvswitch-switch are OVN's and OVS's
#   programs (ovsdb-server, ovn-northd, ovn-controller, ovs-vswitchd), which
#   hack/openstack/openstack.sh runs for Neutron and the tests run as chassis;
# - neutron-common holds neutron-server, neutron-db-manage and
#   neutron-ovn-metadata-agent. The neutron-server and
#   neutron-ovn-metadata-agent packages add only init scripts, a default ini
#   and uwsgi's plugin, so the smaller package is enough;
# - the OVN metadata agent starts one haproxy per network and runs
#   iptables-save in its namespaces, and neither is a dependency of Neutron's;
#   ethtool turns off checksum offload on test veths, without which the
#   userspace datapath drops their TCP.
#
# It never starts a daemon: a policy-rc.d that exits 101 stands while apt
# runs, and Neutron's debconf questions are answered "false", so its
# maintainer scripts touch no database and configure no bus or Keystone.
set -euo pipefail

want=(
  python3-nova jq
  ovn-central ovn-host openvswitch-switch neutron-common
  haproxy iptables ethtool
)
missing=()
for pkg in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "debian deps: up to date"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "debian deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "debian deps: installing ${missing[*]}"
started=$SECONDS

for q in configure_db configure_rabbit configure_ksat configure_nova; do
  echo "neutron-common neutron/$q boolean false"
done | $sudo debconf-set-selections

# An existing policy-rc.d (container images often have one) is kept aside
# and put back; a copy left by an earlier run that died is the original.
policy=/usr/sbin/policy-rc.d
backup=$policy.anvil-saved
if [[ -e $backup ]]; then
  :
elif [[ -e $policy ]]; then
  $sudo cp -a "$policy" "$backup"
else
  backup=""
fi
restore_policy() {
  if [[ -n $backup ]]; then
    $sudo mv -f "$backup" "$policy"
  else
    $sudo rm -f "$policy"
  fi
}
trap restore_policy EXIT
printf '#!/bin/sh\n# hack/install-debian-deps.sh: start no daemon\nexit 101\n' | $sudo tee "$policy" >/dev/null
$sudo chmod 0755 "$policy"

$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  -o DPkg::Lock::Timeout=600 \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
  "${missing[@]}" >/dev/null
restore_policy
trap - EXIT

for bin in oslo-config-validator neutron-server neutron-db-manage ovsdb-server ovn-northd ovn-controller ovs-vswitchd haproxy; do
  command -v "$bin" >/dev/null || { echo "debian deps: $bin is still missing" >&2; exit 1; }
done
echo "debian deps: installed ${missing[*]} in $((SECONDS - started))s"
