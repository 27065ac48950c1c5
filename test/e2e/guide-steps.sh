#!/usr/bin/env bash
# End-to-end check of steps 2 to 7 of the guide "Connect a compute cluster"
# on a fresh devstack with the OpenStack services: the hypervisor
# operator's account is created in the real Keystone, the metadata API is
# published through the devstack's Gateway and answers a signed request for
# a booted server, the OVN chassis on compute-a joins the devstack's
# central and Neutron binds a booted server's port to it, the metadata
# agent serves that server its own meta_data.json through the real
# datapath, before and after a rotation of the shared secret, and the
# pool's nova-compute pods and the host discovery Job run as real processes
# through the pod runners, against the Nova that Anvil runs.
#
# The guide's commands run as written, with COMPUTE_CLUSTER and
# COMPUTE_CONTEXT exported as it asks and <node>, <namespace> and file
# paths filled in, and the agent's port set to the devstack's 8443 as the
# guide says. Around them, the script plays the parts no devstack runs:
# step 1's bus hand-over (with the devstack's own TLS URL, through stdin),
# the access chart's install, the hypervisor, which plugs a server's port
# into the node's br-int (anvil-dev vm), and the hypervisor operator,
# which creates a Hypervisor per node and reports the traits it applied.
# The K-ORC fixtures of step 7 are outside this check; see the guide.
#
# It uses its own state directory, so it never touches a developer's
# .devstack. With E2E_GUIDE_SHARED set it runs on the devstack in
# E2E_GUIDE_DIR that test/e2e/guide.sh started, and leaves it up.
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
export COMPUTE_CLUSTER=compute-a COMPUTE_CONTEXT=anvil-compute-a
node=compute-a-node-1

plugged=() servers=()

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# refuses WHAT FIELD CMD... runs CMD as a server-side dry run, which
# admission must refuse with an error that matches FIELD (a grep -E
# pattern naming the field): kubectl prints a webhook's field errors
# without a fixed prefix, and a webhook the apiserver cannot reach fails
# with another text, so the field is what tells a refusal apart.
refuses() {
  local what="$1" field="$2" out
  shift 2
  if out="$("$@" --dry-run=server 2>&1)"; then
    fail "admission accepted $what"
  fi
  grep -Eq "$field" <<<"$out" || fail "the refusal of $what does not match $field: $out"
}

cleanup() {
  local rc=$?
  if [[ $rc != 0 && -f "$state/operator.log" ]]; then
    echo "--- operator log (last 60 lines) ---" >&2
    tail -60 "$state/operator.log" | sed -E 's#//([^:/@]+):[^@]*@#//\1:<redacted>@#g' >&2 || true
    kubectl get novacompute -n openstack -o yaml 2>/dev/null | tail -60 >&2 || true
  fi
  # A plugged instance's namespace is the script's own; the runner does
  # not know it.
  for p in "${plugged[@]}"; do
    "$anvil_dev" vm unplug --state-dir "$state" --port "$p" >/dev/null 2>&1 || true
  done
  # A server left behind would hold its host in the shared database.
  for s in ${server:-} "${servers[@]}"; do
    openstack --insecure server delete "$s" >/dev/null 2>&1 || true
  done
  [[ -z "${added_to:-}" ]] || openstack --insecure aggregate remove host "$added_to" "$node" >/dev/null 2>&1 || true
  # Under guide.sh the devstack is the caller's, which takes it down.
  [[ -n "${E2E_GUIDE_SHARED:-}" ]] || "$anvil_dev" devstack down --state-dir "$state" >/dev/null 2>&1 || true
  exit $rc
}
trap cleanup EXIT

if [[ -z "${E2E_GUIDE_SHARED:-}" ]]; then
  go build -o "$anvil_dev" ./internal/dev/cmd/anvil-dev
  "$anvil_dev" devstack down --state-dir "$state" >/dev/null
  mkdir -p "$state"
  "$anvil_dev" devstack up --state-dir "$state" --compute-clusters 1 >"$state/up.log"
fi
kubectl config use-context anvil-mgmt >/dev/null

# The guide starts from a ControlPlane whose Nova is Ready.
for _ in $(seq 1 120); do
  kubectl get nova controlplane-nova -n openstack >/dev/null 2>&1 && break
  sleep 1
done
kubectl wait controlplane/controlplane -n openstack --for=condition=Ready --timeout=3m >/dev/null \
  || fail "the sample ControlPlane is not Ready"

# A setting removed the way GitOps removes it (issue #34): the console
# proxy set and then unset with merge patches. The ControlPlane must read
# Ready on its new generation and the Nova's console proxy must be what it
# was before, as for a ControlPlane that never set one. Its fields are
# compared: server-side apply leaves the emptied object null where a
# Nova that never had one reads {}, and both mean no console proxy.
proxy() { kubectl get nova controlplane-nova -n openstack -o jsonpath='{.spec.consoleProxy.enabled}/{.spec.consoleProxy.hostname}'; }
never="$(proxy)"
kubectl patch controlplane controlplane -n openstack --type merge \
  -p '{"spec":{"services":{"nova":{"consoleProxy":{"enabled":true,"hostname":"console.127-0-0-1.nip.io"}}}}}' >/dev/null
kubectl wait nova/controlplane-nova -n openstack --timeout=2m \
  --for=jsonpath='{.spec.consoleProxy.hostname}'=console.127-0-0-1.nip.io >/dev/null \
  || fail "unset: the Nova never took the console proxy"
kubectl patch controlplane controlplane -n openstack --type merge \
  -p '{"spec":{"services":{"nova":{"consoleProxy":null}}}}' >/dev/null
gen="$(kubectl get controlplane controlplane -n openstack -o jsonpath='{.metadata.generation}')"
kubectl wait controlplane/controlplane -n openstack --timeout=3m \
  --for=jsonpath='{.status.conditions[?(@.type=="Ready")].observedGeneration}'="$gen" >/dev/null \
  || fail "unset: no pass of the ControlPlane on generation $gen"
kubectl wait controlplane/controlplane -n openstack --for=condition=Ready --timeout=3m >/dev/null \
  || fail "unset: the ControlPlane is not Ready after consoleProxy was removed: $(kubectl get controlplane controlplane -n openstack \
    -o jsonpath='{.status.conditions[?(@.type=="NovaReady")].message}')"
now="$(proxy)"
[[ "$now" == "$never" ]] || fail "unset: the Nova's consoleProxy reads [$now], want [$never] as before"
pass "unset: the console proxy set and removed with merge patches; the ControlPlane is Ready and the Nova as before"

# Step 1, as the guide runs it: the external bus URL goes in on stdin. On the
# devstack it is the TLS listener's URL, which the sample bus Secret holds.
kubectl get secret devstack-bus -n openstack -o go-template='{{index .data "transport_url" | base64decode}}' \
  | kubectl create secret generic controlplane-nova-remote-transport -n openstack --from-file=transport_url=/dev/stdin >/dev/null
kubectl patch controlplane controlplane -n openstack --type merge \
  -p '{"spec":{"services":{"nova":{"remoteCompute":{"transportURLSecretRef":{"name":"controlplane-nova-remote-transport"}}}}}}' >/dev/null
kubectl wait nova/controlplane-nova -n openstack --timeout=5m \
  --for=jsonpath='{.status.remoteComputeConfigSecretRef.name}'=controlplane-nova-remote-compute-config >/dev/null
pass "step 1: the Nova publishes the remote contract"

# ---- Step 2, as written. The devstack's sample already asks for the
# account, as the quick start's does, so the patch changes nothing there.
kubectl patch controlplane controlplane -n openstack --type merge \
  -p '{"spec":{"services":{"nova":{"hypervisorOperator":{}}}}}' >/dev/null
kubectl wait --for=create secret/controlplane-nova-hypervisor-operator-auth \
  -n openstack --timeout=10m >/dev/null
keys="$(kubectl get secret controlplane-nova-hypervisor-operator-auth -n openstack -o json \
  | jq '.data | keys')"
want_keys='["auth_url","password","project_domain_name","project_name","region_name","user_domain_name","username"]'
[[ "$(jq -c . <<<"$keys")" == "$want_keys" ]] || fail "step 2: jq lists $keys, want $want_keys"
# The account exists in the real Keystone, with admin on its project.
roles="$(openstack --insecure role assignment list --user hypervisor-operator --user-domain Default \
  --project service-hypervisor-operator --project-domain Default --names -f value -c Role)"
grep -qx admin <<<"$roles" || fail "step 2: hypervisor-operator holds [$roles] on service-hypervisor-operator, want admin"
pass "step 2: the auth Secret lists its seven keys, and hypervisor-operator holds admin in Keystone"

# ---- Step 3, as written: the devstack's Gateway openstack-gw carries the
# listener https-nova-metadata, and the dev gateway accepts the route.
before="$(kubectl get nova controlplane-nova -n openstack \
  -o jsonpath='{.status.conditions[?(@.type=="MetadataHTTPRouteReady")].reason}')"
[[ "$before" == HTTPRouteNotRequired ]] || fail "step 3: MetadataHTTPRouteReady reads $before before the patch"
kubectl patch controlplane controlplane -n openstack --type merge \
  -p '{"spec":{"services":{"nova":{"metadataGateway":{"parentRef":{"name":"openstack-gw"},"hostname":"nova-metadata.127-0-0-1.nip.io"}}}}}' >/dev/null
kubectl wait nova/controlplane-nova -n openstack --timeout=5m \
  --for=jsonpath='{.status.conditions[?(@.type=="MetadataHTTPRouteReady")].reason}'=HTTPRouteAccepted >/dev/null \
  || fail "step 3: the metadata route was not accepted"
backend="$(kubectl get httproute controlplane-nova-metadata -n openstack \
  -o jsonpath='{.spec.rules[0].backendRefs[0].name}:{.spec.rules[0].backendRefs[0].port}')"
[[ "$backend" == controlplane-nova-metadata:8775 ]] || fail "step 3: the route points at $backend"
pass "step 3: HTTPRoute controlplane-nova-metadata is accepted by openstack-gw"

# The guide's prerequisite: the access chart, as "Register a compute
# cluster" installs it, which the devstack did before it registered the
# cluster with the chart's token; step 7 upgrades it.
helm status --kube-context "$COMPUTE_CONTEXT" target-cluster-access -n c5c3-access >/dev/null \
  || fail "prerequisite: the devstack installed no release target-cluster-access in c5c3-access on $COMPUTE_CONTEXT"

# ---- Step 4, as written.
kubectl patch ovncentral controlplane-ovn -n openstack --type merge \
  -p '{"spec":{"northbound":{"externallyReachable":true},"southbound":{"externallyReachable":true}}}' >/dev/null
kubectl --context "$COMPUTE_CONTEXT" label node "$node" openstack.c5c3.io/chassis=true >/dev/null
kubectl apply -f - <<EOF >/dev/null
apiVersion: ovn.openstack.c5c3.io/v1alpha1
kind: OVNChassis
metadata:
  name: controlplane-compute-chassis
  namespace: openstack
spec:
  centralRef:
    name: controlplane-ovn
  nodeSelector:
    openstack.c5c3.io/chassis: "true"
  targetClusterRef:
    name: ${COMPUTE_CLUSTER}
EOF
kubectl wait ovnchassis/controlplane-compute-chassis -n openstack \
  --for=condition=Ready --timeout=10m >/dev/null || fail "step 4: the chassis is not Ready"
listed="$(kubectl --context "$COMPUTE_CONTEXT" get secret controlplane-compute-chassis-ovn-client \
  -n openstack -L app.kubernetes.io/component)"
# One key, the central's CA: its client key stays on the management cluster.
grep -Eq '^controlplane-compute-chassis-ovn-client +Opaque +1 +.* ovn-client$' <<<"$listed" \
  || fail "step 4: the client copy is not listed with COMPONENT ovn-client: $listed"
name="$(kubectl get ovnchassis controlplane-compute-chassis -n openstack \
  -o jsonpath='{.status.clientSecretName}{"\n"}')"
[[ "$name" == controlplane-compute-chassis-ovn-client ]] || fail "step 4: status.clientSecretName is '$name'"
# Neutron reads the central's Southbound: the node's chassis is its agent.
agents="$(openstack --insecure network agent list --host "$node" -f value -c "Agent Type" -c Alive)"
grep -q "OVN Controller agent" <<<"$agents" || fail "step 4: Neutron lists no OVN Controller agent on $node: $agents"
pass "step 4: the chassis on $node is Ready, its client copy is labelled ovn-client, and Neutron sees its agent"

# The security review's reproduction: a chassis runs privileged on the host
# network, so one from a foreign registry, or one that tolerates every
# taint, is refused by the same policy a pool obeys.
refuses "an OVNChassis from a foreign registry" 'spec\.image\.repository.*is not allowed' kubectl apply -f - <<EOF
apiVersion: ovn.openstack.c5c3.io/v1alpha1
kind: OVNChassis
metadata:
  name: e2e-foreign-chassis
  namespace: openstack
spec:
  centralRef:
    name: controlplane-ovn
  image:
    repository: registry.invalid/evil/ovn
    tag: latest
  nodeSelector:
    openstack.c5c3.io/chassis: "true"
  targetClusterRef:
    name: ${COMPUTE_CLUSTER}
EOF
refuses "an OVNChassis that tolerates every taint" 'spec\.tolerations\[0\].*operator Exists without a key' \
  kubectl patch ovnchassis controlplane-compute-chassis -n openstack --type merge \
  -p '{"spec":{"tolerations":[{"operator":"Exists"}]}}'
pass "step 4: admission refuses a chassis from a foreign registry and one that tolerates every taint"

# ---- Step 5, as written, with the CA file in the script's state and the
# devstack's port 8443.
kubectl get secret nova-metadata-nip-io-tls -n openstack \
  -o jsonpath='{.data.ca\.crt}' | base64 -d > "$state/nova-metadata-ca.crt"
kubectl --context "$COMPUTE_CONTEXT" create secret generic nova-metadata-ca \
  -n openstack --from-file=ca.crt="$state/nova-metadata-ca.crt" >/dev/null
kubectl apply -f - <<EOF >/dev/null
apiVersion: neutron.openstack.c5c3.io/v1alpha1
kind: NeutronMetadataAgent
metadata:
  name: controlplane-compute-metadata
  namespace: openstack
spec:
  openStackRelease: "2026.1"
  image:
    repository: ghcr.io/c5c3/neutron
    tag: "2026.1"
  chassisRef:
    name: controlplane-compute-chassis
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
copy_rows() {
  kubectl --context "$COMPUTE_CONTEXT" get secret controlplane-nova-metadata-agent-secret \
    -n openstack -L neutron.openstack.c5c3.io/metadata-shared-secret-mirror 2>/dev/null || true
}
for _ in $(seq 1 60); do grep -qE '^controlplane-nova-metadata-agent-secret +Opaque +1 +.* true$' <<<"$(copy_rows)" && break; sleep 1; done
listed="$(copy_rows)"
grep -qE '^controlplane-nova-metadata-agent-secret +Opaque +1 +.* true$' <<<"$listed" \
  || fail "step 5: the copy is not listed with one key and true in the label column: $listed"
keys="$(kubectl --context "$COMPUTE_CONTEXT" get secret controlplane-nova-metadata-agent-secret -n openstack \
  -o go-template='{{range $k, $v := .data}}{{$k}} {{end}}')"
[[ "$keys" == "shared_secret " ]] || fail "step 5: the copy holds the keys '$keys'"
kubectl wait neutronmetadataagent/controlplane-compute-metadata -n openstack \
  --for=condition=Ready --timeout=5m >/dev/null || fail "step 5: the agent is not Ready: $(kubectl get neutronmetadataagent \
  controlplane-compute-metadata -n openstack -o jsonpath='{range .status.conditions[*]}{.type}={.status}/{.reason} {end}')"
pass "step 5: the agent is Ready, and its copy of the shared secret is on compute-a with only shared_secret, labelled true"
refuses "a NeutronMetadataAgent from a foreign registry" 'spec\.image\.repository.*is not allowed' \
  kubectl patch neutronmetadataagent controlplane-compute-metadata -n openstack --type merge \
  -p '{"spec":{"image":{"repository":"registry.invalid/evil/neutron"}}}'
pass "step 5: admission refuses a metadata agent from a foreign registry"

# A shared secret that is not Nova's is refused with a condition, and the
# DaemonSet is left as it was. The value goes to kubectl on stdin.
template_hash() {
  kubectl --context "$COMPUTE_CONTEXT" get daemonset controlplane-compute-metadata-metadata-agent -n openstack \
    -o jsonpath='{.spec.template.metadata.annotations.neutron\.c5c3\.io/metadata-secret-hash}'
}
set_shared_secret_ref() {
  kubectl patch neutronmetadataagent controlplane-compute-metadata -n openstack --type merge \
    -p "{\"spec\":{\"novaMetadata\":{\"sharedSecretRef\":{\"name\":\"$1\"}}}}" >/dev/null
}
before_hash="$(template_hash)"
head -c 24 /dev/urandom | base64 | kubectl --context "$COMPUTE_CONTEXT" create secret generic e2e-not-novas-secret \
  -n openstack --from-file=shared_secret=/dev/stdin >/dev/null
set_shared_secret_ref e2e-not-novas-secret
kubectl wait neutronmetadataagent/controlplane-compute-metadata -n openstack --timeout=2m \
  --for=jsonpath='{.status.conditions[?(@.type=="SecretsReady")].reason}'=SharedSecretMismatch >/dev/null \
  || fail "step 5: a shared secret that is not Nova's is not reported under SharedSecretMismatch"
[[ "$(template_hash)" == "$before_hash" ]] || fail "step 5: the DaemonSet rolled onto a shared secret Nova refuses"
set_shared_secret_ref controlplane-nova-metadata-agent-secret
kubectl wait neutronmetadataagent/controlplane-compute-metadata -n openstack \
  --for=condition=Ready --timeout=3m >/dev/null || fail "step 5: the agent is not Ready again on the copy"
kubectl --context "$COMPUTE_CONTEXT" delete secret e2e-not-novas-secret -n openstack >/dev/null
pass "step 5: a shared secret that is not Nova's reads SharedSecretMismatch and leaves the DaemonSet as it was"

# ---- Step 6. A copy made by hand with an earlier guide, without the label.
kubectl --context "$COMPUTE_CONTEXT" create namespace legacy-compute >/dev/null
kubectl --context "$COMPUTE_CONTEXT" create secret generic controlplane-nova-compute-config -n legacy-compute \
  --from-literal=cell_name=cell1 >/dev/null
listed="$(kubectl --context "$COMPUTE_CONTEXT" get secret -A \
  --field-selector metadata.name=controlplane-nova-compute-config \
  -L nova.openstack.c5c3.io/compute-config-mirror)"
grep -q "^legacy-compute " <<<"$listed" || fail "the hand-made copy is not listed: $listed"
kubectl --context "$COMPUTE_CONTEXT" delete secret -n legacy-compute \
  --field-selector metadata.name=controlplane-nova-compute-config \
  -l 'nova.openstack.c5c3.io/compute-config-mirror!=true' >/dev/null
if kubectl --context "$COMPUTE_CONTEXT" get secret controlplane-nova-compute-config -n legacy-compute >/dev/null 2>&1; then
  fail "the unlabelled copy survived its delete"
fi
pass "step 6: the unlabelled copy is listed and deleted by label"

kubectl --context "$COMPUTE_CONTEXT" label node "$node" openstack.c5c3.io/nova-compute-pool=a >/dev/null
kubectl apply -f - <<EOF >/dev/null
apiVersion: nova.openstack.c5c3.io/v1alpha1
kind: NovaCompute
metadata:
  name: controlplane-compute-a
  namespace: openstack
spec:
  novaRef:
    name: controlplane-nova
  nodeSelector:
    openstack.c5c3.io/nova-compute-pool: a
  targetClusterRef:
    name: ${COMPUTE_CLUSTER}
  libvirt:
    virtType: kvm
EOF

# mirror_rows lists the two delivered copies on compute-a with the mirror
# label's column, as the guide's step 6 does.
mirror_rows() {
  kubectl --context "$COMPUTE_CONTEXT" get secret controlplane-nova-compute-config \
    controlplane-nova-hypervisor-operator-auth -n openstack \
    -L nova.openstack.c5c3.io/compute-config-mirror 2>/dev/null || true
}
# wait_mirror waits up to $2 seconds for the Secret $1 to be listed with
# the mirror label true, then leaves the last listing in $mirror.
wait_mirror() {
  for _ in $(seq 1 "$2"); do
    mirror="$(mirror_rows)"
    grep -qE "^$1 .* true\$" <<<"$mirror" && return 0
    sleep 1
  done
  return 1
}
wait_mirror controlplane-nova-compute-config 60 || fail "the mirror is not labelled true: $mirror"
# The auth copy arrives once step 2 provisioned the hypervisor operator's
# account and the pool made compute-a a target.
wait_mirror controlplane-nova-hypervisor-operator-auth 30 \
  || fail "step 2: the auth Secret's copy is not on compute-a with the mirror label: $mirror"
pass "step 2: the auth Secret's copy is on compute-a, labelled as a mirror"
kubectl wait novacompute/controlplane-compute-a -n openstack \
  --for=condition=Ready --timeout=10m >/dev/null
reason="$(kubectl get controlplane controlplane -n openstack \
  -o jsonpath='{.status.conditions[?(@.type=="NovaReady")].reason}{"\n"}')"
[[ "$reason" == NovaReady ]] || fail "the ControlPlane's NovaReady reads $reason"
services="$(openstack --insecure compute service list --service nova-compute -f value -c Host -c State)"
grep -qx "$node up" <<<"$services" || fail "no up row for $node: $services"
aggregates="$(kubectl get novacompute controlplane-compute-a -n openstack \
  -o jsonpath='{.status.conditions[?(@.type=="AggregatesReady")].reason}')"
[[ "$aggregates" == NodesOutsideZoneAggregate ]] || fail "AggregatesReady reads $aggregates before the hypervisor operator ran"
pass "step 6: the pool is Ready, $node is an up nova-compute, AggregatesReady reads NodesOutsideZoneAggregate"
# The DaemonSet was written after the preflight Job, on compute-a and from
# the pool's image, reached the devstack's bus, Keystone and Placement.
preflight="$(kubectl get novacompute controlplane-compute-a -n openstack \
  -o jsonpath='{.status.conditions[?(@.type=="PreflightReady")].reason}')"
[[ "$preflight" == PreflightPassed ]] || fail "step 6: PreflightReady reads $preflight"
job="$(kubectl --context "$COMPUTE_CONTEXT" get job controlplane-compute-a-preflight -n openstack -o jsonpath='{.status.succeeded}')"
[[ "$job" == 1 ]] || fail "step 6: the preflight Job on compute-a did not succeed ($job)"
pass "step 6: the preflight Job passed on compute-a before the DaemonSet started"

# extraConfig is an allowlist: a key that loads code or files, swaps the
# driver, or points the pool's credentials at another endpoint is refused,
# naming the key. Dry runs, so the pool is not touched: extra_config
# passes refuses's --dry-run=server on to kubectl.
extra_config() {
  kubectl patch novacompute controlplane-compute-a -n openstack --type merge \
    -p "{\"spec\":{\"extraConfig\":$1}}" "${@:2}"
}
refuses "extraConfig log_config_append" 'spec\.extraConfig\[DEFAULT\]\[log_config_append\]' \
  extra_config '{"DEFAULT":{"log_config_append":"/tmp/logging.conf"}}'
refuses "extraConfig compute_driver" 'spec\.extraConfig\[DEFAULT\]\[compute_driver\]' \
  extra_config '{"DEFAULT":{"compute_driver":"fake.FakeDriver"}}'
refuses "extraConfig [placement] auth_type" 'spec\.extraConfig\[placement\]\[auth_type\]' \
  extra_config '{"placement":{"auth_type":"none"}}'
refuses "extraConfig [placement] endpoint" 'spec\.extraConfig\[placement\]\[endpoint\]' \
  extra_config '{"placement":{"endpoint":"http://127.0.0.1:1/"}}'
pass "step 6: admission refuses extraConfig keys that load code, swap the driver or redirect credentials, naming each"

# ---- Step 3's promise, once a compute runs: a server's metadata through the
# Gateway. The request is signed the way the Neutron metadata agent signs
# it: HMAC-SHA256 of the instance ID with the shared secret. The secret goes
# to the signer on stdin, and the headers to curl in a file, so neither is
# on a command line.
openstack --insecure flavor create --id anvil-e2e-tiny --ram 64 --vcpus 1 --disk 0 anvil-e2e-tiny >/dev/null 2>&1 || true
server="$(openstack --insecure --os-compute-api-version 2.37 server create --image "$(grep -m1 '^ANVIL_OPENSTACK_IMAGE_ID=' "${ANVIL_OPENSTACK_DIR:-$root/.devstack/openstack}/endpoints.env" | cut -d= -f2)" \
  --flavor anvil-e2e-tiny --nic none --wait -f value -c id e2e-metadata)" || fail "booting a server on $node failed"
# --wait prints its progress first; the ID is the last line.
server="$(tail -n1 <<<"$server" | tr -d '[:space:]')"
project="$(openstack --insecure server show "$server" -f value -c project_id)"
metadata_request() { # <shared secret on stdin> -> HTTP status; the body lands in $state/meta_data.json
  local sig
  sig="$(python3 -c 'import hashlib, hmac, sys; print(hmac.new(sys.stdin.buffer.read(), sys.argv[1].encode(), hashlib.sha256).hexdigest())' "$server")"
  umask 077
  printf 'X-Instance-ID: %s\nX-Tenant-ID: %s\nX-Instance-ID-Signature: %s\nX-Forwarded-For: 192.0.2.10\n' \
    "$server" "$project" "$sig" >"$state/metadata-headers"
  curl -sS -o "$state/meta_data.json" -w '%{http_code}' --cacert "$state/nova-metadata-ca.crt" \
    --resolve nova-metadata.127-0-0-1.nip.io:8443:127.0.0.1 -H @"$state/metadata-headers" \
    https://nova-metadata.127-0-0-1.nip.io:8443/openstack/latest/meta_data.json
}
code="$(kubectl get secret controlplane-nova-metadata-secret -n openstack -o jsonpath='{.data.shared_secret}' | base64 -d | metadata_request)"
[[ "$code" == 200 ]] || fail "step 3: the signed metadata request got HTTP $code: $(head -c 300 "$state/meta_data.json")"
uuid="$(jq -r .uuid "$state/meta_data.json")"
[[ "$uuid" == "$server" ]] || fail "step 3: meta_data.json names $uuid, want $server"
code="$(printf 'not-the-shared-secret' | metadata_request)"
[[ "$code" == 403 ]] || fail "step 3: a request signed with a wrong secret got HTTP $code, want 403"
rm -f "$state/metadata-headers"
openstack --insecure server delete --wait "$server" >/dev/null
pass "step 3: through openstack-gw, a signed request returns the server's meta_data.json; a wrong signature gets 403"

# ---- The promise of steps 4 and 5: servers on a network, booted by Nova
# onto the pool's node, get ports Neutron binds to that node's chassis,
# and each reads its own meta_data.json at 169.254.169.254 through the
# node's userspace datapath, the agent's haproxy, the agent, the Gateway
# and Nova's metadata API, before and after a rotation of the shared
# secret. The script plays the hypervisor, which the fake driver does not.
image="$(grep -m1 '^ANVIL_OPENSTACK_IMAGE_ID=' "${ANVIL_OPENSTACK_DIR:-$root/.devstack/openstack}/endpoints.env" | cut -d= -f2)"
openstack --insecure network show e2e-net >/dev/null 2>&1 || openstack --insecure network create e2e-net >/dev/null
openstack --insecure subnet show e2e-subnet >/dev/null 2>&1 \
  || openstack --insecure subnet create e2e-subnet --network e2e-net --subnet-range 10.99.0.0/24 >/dev/null
for name in e2e-ovn-1 e2e-ovn-2; do
  id="$(openstack --insecure server create --image "$image" --flavor anvil-e2e-tiny --network e2e-net \
    --wait -f value -c id "$name")" || fail "step 4: booting $name with a port on $node failed"
  servers+=("$(tail -n1 <<<"$id" | tr -d '[:space:]')")
done
# The port lists are read whole, then cut: head would close the pipe early
# and SIGPIPE would kill the client under pipefail.
metadata_port="$(openstack --insecure port list --network e2e-net --device-owner network:distributed -f value -c ID)"
metadata_ip="$(head -n1 <<<"$metadata_port" | xargs -r openstack --insecure port show -f json -c fixed_ips | jq -r '.fixed_ips[0].ip_address // empty')"
[[ -n "$metadata_ip" ]] || fail "step 5: Neutron made no metadata port on e2e-net"
ports=()
for server in "${servers[@]}"; do
  port="$(openstack --insecure port list --server "$server" -f value -c ID)"
  port="$(head -n1 <<<"$port")"
  binding="$(openstack --insecure port show "$port" -f json -c binding_host_id -c binding_vif_type -c mac_address -c fixed_ips)"
  [[ "$(jq -r .binding_host_id <<<"$binding")" == "$node" ]] || fail "step 4: the port is bound to another host: $binding"
  [[ "$(jq -r .binding_vif_type <<<"$binding")" == ovs ]] || fail "step 4: the port's vif_type is not ovs: $binding"
  "$anvil_dev" vm plug --state-dir "$state" --port "$port" --mac "$(jq -r .mac_address <<<"$binding")" \
    --ip "$(jq -r '.fixed_ips[0].ip_address' <<<"$binding")" --cidr 10.99.0.0/24 --metadata-ip "$metadata_ip" >/dev/null \
    || fail "step 5: plugging the instance of $server into $node's br-int failed"
  plugged+=("$port")
  ports+=("$port")
done
server=""
pass "step 4: the servers' ports are bound to $node with vif_type ovs"

# serve_check reads every instance's meta_data.json once. It fails the
# script at once when an instance is answered with another's uuid, and
# returns success when each got its own; an error or no answer (the agent
# or Nova rolling) is neither.
serve_check() {
  local i got ok=0
  for i in "${!servers[@]}"; do
    got="$("$anvil_dev" vm curl --state-dir "$state" --port "${ports[$i]}" /openstack/latest/meta_data.json 2>/dev/null \
      | jq -r '.uuid // empty' 2>/dev/null || true)"
    if [[ -n "$got" && "$got" != "${servers[$i]}" ]]; then
      fail "step 5: the instance of ${servers[$i]} was answered with the metadata of $got"
    fi
    [[ "$got" == "${servers[$i]}" ]] && ok=$((ok + 1))
  done
  [[ $ok == "${#servers[@]}" ]]
}
served=false
for _ in $(seq 1 60); do serve_check && { served=true; break; }; sleep 2; done
$served || fail "step 5: the instances do not read their meta_data.json: $("$anvil_dev" vm curl --state-dir "$state" \
  --port "${ports[0]}" /openstack/latest/meta_data.json 2>&1 | tail -n3)"
pass "step 5: through 169.254.169.254, each instance on $node reads its own meta_data.json"

# A rotation: the ControlPlane makes a new shared secret when its Secret is
# deleted; Nova's metadata API, the copy on compute-a and the agents all
# move to it. The values are compared by digest, never printed.
copy_digest() {
  kubectl --context "$COMPUTE_CONTEXT" get secret controlplane-nova-metadata-agent-secret -n openstack \
    -o jsonpath='{.data.shared_secret}' | sha256sum | cut -c1-16
}
agent_pods() {
  kubectl --context "$COMPUTE_CONTEXT" get pods -n openstack \
    -l app.kubernetes.io/name=neutronmetadataagent,app.kubernetes.io/instance=controlplane-compute-metadata \
    -o jsonpath='{range .items[*]}{.metadata.uid}{"\n"}{end}'
}
before_digest="$(copy_digest)" before_pods="$(agent_pods)"
kubectl delete secret controlplane-nova-metadata-secret -n openstack >/dev/null
rotated=false
for _ in $(seq 1 150); do
  if [[ "$(copy_digest)" != "$before_digest" ]] && ! grep -qxF -f <(agent_pods) <<<"$before_pods" && serve_check; then
    rotated=true
    break
  fi
  sleep 2
done
$rotated || fail "step 5: after the rotation the copy changed: $([[ "$(copy_digest)" != "$before_digest" ]] && echo yes || echo no), \
the agents rolled: $(grep -qxF -f <(agent_pods) <<<"$before_pods" && echo no || echo yes), and the instances are not served"
kubectl wait neutronmetadataagent/controlplane-compute-metadata -n openstack --for=condition=Ready --timeout=3m >/dev/null \
  || fail "step 5: the agent is not Ready after the rotation"
pass "step 5: after a rotation the copy is rewritten, the agents rolled, and each instance still reads only its own metadata"

for port in "${ports[@]}"; do
  "$anvil_dev" vm unplug --state-dir "$state" --port "$port" >/dev/null
done
plugged=()
# The new shared secret rolls every Nova pod whose configuration carries it,
# nova-api among them: wait for the rollouts, and retry a call that still
# lands on an API process going away.
for deploy in $(kubectl get deployment -n openstack -l app.kubernetes.io/instance=controlplane-nova -o name); do
  kubectl rollout status "$deploy" -n openstack --timeout=3m >/dev/null || fail "step 5: $deploy did not roll out after the rotation"
done
for server in "${servers[@]}"; do
  deleted=false
  for _ in 1 2 3 4 5; do
    if out="$(openstack --insecure server delete --wait "$server" 2>&1)" || grep -q "No server with a name or ID" <<<"$out"; then
      deleted=true
      break
    fi
    sleep 3
  done
  $deleted || fail "step 5: server $server was not deleted: $(tail -n2 <<<"$out")"
done
servers=()

# ---- Step 7.
kubectl --context "$COMPUTE_CONTEXT" label node "$node" \
  nova.openstack.cloud.sap/virt-driver=kvm \
  cobaltcore.cloud.sap/node-hypervisor-lifecycle=skip-tests >/dev/null
kubectl --context "$COMPUTE_CONTEXT" annotate node "$node" nova.openstack.cloud.sap/aggregates= >/dev/null
helm upgrade --kube-context "$COMPUTE_CONTEXT" --reuse-values \
  target-cluster-access deploy/target-cluster/target-cluster-access -n c5c3-access \
  --set hypervisorTraits=true >/dev/null
grants="$(kubectl --context "$COMPUTE_CONTEXT" get clusterrole -o yaml | grep -c 'kvm.cloud.sap' || true)"
[[ "$grants" -ge 1 ]] || fail "the access chart grants nothing on hypervisors after the upgrade"

# The hypervisor operator creates a Hypervisor per labelled node.
kubectl --context "$COMPUTE_CONTEXT" apply -f - >/dev/null <<YAML
apiVersion: kvm.cloud.sap/v1
kind: Hypervisor
metadata:
  name: ${node}
YAML
trait_suffix="E2E$(date +%s)"
kubectl patch novacompute controlplane-compute-a -n openstack --type=merge -p "{\"spec\":{
  \"traits\":[\"CUSTOM_POOL_A_${trait_suffix}\"],
  \"hostTraits\":[{\"nodeName\":\"${node}\",\"traits\":[\"CUSTOM_GPU_${trait_suffix}\"]}]}}" >/dev/null
traits_reason() {
  kubectl get novacompute controlplane-compute-a -n openstack \
    -o jsonpath='{.status.conditions[?(@.type=="TraitsReady")].reason}{"\n"}'
}
for _ in $(seq 1 60); do [[ "$(traits_reason)" == WaitingForHypervisorOperator ]] && break; sleep 1; done
[[ "$(traits_reason)" == WaitingForHypervisorOperator ]] || fail "TraitsReady reads $(traits_reason), want WaitingForHypervisorOperator"
custom="$(kubectl --context "$COMPUTE_CONTEXT" get hypervisor "$node" -o jsonpath='{.spec.customTraits}')"
[[ "$custom" == *"CUSTOM_GPU_${trait_suffix}"* && "$custom" == *"CUSTOM_POOL_A_${trait_suffix}"* ]] \
  || fail "Hypervisor $node has customTraits $custom"
placement="$(openstack --insecure trait list -f value -c name)"
for tr in "CUSTOM_GPU_${trait_suffix}" "CUSTOM_POOL_A_${trait_suffix}"; do
  grep -qx "$tr" <<<"$placement" || fail "trait $tr is not in Placement"
done
pass "step 7: the traits are in Placement and the Hypervisor; TraitsReady reads WaitingForHypervisorOperator"

# The hypervisor operator applies the list and reports it.
kubectl --context "$COMPUTE_CONTEXT" patch hypervisor "$node" --subresource=status --type=merge \
  -p "{\"status\":{\"traits\":${custom}}}" >/dev/null
kubectl --context "$COMPUTE_CONTEXT" annotate node "$node" nova.openstack.cloud.sap/custom-traits- >/dev/null
for _ in $(seq 1 90); do [[ "$(traits_reason)" == TraitsApplied ]] && break; sleep 1; done
[[ "$(traits_reason)" == TraitsApplied ]] || fail "TraitsReady reads $(traits_reason), want TraitsApplied"
pass "step 7: TraitsReady reads TraitsApplied once the Hypervisor shows the traits"

# ---- A hypervisor that receives no builds. The devstack's node runs one of
# Nova's failing fake drivers, chosen by a node annotation the pod runner
# reads when the pod starts, so two builds pinned to it really fail. The
# counter is then read three ways: `anvil diagnose failed-builds` from the
# cell database, the pool's status and its metric. The guide's fix follows:
# disable the service, fix the driver (restart the pod without the
# annotation), enable the service, and one pinned build that succeeds.
go build -o "$root/bin/anvil" ./cmd/anvil
# Step 7's fixtures (cirros-kvm, flavor 1, lab-net), which K-ORC makes in
# production; anvil-dev makes them on the devstack and keeps what exists.
"$anvil_dev" devstack fixtures --state-dir "$state" >/dev/null || fail "failed builds: anvil-dev devstack fixtures failed"
host="$node"
zone="$(kubectl --context "$COMPUTE_CONTEXT" get node "${host}" \
  -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}')"
# The hypervisor operator's part: the host joins its zone's aggregate,
# which the zone:host form of a pinned build needs.
# Read whole first: a reader that stops early would kill the client with
# SIGPIPE, which pipefail turns into a failure.
aggregates="$(openstack --insecure aggregate list --long -f value -c Name -c "Availability Zone")"
aggregate="$(awk -v z="$zone" '$2 == z {print $1; exit}' <<<"$aggregates")"
[[ -n "$aggregate" ]] || fail "failed builds: the pool created no aggregate for $zone"
openstack --insecure aggregate add host "$aggregate" "$host" >/dev/null 2>&1 || true
# Deleting the pool deletes the service, and Nova then drops the host from
# its aggregates; a run that stops earlier leaves it to the cleanup, since
# the database outlives the devstack.
added_to="$aggregate"
kubectl patch novacompute controlplane-compute-a -n openstack --type=merge -p '{"spec":{"failedBuildsWarningThreshold":1}}' >/dev/null
compute_pod() { # the uid of the pool's pod on $host
  kubectl --context "$COMPUTE_CONTEXT" get pods -n openstack --field-selector "spec.nodeName=${host}" \
    -l app.kubernetes.io/instance=controlplane-compute-a,app.kubernetes.io/component=nova-compute \
    -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.uid}{end}'
}
restart_compute() { # the guide's restart of the node's nova-compute pod, then wait for the new process
  local old since heartbeat
  old="$(compute_pod)"
  since="$(date -u +%Y-%m-%dT%H:%M:%S)"
  kubectl --context "$COMPUTE_CONTEXT" delete pod -n openstack \
    -l app.kubernetes.io/name=novacompute,app.kubernetes.io/instance=controlplane-compute-a,app.kubernetes.io/component=nova-compute \
    --field-selector "spec.nodeName=${host}" >/dev/null
  # The old process's heartbeat keeps the service up for a while, so up
  # proves nothing: wait for a new pod, then for a heartbeat after the
  # restart, which nova-compute sends only once it consumes its queue.
  for _ in $(seq 1 90); do
    local now; now="$(compute_pod)"
    if [[ -n "$now" && "$now" != "$old" ]]; then
      # nova-compute beats every 10 s; each client call costs a core a
      # second and a half, so Nova is asked at most every 5 s.
      heartbeat="$(openstack --insecure compute service list --service nova-compute --host "$host" -f value -c "Updated At")"
      [[ "${heartbeat:0:19}" > "$since" ]] && return 0
      sleep 3
    fi
    sleep 2
  done
  fail "failed builds: nova-compute on $host did not come back after the restart (last heartbeat ${heartbeat:-none}, since $since)"
}
kubectl --context "$COMPUTE_CONTEXT" annotate node "$host" devstack.anvil.c5c3.io/compute-driver=fake.FakeBuildAbortDriver --overwrite >/dev/null
restart_compute
# The client prints "Error creating server" for a build that ends in
# ERROR but exits 0, so the status is what tells.
for i in 1 2; do
  servers+=("e2e-fail-$i")
  openstack server create "e2e-fail-$i" --image cirros-kvm --flavor 1 \
    --network lab-net --availability-zone "${zone}:${host}" --wait >/dev/null 2>&1 || true
  status="$(openstack --insecure server show "e2e-fail-$i" -f value -c status)"
  [[ "$status" == ERROR ]] || fail "failed builds: build $i on $host reads $status under the failing driver, want ERROR"
done

# The operator's metrics, read with a token the chart's metrics-reader
# ClusterRole is bound to; the token goes to curl in a file.
kubectl create serviceaccount e2e-metrics -n anvil-system >/dev/null
kubectl create clusterrolebinding e2e-metrics --clusterrole=anvil-operator-metrics-reader \
  --serviceaccount=anvil-system:e2e-metrics >/dev/null
metrics_addr="$(jq -r .operator.metricsAddr "$state/state.json")"
(umask 077; printf 'Authorization: Bearer %s\n' "$(kubectl create token e2e-metrics -n anvil-system)" >"$state/metrics-headers")
# The chart mounts a certificate for the metrics server (here the
# devstack's, for the loopback address): a scrape verifies it.
curl -sf --cacert "$state/pki/ca.crt" -H @"$state/metrics-headers" -o /dev/null "https://$metrics_addr/metrics" \
  || fail "metrics: https://$metrics_addr does not verify against the CA of the certificate the chart mounts"
pass "metrics: served with the certificate the chart mounts, and verified"
counts() { # diagnose, status and metric of $host, as "d/s/m"
  local d s m
  d="$("$root/bin/anvil" diagnose failed-builds --nova controlplane-nova -n openstack 2>/dev/null | awk -v h="$host" '$1 == h {print $2}')"
  s="$(kubectl get novacompute controlplane-compute-a -n openstack \
    -o jsonpath="{.status.nodes[?(@.name==\"$host\")].failedBuilds}")"
  m="$(curl -s --cacert "$state/pki/ca.crt" -H @"$state/metrics-headers" "https://$metrics_addr/metrics" \
    | awk -v h="node=\"$host\"" '/^anvil_novacompute_failed_builds\{/ && index($0, h) {print $NF}')"
  echo "${d:-none}/${s:-none}/${m:-none}"
}
want_counts() { # <count>: wait until all three read it; nova-compute writes it every 60 s
  local got=""
  for _ in $(seq 1 90); do
    got="$(counts)"
    [[ "$got" == "$1/$1/$1" ]] && return 0
    sleep 2
  done
  fail "failed builds: diagnose/status/metric read $got for $host, want $1/$1/$1"
}
want_counts 2
"$root/bin/anvil" diagnose failed-builds --nova controlplane-nova -n openstack >"$state/diagnose.txt" 2>&1
grep -q "openstack compute service set --disable" "$state/diagnose.txt" || fail "diagnose does not name the guide's disable command"
[[ -n "$(kubectl get events -n openstack --field-selector reason=FailedBuilds,involvedObject.name=controlplane-compute-a -o name)" ]] \
  || fail "failed builds: no FailedBuilds Warning past the threshold"
pass "failed builds: two pinned builds fail on $host; diagnose, status.nodes[].failedBuilds and the metric read 2, with a Warning"

openstack compute service set --disable --disable-reason "builds fail" "$host" nova-compute
kubectl --context "$COMPUTE_CONTEXT" annotate node "$host" devstack.anvil.c5c3.io/compute-driver- >/dev/null
restart_compute
openstack compute service set --enable "$host" nova-compute
servers+=(unblock)
openstack server create unblock --image cirros-kvm --flavor 1 \
  --network lab-net --availability-zone "${zone}:${host}" --wait >/dev/null || fail "failed builds: the pinned build after the fix failed"
status="$(openstack --insecure server show unblock -f value -c status)"
# A server without a fault has no such column, which the client says on
# stderr, with a non-zero exit.
fault="$(openstack server show unblock -c fault -f value 2>&1)" || true
[[ "$status" == ACTIVE && ( -z "$fault" || "$fault" == None || "$fault" == "No recognized column names in ['fault']"* ) ]] \
  || fail "failed builds: the pinned server reads $status, fault: ${fault:-none}"
openstack server delete unblock --wait
want_counts 0
for s in e2e-fail-1 e2e-fail-2; do openstack --insecure server delete --wait "$s" >/dev/null 2>&1 || true; done
servers=()
rm -f "$state/metrics-headers"
pass "failed builds: disabled, fixed, enabled, and one pinned build brings the count back to 0 in all three places"

# Detaching: deleting the pool drains and releases the node. Under
# guide.sh the pool stays for the rotations, and guide.sh deletes it and
# the traits listed here.
printf '%s\n' "CUSTOM_GPU_${trait_suffix}" "CUSTOM_POOL_A_${trait_suffix}" >"$state/e2e-traits"
if [[ -z "${E2E_GUIDE_SHARED:-}" ]]; then
  kubectl delete novacompute controlplane-compute-a -n openstack --timeout=30m >/dev/null
  services="$(openstack --insecure compute service list --service nova-compute -f value -c Host)"
  if grep -qx "$node" <<<"$services"; then fail "the service of $node survived the pool"; fi
  while read -r tr; do openstack --insecure trait delete "$tr" >/dev/null 2>&1 || true; done <"$state/e2e-traits"
  pass "deleting the pool released $node"
fi

[[ -n "${E2E_GUIDE_SHARED:-}" ]] || "$anvil_dev" devstack down --state-dir "$state" >/dev/null
trap - EXIT
echo "guide steps 2 to 7 e2e: passed"
