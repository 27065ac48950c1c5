#!/usr/bin/env bash
# The guide's "Rotation" and "Remove a node", on the devstack that
# test/e2e/guide.sh started, with a pool on each compute cluster:
# controlplane-compute-a (RollingUpdate) and controlplane-compute-b, which
# this script puts on OnDelete. Two rotations run in turn, the broker
# credential and then the nova service user's password. For each, the
# compute-a pool rolls by itself, while compute-b's pod keeps running, its
# DaemonSetReady reads DaemonSetProgressing and the ControlPlane's
# ComputeRotationComplete names compute-b, until the script deletes that
# pod. A build pinned to each host then proves that the new credentials
# work. Last, a second node joins compute-a's pool and leaves it again.
#
# Where the devstack differs from a production cloud: the broker and
# Keystone are the service set's, so hack/openstack/openstack.sh stands in
# for the broker's and Keystone's admins (bus-user, service-password). No
# secret is ever an argument of a process or printed.
set -euo pipefail
# Name the command that stopped the script; the text is the script's, with
# its variables unexpanded, so no secret shows.
trap 'echo "FAIL: ${BASH_SOURCE[0]##*/}:$LINENO: \"$BASH_COMMAND\" exited $?" >&2' ERR

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
state="${E2E_GUIDE_DIR:?run by test/e2e/guide.sh, on its devstack}"
export PATH="$root/bin:$PATH"
export KUBECONFIG="$state/kubeconfig"
export OS_CLIENT_CONFIG_FILE="${ANVIL_OPENSTACK_DIR:-$root/.devstack/openstack}/clouds.yaml" OS_CLOUD=anvil
bus_user=anvil-rotated
host_a=compute-a-node-1 host_b=compute-b-node-1 host_a2=compute-a-node-2

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# new_password prints a random password of URL-safe characters.
new_password() { head -c 24 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'; }

# patch_secret_key NAME KEY sets one key of a management-cluster Secret to
# the value on stdin. The value travels in the patch on stdin, never as an
# argument, and kubectl patch leaves no last-applied annotation.
patch_secret_key() {
  local encoded
  encoded="$(base64 -w0)"
  printf '{"data":{"%s":"%s"}}' "$2" "$encoded" \
    | kubectl patch secret "$1" -n openstack --type merge --patch-file /dev/stdin >/dev/null
}

# service_column HOST COLUMN prints a column of HOST's nova-compute
# service, empty when there is none, and "?" when Nova did not answer.
service_column() {
  openstack --insecure compute service list --service nova-compute --host "$1" -f value -c "$2" 2>/dev/null || echo "?"
}

pool_pod() { # CONTEXT POOL NODE: the uid of the pool's running pod there
  kubectl --context "$1" get pods -n openstack --field-selector "spec.nodeName=$3" \
    -l "app.kubernetes.io/instance=$2,app.kubernetes.io/component=nova-compute" \
    -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.uid}{end}'
}

# wait_back CONTEXT POOL NODE OLD_UID SINCE WHAT waits for a new pod and then
# for a heartbeat after SINCE: the old process's heartbeat keeps the service
# up for a while, and a new process sends one only once it consumes its
# queue, so through the broker with the credential it was given.
wait_back() {
  local now heartbeat=""
  for _ in $(seq 1 150); do
    now="$(pool_pod "$1" "$2" "$3")"
    if [[ -n "$now" && "$now" != "$4" ]]; then
      # While a rotated password rolls the control plane, the old nova-api
      # cannot check tokens and answers 503; ask again. nova-compute beats
      # every 10 s and each client call costs a core a second and a half,
      # so Nova is asked at most every 5 s.
      heartbeat="$(service_column "$3" "Updated At")"
      [[ "${heartbeat:0:19}" > "$5" ]] && return 0
      sleep 3
    fi
    sleep 2
  done
  fail "$6: nova-compute on $3 did not come back (last heartbeat ${heartbeat:-none}, since $5)"
}

cluster_hash() { # CLUSTER: the contract hash its mirror carries
  kubectl get controlplane controlplane -n openstack \
    -o jsonpath="{.status.computeClusters[?(@.name==\"$1\")].contractHash}"
}
rolled_out() { # POOL: the contract hash every pod of the pool runs
  kubectl get novacompute "$1" -n openstack -o jsonpath='{.status.rolledOutContractHash}'
}
condition() { # KIND NAME TYPE FIELD
  kubectl get "$1" "$2" -n openstack -o jsonpath="{.status.conditions[?(@.type==\"$3\")].$4}"
}

# observe_rotation WHAT A_POD B_POD SINCE A_HASH B_HASH checks what the guide says
# of a rotation: both mirrors change, compute-a rolls by itself, compute-b
# waits for its pod's deletion, and then both run the new contract.
observe_rotation() {
  local what=$1 a_pod=$2 b_pod=$3 since=$4 a_hash=$5 b_hash=$6 new_a="" new_b="" rotation
  # While the management cluster's Nova rolls, as a new service password
  # makes it, the ControlPlane waits for it before it writes the mirrors.
  for _ in $(seq 1 300); do
    new_a="$(cluster_hash compute-a)" new_b="$(cluster_hash compute-b)"
    [[ -n "$new_a" && "$new_a" != "$a_hash" && -n "$new_b" && "$new_b" != "$b_hash" ]] && break
    sleep 1
  done
  [[ "$new_a" != "$a_hash" && "$new_b" != "$b_hash" ]] || fail "$what: the mirrors kept their contract"
  wait_back anvil-compute-a controlplane-compute-a "$host_a" "$a_pod" "$since" "$what (RollingUpdate)"
  kubectl wait novacompute/controlplane-compute-a -n openstack --timeout=5m \
    --for=jsonpath='{.status.rolledOutContractHash}'="$new_a" >/dev/null \
    || fail "$what: compute-a's pool did not roll out the new contract"
  [[ "$(pool_pod anvil-compute-b controlplane-compute-b "$host_b")" == "$b_pod" ]] \
    || fail "$what: the OnDelete pool's pod was replaced without a delete"
  [[ "$(rolled_out controlplane-compute-b)" == "$b_hash" ]] || fail "$what: the OnDelete pool claims the new contract"
  [[ "$(condition novacompute controlplane-compute-b DaemonSetReady reason)" == DaemonSetProgressing ]] \
    || fail "$what: the OnDelete pool's DaemonSetReady does not read DaemonSetProgressing"
  # The ControlPlane learns of compute-a's rollout on its next pass past
  # its Nova, which may still be rolling.
  for _ in $(seq 1 180); do
    rotation="$(condition controlplane controlplane ComputeRotationComplete status)/$(condition controlplane controlplane ComputeRotationComplete message)"
    [[ "$rotation" == False/*"behind: compute-b (pools rolling out: controlplane-compute-b)"* && "$rotation" != *"compute-a ("* ]] && break
    sleep 1
  done
  [[ "$rotation" == False/*"behind: compute-b (pools rolling out: controlplane-compute-b)"* && "$rotation" != *"compute-a ("* ]] \
    || fail "$what: ComputeRotationComplete does not name compute-b alone: $rotation"
  pass "$what: compute-a rolled by itself; compute-b waits, with DaemonSetProgressing and ComputeRotationComplete naming it"

  since="$(date -u +%Y-%m-%dT%H:%M:%S)"
  kubectl --context anvil-compute-b delete pod -n openstack \
    -l app.kubernetes.io/name=novacompute,app.kubernetes.io/instance=controlplane-compute-b,app.kubernetes.io/component=nova-compute \
    --field-selector "spec.nodeName=${host_b}" >/dev/null
  wait_back anvil-compute-b controlplane-compute-b "$host_b" "$b_pod" "$since" "$what (OnDelete)"
  kubectl wait novacompute/controlplane-compute-b -n openstack --timeout=5m \
    --for=jsonpath='{.status.rolledOutContractHash}'="$new_b" >/dev/null \
    || fail "$what: compute-b's pool did not roll out the new contract after the delete"
  kubectl wait controlplane/controlplane -n openstack \
    --for=condition=ComputeRotationComplete --timeout=30m >/dev/null \
    || fail "$what: ComputeRotationComplete did not turn True"
  pass "$what: deleting compute-b's pod rolled it, and ComputeRotationComplete is True"
}

# pinned_build NAME HOST ZONE boots a server on HOST and deletes it again.
pinned_build() {
  local status
  openstack --insecure server create "$1" --image cirros-kvm --flavor 1 \
    --network lab-net --availability-zone "$3:$2" --wait >/dev/null 2>&1 || true
  status="$(openstack --insecure server show "$1" -f value -c status 2>/dev/null || echo missing)"
  openstack --insecure server delete --wait "$1" >/dev/null 2>&1 || true
  [[ "$status" == ACTIVE ]] || fail "a build pinned to $2 after the rotations reads $status"
}

kubectl config use-context anvil-mgmt >/dev/null
kubectl wait novacompute/controlplane-compute-a novacompute/controlplane-compute-b -n openstack \
  --for=condition=Ready --timeout=10m >/dev/null || fail "the two pools are not Ready"

# compute-b's pool goes OnDelete. The strategy is no part of the pod
# template, so nothing restarts.
b_pod="$(pool_pod anvil-compute-b controlplane-compute-b "$host_b")"
kubectl patch novacompute controlplane-compute-b -n openstack --type merge \
  -p '{"spec":{"updateStrategy":{"type":"OnDelete"}}}' >/dev/null
kubectl wait novacompute/controlplane-compute-b -n openstack --timeout=2m \
  --for=jsonpath='{.status.observedGeneration}'="$(kubectl get novacompute controlplane-compute-b -n openstack -o jsonpath='{.metadata.generation}')" >/dev/null
strategy="$(kubectl --context anvil-compute-b get daemonset controlplane-compute-b-nova-compute -n openstack -o jsonpath='{.spec.updateStrategy.type}')"
[[ "$strategy" == OnDelete ]] || fail "compute-b's DaemonSet reads $strategy, not OnDelete"
[[ "$(pool_pod anvil-compute-b controlplane-compute-b "$host_b")" == "$b_pod" ]] || fail "switching to OnDelete restarted the pod"
kubectl wait controlplane/controlplane -n openstack --for=condition=ComputeRotationComplete --timeout=5m >/dev/null \
  || fail "ComputeRotationComplete is not True before the rotations"

# ---- The broker credential: a second user on the broker, and the URL
# handed over in step 1 rewritten to it. Only the remote contract reads
# that Secret, so the management cluster's Nova keeps the first user.
bus_pw="$(new_password)"
printf '%s\n' "$bus_pw" | hack/openstack/openstack.sh bus-user add "$bus_user" >/dev/null
old_url="$(kubectl get secret controlplane-nova-remote-transport -n openstack -o go-template='{{index .data "transport_url" | base64decode}}')"
[[ "$old_url" =~ ^(rabbit://)[^:@/]+:[^@]*@(.*)$ ]] || fail "the handed-over URL is not rabbit://USER:PASSWORD@..."
new_url="${BASH_REMATCH[1]}${bus_user}:${bus_pw}@${BASH_REMATCH[2]}"
a_pod="$(pool_pod anvil-compute-a controlplane-compute-a "$host_a")" b_pod="$(pool_pod anvil-compute-b controlplane-compute-b "$host_b")"
a_hash="$(cluster_hash compute-a)" b_hash="$(cluster_hash compute-b)"
since="$(date -u +%Y-%m-%dT%H:%M:%S)"
printf '%s' "$new_url" | patch_secret_key controlplane-nova-remote-transport transport_url
observe_rotation "bus credential" "$a_pod" "$b_pod" "$since" "$a_hash" "$b_hash"
for ctx in anvil-compute-a anvil-compute-b; do
  mirrored="$(kubectl --context "$ctx" get secret controlplane-nova-compute-config -n openstack -o go-template='{{index .data "transport_url" | base64decode}}')"
  [[ "$mirrored" == "$new_url" ]] || fail "bus credential: the mirror on $ctx does not carry the new URL"
done
unset old_url new_url bus_pw mirrored
pass "bus credential: both mirrors carry the new user's URL, and both nova-computes heartbeat through it"

# ---- The nova service user's password: set in Keystone first (the
# devstack's service set also rewrites neutron-server's [nova] section),
# then in the Secret the ControlPlane reads. The management cluster's Nova
# rolls as well; its Ready waits for that.
svc_pw="$(new_password)"
a_pod="$(pool_pod anvil-compute-a controlplane-compute-a "$host_a")" b_pod="$(pool_pod anvil-compute-b controlplane-compute-b "$host_b")"
a_hash="$(cluster_hash compute-a)" b_hash="$(cluster_hash compute-b)"
since="$(date -u +%Y-%m-%dT%H:%M:%S)"
printf '%s\n' "$svc_pw" | hack/openstack/openstack.sh service-password nova >/dev/null
printf '%s' "$svc_pw" | patch_secret_key devstack-nova-password password
unset svc_pw
observe_rotation "service password" "$a_pod" "$b_pod" "$since" "$a_hash" "$b_hash"
kubectl wait controlplane/controlplane -n openstack --for=condition=Ready --timeout=10m >/dev/null \
  || fail "service password: the ControlPlane is not Ready after the rotation"

# Builds pinned to each host go through Keystone, Placement, Neutron and
# the broker with the rotated credentials. The hypervisor operator's part:
# compute-b's host joins its zone's aggregate, which the zone:host form needs.
zone_of() { kubectl --context "$1" get node "$2" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}'; }
zone_a="$(zone_of anvil-compute-a "$host_a")" zone_b="$(zone_of anvil-compute-b "$host_b")"
# The ControlPlane reads Ready once the new nova-api pods are; an old one
# can still answer 503 on the port they share until it is gone, so ask
# again for a while.
aggregates=""
for _ in $(seq 1 30); do
  aggregates="$(openstack --insecure aggregate list --long -f value -c Name -c "Availability Zone" 2>/dev/null)" && break
  aggregates=""
  sleep 2
done
aggregate_b="$(awk -v z="$zone_b" '$2 == z {print $1}' <<<"$aggregates")"
[[ -n "$aggregate_b" ]] || fail "compute-b's pool created no aggregate for $zone_b"
openstack --insecure aggregate add host "${aggregate_b%%$'\n'*}" "$host_b" >/dev/null 2>&1 || true
pinned_build e2e-rotated-a "$host_a" "$zone_a"
pinned_build e2e-rotated-b "$host_b" "$zone_b"
pass "after both rotations a build pinned to each host turns ACTIVE"

# ---- Remove a node: a second node joins compute-a's pool, then leaves it
# by the guide's command, with no server on it.
kubectl --context anvil-compute-a label node "$host_a2" openstack.c5c3.io/nova-compute-pool=a >/dev/null
# Nova is asked only once the pool's status agrees: each client call
# costs a core a second and a half.
for _ in $(seq 1 150); do
  phase="$(kubectl get novacompute controlplane-compute-a -n openstack -o jsonpath="{.status.nodes[?(@.name==\"$host_a2\")].phase}")"
  svc=""
  [[ "$phase" == Active ]] && svc="$(service_column "$host_a2" State)"
  [[ "$phase" == Active && "$svc" == up ]] && break
  sleep 2
done
[[ "$phase" == Active && "$svc" == up ]] || fail "remove a node: $host_a2 did not join the pool (phase ${phase:-none}, service ${svc:-none})"
export COMPUTE_CONTEXT=anvil-compute-a
kubectl --context "$COMPUTE_CONTEXT" label node "$host_a2" openstack.c5c3.io/nova-compute-pool- >/dev/null
for _ in $(seq 1 150); do
  listed="$(kubectl get novacompute controlplane-compute-a -n openstack -o jsonpath='{range .status.nodes[*]}{.name}{"\n"}{end}')"
  svc=unasked
  grep -qx "$host_a2" <<<"$listed" || svc="$(service_column "$host_a2" State)"
  ! grep -qx "$host_a2" <<<"$listed" && [[ -z "$svc" ]] && break
  sleep 2
done
! grep -qx "$host_a2" <<<"$listed" && [[ -z "$svc" ]] || fail "remove a node: $host_a2 is still in the pool or Nova (service ${svc:-none})"
events="$(kubectl get events -n openstack --field-selector involvedObject.name=controlplane-compute-a \
  -o jsonpath='{range .items[*]}{.reason} {.message}{"\n"}{end}')"
for reason in ComputeServiceDisabled ComputeServiceDeleted; do
  grep -q "^$reason .*$host_a2" <<<"$events" || fail "remove a node: no $reason event names $host_a2"
done
[[ -n "$(pool_pod anvil-compute-a controlplane-compute-a "$host_a")" ]] || fail "remove a node: $host_a lost its pod"
pass "remove a node: $host_a2 drained, its service was disabled and deleted, and it left the pool's status"
