#!/usr/bin/env bash
# End-to-end check of the devstack: bring it up with two compute clusters,
# check what the README promises, run up again to prove it is idempotent,
# and tear it down to prove nothing is left running.
#
# It uses its own state directory, so it never touches a developer's
# .devstack.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
state="${E2E_DEVSTACK_DIR:-$root/.devstack-e2e}"
anvil="$root/bin/anvil"
kubectl=("$root/bin/kubectl" --kubeconfig "$state/kubeconfig")

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

cleanup() {
  local rc=$?
  if [[ $rc != 0 && -f "$state/operator.log" ]]; then
    echo "--- operator log (last 40 lines) ---" >&2
    tail -40 "$state/operator.log" >&2 || true
  fi
  "$anvil" devstack down --state-dir "$state" >/dev/null 2>&1 || true
  exit $rc
}
trap cleanup EXIT

go build -o "$anvil" ./cmd/anvil

# A stale stack from an aborted run would hide bugs in `up`.
"$anvil" devstack down --state-dir "$state" >/dev/null

"$anvil" devstack up --state-dir "$state" --compute-clusters 2

for cluster in compute-a compute-b; do
  for i in 1 2 3; do
    node="$cluster-node-$i"
    ready="$("${kubectl[@]}" --context "anvil-$cluster" get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')"
    zone="$("${kubectl[@]}" --context "anvil-$cluster" get node "$node" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}')"
    [[ "$ready" == "True" ]] || fail "$node on $cluster is not Ready ($ready)"
    [[ "$zone" == "$cluster-zone-$i" ]] || fail "$node has zone '$zone', want $cluster-zone-$i"
  done
  count="$("${kubectl[@]}" --context "anvil-$cluster" get nodes --no-headers | wc -l)"
  [[ "$count" == 3 ]] || fail "$cluster has $count nodes, want 3"
  pass "$cluster has 3 Ready nodes with zone labels"
done

crds="$("${kubectl[@]}" --context anvil-mgmt get crd -o name)"
for crd in controlplanes.c5c3.io novas.nova.openstack.c5c3.io novacomputes.nova.openstack.c5c3.io \
  ovncentrals.ovn.openstack.c5c3.io ovnchassis.ovn.openstack.c5c3.io \
  neutronmetadataagents.neutron.openstack.c5c3.io; do
  grep -qx "customresourcedefinition.apiextensions.k8s.io/$crd" <<<"$crds" || fail "CRD $crd is missing"
done
pass "the management cluster lists the six kinds"

# Capture first: `grep -q` would close the pipe early and, under pipefail,
# turn kubectl's SIGPIPE into a failure.
explained="$("${kubectl[@]}" --context anvil-mgmt explain novacompute.status.conditions)" \
  || fail "kubectl explain novacompute.status.conditions failed"
grep -q "FIELD: conditions" <<<"$explained" || fail "kubectl explain does not describe status.conditions"
pass "kubectl explain novacompute.status.conditions works"

for cluster in compute-a compute-b; do
  label="$("${kubectl[@]}" --context anvil-mgmt -n c5c3-clusters get secret "$cluster" \
    -o jsonpath='{.metadata.labels.sigs\.k8s\.io/multicluster-runtime-kubeconfig}')"
  [[ "$label" == "true" ]] || fail "registration Secret $cluster lacks its label"
done
pass "both compute clusters are registered"

# The operator's registry engages each registration and says so on the Secret.
for cluster in compute-a compute-b; do
  engaged=""
  for _ in $(seq 1 60); do
    engaged="$("${kubectl[@]}" --context anvil-mgmt -n c5c3-clusters get events \
      --field-selector "reason=ClusterEngaged,involvedObject.name=$cluster" -o name)"
    [[ -n "$engaged" ]] && break
    sleep 1
  done
  [[ -n "$engaged" ]] || fail "the operator did not engage $cluster"
done
pass "the operator engaged both compute clusters"

for cluster in mgmt compute-a compute-b; do
  "${kubectl[@]}" --context "anvil-$cluster" get namespace openstack >/dev/null || fail "$cluster lacks namespace openstack"
done
pass "every cluster has namespace openstack"

pid_before="$(cat "$state/operator.pid")"
"$anvil" devstack up --state-dir "$state" --compute-clusters 2 >"$state/second-up.log"
pid_after="$(cat "$state/operator.pid")"
[[ "$pid_before" == "$pid_after" ]] || fail "a second up restarted the operator ($pid_before -> $pid_after)"
grep -q "already running mgmt, compute-a, compute-b" "$state/second-up.log" || fail "a second up did not find the clusters running"
pass "a second up changes nothing"

"$anvil" devstack status --state-dir "$state" | tee "$state/status.txt"
grep -q "^operator *ready" "$state/status.txt" || fail "status does not report the operator ready"

"$anvil" devstack down --state-dir "$state"
sleep 1
if leftovers="$(pgrep -fa -- "$state")"; then
  fail "processes survived down: $leftovers"
fi
[[ ! -e "$state" ]] || fail "down left $state behind"
pass "down stopped every process and removed the state"
trap - EXIT
echo "devstack e2e: 1 passed, 0 failed"
