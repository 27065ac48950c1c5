#!/bin/bash
# Runs one member of a clustered OVN database (docs/design/ovn.md, "Central
# database members"). Everything it needs comes from its environment and
# its mounts, so the pod runner can do the same from the same inputs.
set -euo pipefail

case "${OVN_DB}" in
  nb) schema=/usr/share/ovn/ovn-nb.ovsschema db_name=OVN_Northbound table=NB_Global ;;
  sb) schema=/usr/share/ovn/ovn-sb.ovsschema db_name=OVN_Southbound table=SB_Global ;;
  *) echo "OVN_DB is '${OVN_DB}'; want nb or sb" >&2; exit 2 ;;
esac

domain="${OVN_PEER_SERVICE}.${POD_NAMESPACE}.svc.cluster.local"
self="ssl:${POD_NAME}.${domain}:${OVN_RAFT_PORT}"
first="ssl:${OVN_PEER_SERVICE}-0.${domain}:${OVN_RAFT_PORT}"
db="/var/lib/ovn/ovn${OVN_DB}_db.db"
run=/var/run/ovn
ctl="${run}/ovn${OVN_DB}_db.ctl"
tls=(--private-key=/etc/ovn/tls/tls.key --certificate=/etc/ovn/tls/tls.crt --ca-cert=/etc/ovn/tls/ca.crt)
mkdir -p "${run}"

# A claim that already holds the database restarts the member from it; only
# an empty claim creates (member 0) or joins (every other member) the
# cluster. Joining through member 0 is enough: Raft tells the joiner about
# the others.
if [[ ! -s "${db}" ]]; then
  if [[ "${POD_NAME}" == "${OVN_PEER_SERVICE}-0" ]]; then
    ovsdb-tool create-cluster "${db}" "${schema}" "${self}"
  else
    ovsdb-tool join-cluster "${db}" "${db_name}" "${self}" "${first}"
  fi
fi

# The Southbound's second listener has no RBAC role: northd and the relay
# write rows no chassis may. It is given on the command line, not in the
# connection table, so a relay, which takes its listeners from that table,
# never opens it; no Service publishes it outside the cluster.
internal=()
if [[ -n "${OVN_DB_INTERNAL_PORT:-}" ]]; then
  internal=(--remote="pssl:${OVN_DB_INTERNAL_PORT}")
fi

ovsdb-server "${db}" \
  --pidfile="${run}/ovn${OVN_DB}_db.pid" --unixctl="${ctl}" \
  --remote="punix:${run}/ovn${OVN_DB}_db.sock" \
  --remote="db:${db_name},${table},connections" \
  "${internal[@]}" "${tls[@]}" --log-file=/dev/stdout &
server=$!
trap 'kill -TERM "${server}"; wait "${server}"' TERM INT

# The client listener lives in the database, where every member reads it,
# so only the leader writes it; a follower's write would be redirected
# anyway. The probe interval applies to clients, not to Raft.
for _ in $(seq 60); do
  if ovs-appctl -t "${ctl}" cluster/status "${db_name}" 2>/dev/null | grep -q '^Role: leader'; then
    # Chassis dial the Southbound's client port, which carries OVN's
    # ovn-controller role: a chassis may change only the rows named after
    # the common name of its certificate, its system-id.
    if [[ "${OVN_DB}" == nb ]]; then ctl_cmd=ovn-nbctl role=(); else ctl_cmd=ovn-sbctl role=(role=ovn-controller); fi
    "${ctl_cmd}" --db="unix:${run}/ovn${OVN_DB}_db.sock" --inactivity-probe="${OVN_INACTIVITY_PROBE_MS}" \
      set-connection "${role[@]}" "pssl:${OVN_DB_PORT}" || true
    # The election timer can only double per change, so it climbs in steps.
    timer=1000
    while (( timer < OVN_ELECTION_TIMER_MS )); do
      timer=$(( timer * 2 > OVN_ELECTION_TIMER_MS ? OVN_ELECTION_TIMER_MS : timer * 2 ))
      ovs-appctl -t "${ctl}" cluster/change-election-timer "${db_name}" "${timer}" || break
    done
    break
  fi
  if ovs-appctl -t "${ctl}" cluster/status "${db_name}" 2>/dev/null | grep -q '^Role: follower'; then
    break
  fi
  sleep 1
done
wait "${server}"
