#!/usr/bin/env bash
# End-to-end check of the whole guide "Connect a compute cluster" on one
# fresh devstack with two compute clusters: step 1 (guide-step1.sh), steps
# 2 to 7 on compute-a (guide-steps.sh), then steps 4 to 6 repeated on
# compute-b with names of its own, as the guide says for every further
# cluster. With a pool on each cluster, guide-rotation.sh rotates the
# broker credential and the service password, one pool RollingUpdate and
# one OnDelete, and takes a node out of compute-a's pool. Then compute-a's
# pool goes, and compute-b is detached in the guide's order: the pool,
# then the metadata agent, then the chassis. After the detach nothing Anvil
# wrote is left on compute-b, and each copy's reaping is seen as an event.
# First, `anvil-dev guide-check` fails the run if a command of the guide is
# run by none of these scripts, or a manifest of it is applied by none as
# written, and the user guide in docs/ does not say why the devstack
# leaves it out.
#
# It uses its own state directory, so it never touches a developer's
# .devstack. With E2E_GUIDE_ON_STACK set it runs on the devstack that
# test/e2e/devstack.sh started in E2E_GUIDE_DIR, and leaves it up:
# `make test-e2e` brings one devstack up for both scripts.
set -euo pipefail
# Name the command that stopped the script; the text is the script's, with
# its variables unexpanded, so no secret shows.
trap 'echo "FAIL: ${BASH_SOURCE[0]##*/}:$LINENO: \"$BASH_COMMAND\" exited $?" >&2' ERR

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
state="${E2E_GUIDE_DIR:-$root/.devstack-guide-e2e}"
anvil_dev="$root/bin/anvil-dev"
export PATH="$root/bin:$PATH"
export KUBECONFIG="$state/kubeconfig"
export OS_CLIENT_CONFIG_FILE="${ANVIL_OPENSTACK_DIR:-$root/.devstack/openstack}/clouds.yaml" OS_CLOUD=anvil
# The seed guide's text, when this checkout sits beside it; the command
# list in test/e2e/guide-commands.txt is checked against it then.
seed="${ANVIL_GUIDE_SEED:-$root/../shared/seed/connect-a-compute-cluster.txt}"

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

cleanup() {
  local rc=$?
  if [[ $rc != 0 && -f "$state/operator.log" ]]; then
    echo "--- operator log (last 40 lines) ---" >&2
    tail -40 "$state/operator.log" | sed -E 's#//([^:/@]+):[^@]*@#//\1:<redacted>@#g' >&2 || true
  fi
  rm -f "$root/nova-metadata-ca.crt"
  # E2E_GUIDE_KEEP leaves a failed run's devstack up, to look at it; a
  # devstack the script did not start is its starter's to take down.
  [[ -n "${E2E_GUIDE_ON_STACK:-}" || ( $rc != 0 && -n "${E2E_GUIDE_KEEP:-}" ) ]] ||
    "$anvil_dev" devstack down --state-dir "$state" >/dev/null 2>&1 || true
  exit $rc
}
trap cleanup EXIT

go build -o "$anvil_dev" ./internal/dev/cmd/anvil-dev
# The command list is checked first: a guide that changed fails in seconds.
"$anvil_dev" guide-check --seed "$seed" --commands test/e2e/guide-commands.txt \
  --manifests test/e2e/guide-manifests.yaml --guide docs/guides/connect-a-compute-cluster.md \
  test/e2e/guide.sh test/e2e/guide-step1.sh test/e2e/guide-steps.sh test/e2e/guide-rotation.sh

if [[ -z "${E2E_GUIDE_ON_STACK:-}" ]]; then
  "$anvil_dev" devstack down --state-dir "$state" >/dev/null
  mkdir -p "$state"
  "$anvil_dev" devstack up --state-dir "$state" --compute-clusters 2 | tee "$state/up.log"
fi

export E2E_GUIDE_SHARED=1 E2E_GUIDE_DIR="$state"
test/e2e/guide-step1.sh
test/e2e/guide-steps.sh
unset E2E_GUIDE_SHARED

# Every kind has an object on compute-a now: once they settle, GitOps
# tools read each of them Current.
for _ in $(seq 120); do "$anvil_dev" kstatus --context anvil-mgmt >"$state/kstatus-guide.log" 2>&1 && break; sleep 1; done
"$anvil_dev" kstatus --context anvil-mgmt >"$state/kstatus-guide.log" 2>&1 ||
  { cat "$state/kstatus-guide.log" >&2; fail "kstatus does not read every Anvil object of the guide Current"; }
pass "kstatus reads all $(cut -f1 "$state/kstatus-guide.log" | sort -u | wc -l) kinds Current ($(wc -l <"$state/kstatus-guide.log") objects)"

# ---- Step 7's fixtures. K-ORC makes them for the hypervisor operator in
# production; the devstack runs no K-ORC, so anvil-dev makes them through
# the real Keystone, Nova, Neutron and the Glance stub (no Cinder, so no
# volume type). Then the guide's checks find every one.
"$anvil_dev" devstack fixtures --state-dir "$state" >/dev/null || fail "step 7: anvil-dev devstack fixtures failed"
openstack --insecure domain show cc3test >/dev/null || fail "step 7: no domain cc3test"
openstack --insecure image show cirros-kvm >/dev/null || fail "step 7: no image cirros-kvm"
openstack --insecure flavor show 1 >/dev/null || fail "step 7: no flavor 1"
openstack --insecure flavor show hvo-smoke-test >/dev/null || fail "step 7: no flavor hvo-smoke-test"
openstack --insecure network show hvo-smoke-test >/dev/null || fail "step 7: no network hvo-smoke-test"
openstack --insecure project show test --domain cc3test >/dev/null || fail "step 7: no project test in cc3test"
rows="$(openstack --insecure role assignment list --user hypervisor-operator \
  --user-domain Default --project test --project-domain cc3test --role admin -f value)"
[[ -n "$rows" ]] || fail "step 7: hypervisor-operator holds no admin on test"
pass "step 7: the hypervisor operator's fixtures exist, and it holds admin on cc3test/test"

# ---- Steps 4 to 6 again, for compute-b, with names of its own.
export COMPUTE_CLUSTER=compute-b COMPUTE_CONTEXT=anvil-compute-b
kubectl config use-context anvil-mgmt >/dev/null
node_b=compute-b-node-1
kubectl --context "$COMPUTE_CONTEXT" label node "$node_b" openstack.c5c3.io/chassis=true >/dev/null
kubectl apply -f - <<EOF >/dev/null
apiVersion: ovn.openstack.c5c3.io/v1alpha1
kind: OVNChassis
metadata:
  name: controlplane-compute-b-chassis
  namespace: openstack
spec:
  centralRef:
    name: controlplane-ovn
  nodeSelector:
    openstack.c5c3.io/chassis: "true"
  targetClusterRef:
    name: ${COMPUTE_CLUSTER}
EOF
kubectl wait ovnchassis/controlplane-compute-b-chassis -n openstack \
  --for=condition=Ready --timeout=10m >/dev/null || fail "compute-b: the chassis is not Ready"

kubectl get secret nova-metadata-nip-io-tls -n openstack \
  -o jsonpath='{.data.ca\.crt}' | base64 -d > nova-metadata-ca.crt
kubectl --context "$COMPUTE_CONTEXT" create secret generic nova-metadata-ca \
  -n openstack --from-file=ca.crt=nova-metadata-ca.crt >/dev/null
rm -f nova-metadata-ca.crt
kubectl apply -f - <<EOF >/dev/null
apiVersion: neutron.openstack.c5c3.io/v1alpha1
kind: NeutronMetadataAgent
metadata:
  name: controlplane-compute-b-metadata
  namespace: openstack
spec:
  openStackRelease: "2026.1"
  image:
    repository: ghcr.io/c5c3/neutron
    tag: "2026.1"
  chassisRef:
    name: controlplane-compute-b-chassis
  targetClusterRef:
    name: ${COMPUTE_CLUSTER}
  novaMetadata:
    host: nova-metadata.127-0-0-1.nip.io
    port: 8443
    protocol: https
    caBundleSecretRef:
      name: nova-metadata-ca
    sharedSecretRef:
      name: controlplane-nova-metadata-agent-secret
EOF
# Only compute-a-node-1 runs the agent for real (see MetadataAgentNode in
# internal/dev/devstack): compute-b's pods are played by its pod runner, so
# Ready here proves the agent's objects and the copy, not a served request.
kubectl wait neutronmetadataagent/controlplane-compute-b-metadata -n openstack \
  --for=condition=Ready --timeout=5m >/dev/null || fail "compute-b: the metadata agent is not Ready"

kubectl --context "$COMPUTE_CONTEXT" label node "$node_b" openstack.c5c3.io/nova-compute-pool=b >/dev/null
kubectl apply -f - <<EOF >/dev/null
apiVersion: nova.openstack.c5c3.io/v1alpha1
kind: NovaCompute
metadata:
  name: controlplane-compute-b
  namespace: openstack
spec:
  novaRef:
    name: controlplane-nova
  nodeSelector:
    openstack.c5c3.io/nova-compute-pool: b
  targetClusterRef:
    name: ${COMPUTE_CLUSTER}
  libvirt:
    virtType: kvm
EOF
kubectl wait novacompute/controlplane-compute-b -n openstack \
  --for=condition=Ready --timeout=10m >/dev/null || fail "compute-b: the pool is not Ready"
listed="$(kubectl --context "$COMPUTE_CONTEXT" get secret controlplane-nova-compute-config \
  controlplane-nova-hypervisor-operator-auth controlplane-nova-metadata-agent-secret -n openstack -o name)"
[[ "$(wc -l <<<"$listed")" == 3 ]] || fail "compute-b lacks a copy: $listed"
pass "compute-b: the chassis, the agent (pods played, not a real agent) and the pool are Ready, with the mirror, the auth copy and the metadata copy"

# ---- Rotation with a RollingUpdate pool on compute-a and an OnDelete pool
# on compute-b, and a node leaving compute-a's pool.
test/e2e/guide-rotation.sh

# compute-a's pool goes as the guide's detach says: deleting it drains and
# releases the node.
kubectl delete novacompute controlplane-compute-a -n openstack --timeout=30m >/dev/null
services="$(openstack --insecure compute service list --service nova-compute -f value -c Host)"
if grep -qx compute-a-node-1 <<<"$services"; then fail "the service of compute-a-node-1 survived the pool"; fi
while read -r tr; do openstack --insecure trait delete "$tr" >/dev/null 2>&1 || true; done <"$state/e2e-traits"
pass "deleting compute-a's pool released compute-a-node-1"

# ---- Detach compute-b in the guide's order: the pools, then the agent,
# then the chassis. No server runs there, so nothing needs emptying first.
kubectl delete novacompute controlplane-compute-b -n openstack --timeout=30m >/dev/null
kubectl delete neutronmetadataagent controlplane-compute-b-metadata -n openstack --timeout=5m >/dev/null
kubectl delete ovnchassis controlplane-compute-b-chassis -n openstack --timeout=5m >/dev/null

# Nothing Anvil wrote is left: no copy, no workload, no ConfigMap. What
# stays is what the script made by hand (the CA bundle) and what every
# namespace has. The copies are the ControlPlane's, which deletes them in
# the pass that sees the last pool and agent gone: the inventory in its
# status stops naming compute-b then.
leftovers() {
  kubectl --context "$COMPUTE_CONTEXT" get secrets,configmaps,daemonsets,deployments,jobs -n openstack \
    -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}{"\n"}{end}' \
    | grep -vx -e Secret/nova-metadata-ca -e ConfigMap/kube-root-ca.crt || true
}
for _ in $(seq 1 60); do
  listed="$(kubectl get controlplane controlplane -n openstack -o jsonpath='{range .status.deliveries[*]}{.cluster}{"\n"}{end}' | grep -cx compute-b || true)"
  [[ "$listed" == 0 && -z "$(leftovers)" ]] && break
  sleep 1
done
left="$(leftovers)"
[[ -z "$left" ]] || fail "detaching compute-b left these behind: $left"
[[ "$listed" == 0 ]] || fail "the ControlPlane still lists $listed copies on compute-b"
reaped() {
  kubectl get events -n openstack --field-selector "reason=$1,involvedObject.name=controlplane" -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' \
    | grep compute-b || true
}
mirror_events="$(reaped ComputeConfigMirrorReaped)"
grep -q controlplane-nova-compute-config <<<"$mirror_events" || fail "no ComputeConfigMirrorReaped event for the mirror: $mirror_events"
grep -q controlplane-nova-hypervisor-operator-auth <<<"$mirror_events" || fail "no ComputeConfigMirrorReaped event for the auth copy: $mirror_events"
[[ -n "$(reaped MetadataSharedSecretMirrorReaped)" ]] \
  || fail "no MetadataSharedSecretMirrorReaped event for the metadata copy"
# compute-a keeps its agent's copy: only the last agent naming it reaps it.
kubectl --context anvil-compute-a get secret controlplane-nova-metadata-agent-secret -n openstack >/dev/null \
  || fail "detaching compute-b took compute-a's metadata copy"
pass "detaching compute-b left nothing Anvil wrote there, and each reaping was an event"

# ---- Standalone Nova, without a ControlPlane. The devstack's Nova is the
# ControlPlane's, so the script declares a second one that nothing owns,
# with the same Keystone, bus and databases and no metadata route. Its API
# pods find the control plane's ports taken and never start, which a pool
# does not need: it takes the contract and the host discovery databases,
# published before any pod. The pool names its image, since such a Nova
# reports no installed release. The operator admits this Nova's Keystone
# because the devstack lists it in allowedKeystoneHosts.
NOVA=standalone-nova
kubectl get nova controlplane-nova -n openstack -o json \
  | jq --arg name "$NOVA" '{apiVersion, kind, metadata: {name: $name, namespace: .metadata.namespace},
      spec: (.spec | del(.metadata.gateway) | .replicas = 1)}' \
  | kubectl apply -f - >/dev/null
kubectl wait nova/"$NOVA" -n openstack --timeout=5m \
  --for=jsonpath='{.status.remoteComputeConfigSecretRef.name}'="${NOVA}-remote-compute-config" >/dev/null \
  || fail "standalone: $NOVA published no ${NOVA}-remote-compute-config"
kubectl get secret "${NOVA}-remote-compute-config" -n openstack -o json \
  | jq --arg name "${NOVA}-compute-config" '{apiVersion, kind, type, data, metadata: {name: $name}}' \
  | kubectl --context "$COMPUTE_CONTEXT" apply --server-side -n openstack -f - >/dev/null
kubectl --context "$COMPUTE_CONTEXT" annotate secret "${NOVA}-compute-config" \
  -n openstack kubectl.kubernetes.io/last-applied-configuration- >/dev/null
annotations="$(kubectl --context "$COMPUTE_CONTEXT" get secret "${NOVA}-compute-config" -n openstack -o jsonpath='{.metadata.annotations}')"
[[ -z "$annotations" || "$annotations" == "{}" ]] || fail "standalone: the hand copy carries annotations: $(jq -c 'keys' <<<"$annotations")"
kubectl --context "$COMPUTE_CONTEXT" label node "$node_b" openstack.c5c3.io/nova-compute-pool=b --overwrite >/dev/null
kubectl apply -f - <<EOF >/dev/null
apiVersion: nova.openstack.c5c3.io/v1alpha1
kind: NovaCompute
metadata:
  name: standalone-compute-b
  namespace: openstack
spec:
  novaRef:
    name: ${NOVA}
  image:
    repository: ghcr.io/c5c3/nova-compute
    tag: "2026.1"
  nodeSelector:
    openstack.c5c3.io/nova-compute-pool: b
  targetClusterRef:
    name: ${COMPUTE_CLUSTER}
  libvirt:
    virtType: kvm
EOF
kubectl wait novacompute/standalone-compute-b -n openstack \
  --for=condition=Ready --timeout=10m >/dev/null || fail "standalone: the pool on the hand copy is not Ready"
state_b="$(openstack --insecure compute service list --service nova-compute --host "$node_b" -f value -c State)"
[[ "$state_b" == up ]] || fail "standalone: nova-compute on $node_b reads ${state_b:-nothing}, want up"
pass "standalone: the hand copy of ${NOVA}-remote-compute-config, without the last-applied annotation, runs a Ready pool on compute-b"

# The copy carries no mirror label, so the pool's teardown leaves it; the
# user deletes it, and then the Nova.
kubectl delete novacompute standalone-compute-b -n openstack --timeout=30m >/dev/null
kubectl --context "$COMPUTE_CONTEXT" get secret "${NOVA}-compute-config" -n openstack >/dev/null \
  || fail "standalone: the pool's teardown deleted the hand copy"
kubectl --context "$COMPUTE_CONTEXT" delete secret "${NOVA}-compute-config" -n openstack >/dev/null
kubectl delete nova "$NOVA" -n openstack --timeout=5m >/dev/null
pass "standalone: deleting the pool left the hand copy, as the guide says"

# The broker user of the rotation outlives the devstack, as the database
# does; nothing uses it any more.
hack/openstack/openstack.sh bus-user delete anvil-rotated >/dev/null
if [[ -z "${E2E_GUIDE_ON_STACK:-}" ]]; then
  test/e2e/leak-census.sh "$state"
  "$anvil_dev" devstack down --state-dir "$state" >/dev/null
fi
trap - EXIT
echo "guide e2e: passed"
