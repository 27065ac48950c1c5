#!/usr/bin/env bash
# End-to-end check of the devstack: bring it up with two compute clusters,
# check what the README promises, run up again to prove it is idempotent,
# and tear it down to prove nothing is left running.
#
# It uses its own state directory, so it never touches a developer's
# .devstack. E2E_DEVSTACK_THEN names a script to run on the devstack once
# it is checked, before the kwok round trip, the leak census and down:
# `make test-e2e` runs test/e2e/guide.sh there, so that one devstack
# serves both scripts.
set -euo pipefail
# Name the command that stopped the script; the text is the script's, with
# its variables unexpanded, so no secret shows.
trap 'echo "FAIL: ${BASH_SOURCE[0]##*/}:$LINENO: \"$BASH_COMMAND\" exited $?" >&2' ERR

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
state="${E2E_DEVSTACK_DIR:-$root/.devstack-e2e}"
anvil_dev="$root/bin/anvil-dev"
kubectl=("$root/bin/kubectl" --kubeconfig "$state/kubeconfig")

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

cleanup() {
  local rc=$?
  if [[ $rc != 0 && -f "$state/operator.log" ]]; then
    echo "--- operator log (last 40 lines) ---" >&2
    tail -40 "$state/operator.log" >&2 || true
  fi
  "$anvil_dev" devstack down --state-dir "$state" >/dev/null 2>&1 || true
  exit $rc
}
trap cleanup EXIT

go build -o "$anvil_dev" ./internal/dev/cmd/anvil-dev

# A stale stack from an aborted run would hide bugs in `up`.
"$anvil_dev" devstack down --state-dir "$state" >/dev/null

# The OpenStack services are shared with the integration tests and `make
# openstack-up`; down stops them only if this up started them.
os_was_running=false
if hack/openstack/openstack.sh status >/dev/null 2>&1; then
  os_was_running=true
fi

mkdir -p "$state"
"$anvil_dev" devstack up --state-dir "$state" --compute-clusters 2 | tee "$state/up.log"

export OS_CLIENT_CONFIG_FILE="${ANVIL_OPENSTACK_DIR:-$root/.devstack/openstack}/clouds.yaml"

for cluster in compute-a compute-b; do
  for i in 1 2 3; do
    node="$cluster-node-$i"
    ready="$("${kubectl[@]}" --context "anvil-$cluster" get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')"
    zone="$("${kubectl[@]}" --context "anvil-$cluster" get node "$node" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}')"
    [[ "$ready" == "True" ]] || fail "$node on $cluster is not Ready ($ready)"
    [[ "$zone" == "$cluster-zone-$i" ]] || fail "$node has zone '$zone', want $cluster-zone-$i"
    kubelet="$("${kubectl[@]}" --context "anvil-$cluster" get node "$node" -o jsonpath='{.status.nodeInfo.kubeletVersion}')"
    [[ "$kubelet" == "anvil-podrunner" ]] || fail "$node is run by '$kubelet', want the pod runner"
  done
  count="$("${kubectl[@]}" --context "anvil-$cluster" get nodes --no-headers | wc -l)"
  [[ "$count" == 3 ]] || fail "$cluster has $count nodes, want 3"
  pass "$cluster has 3 Ready pod-runner nodes with zone labels"
done

# One kubelet per node: each cluster's kwok-controller watches only the
# nodes annotated kwok.x-k8s.io/node=fake, and the runner's nodes carry no
# such annotation, so kwok leaves them to the runner.
for cluster in mgmt compute-a compute-b; do
  klog="$state/kwok/clusters/$cluster/logs/kwok-controller.log"
  grep -q '"msg":"Watch nodes".*"annotation":"kwok.x-k8s.io/node=fake"' "$klog" \
    || fail "$cluster's kwok-controller does not limit itself to kwok's nodes (see $klog)"
  if grep -q '"msg":"Watch all nodes"' "$klog"; then
    fail "$cluster's kwok-controller manages every node, the pod runner's too"
  fi
  kwoked="$("${kubectl[@]}" --context "anvil-$cluster" get nodes \
    -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.annotations.kwok\.x-k8s\.io/node}{"\n"}{end}' | grep -v '=$' || true)"
  [[ -z "$kwoked" ]] || fail "$cluster has nodes for kwok beside the pod runner's: $kwoked"
done
pass "kwok manages none of the pod runner's nodes"

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

# Registered as users register: each registration carries a bound token of
# the access chart's ServiceAccount, not an administrator's kubeconfig, so
# everything the operator does there below proves the chart's RBAC is
# enough. The kubeconfig holds the token: it goes to a file only this user
# reads, and is removed at once.
for cluster in compute-a compute-b; do
  reg="$state/registration-$cluster.kubeconfig"
  (umask 077; "${kubectl[@]}" --context anvil-mgmt -n c5c3-clusters get secret "$cluster" \
    -o go-template='{{index .data "kubeconfig" | base64decode}}' >"$reg")
  who="$("$root/bin/kubectl" --kubeconfig "$reg" auth whoami -o jsonpath='{.status.userInfo.username}')" || who="(refused)"
  rm -f "$reg"
  [[ "$who" == system:serviceaccount:c5c3-access:target-cluster-access ]] \
    || fail "the registration of $cluster authenticates as '$who', not as the access chart's ServiceAccount"
  scope="$("${kubectl[@]}" --context anvil-mgmt -n c5c3-clusters get secret "$cluster" \
    -o go-template='{{index .data "namespaces" | base64decode}}')"
  [[ "$scope" == openstack ]] || fail "the registration of $cluster is scoped to '$scope', want openstack"
done
pass "both registrations carry the access chart's bound token, scoped to openstack"

# The command a user runs to renew a registration, as written in the
# registration guide; the guide below then runs on compute-b with it.
go build -o "$root/bin/anvil" ./cmd/anvil
renewed="$("$root/bin/anvil" cluster register --kubeconfig "$state/kubeconfig" --context anvil-compute-b \
  --name compute-b --management-context anvil-mgmt --refresh)" || fail "anvil cluster register --refresh failed for compute-b"
grep -q "registration Secret c5c3-clusters/compute-b updated (server https://.*, namespaces openstack, token expires" <<<"$renewed" \
  || fail "anvil cluster register --refresh did not renew compute-b: $renewed"
pass "anvil cluster register --refresh renews compute-b's registration"

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

# The operator is installed from its chart: the management cluster's pod
# runner runs the Deployment's pod as the local binary, and the process
# authenticates as the chart's ServiceAccount, which may not read Secrets
# across the cluster.
operator_pods() {
  "${kubectl[@]}" --context anvil-mgmt get pods -n anvil-system -l app.kubernetes.io/instance=anvil-operator \
    -o jsonpath='{range .items[*]}{.metadata.uid} {.metadata.annotations.anvil\.c5c3\.io/pod-runner} {.spec.serviceAccountName}{"\n"}{end}'
}
pods_before="$(operator_pods)"
[[ "$(wc -l <<<"$pods_before")" == 1 && "$pods_before" == *" process anvil-operator" ]] \
  || fail "the operator does not run as one process pod of the chart's ServiceAccount: $pods_before"
op_pid="$(pgrep -o -f -- "^$state/bin/anvil-operator ")" || fail "no operator process runs from $state/bin"
op_kubeconfig="$(tr '\0' '\n' <"/proc/$op_pid/environ" | sed -n 's/^KUBECONFIG=//p')"
[[ -n "$op_kubeconfig" ]] || fail "the operator process has no KUBECONFIG"
whoami="$("$root/bin/kubectl" --kubeconfig "$op_kubeconfig" auth whoami -o jsonpath='{.status.userInfo.username}')"
[[ "$whoami" == system:serviceaccount:anvil-system:anvil-operator ]] || fail "the operator authenticates as '$whoami'"
if "${kubectl[@]}" --context anvil-mgmt auth can-i list secrets --all-namespaces \
  --as=system:serviceaccount:anvil-system:anvil-operator >/dev/null 2>&1; then
  fail "the chart's ServiceAccount may list Secrets in every namespace"
fi
pass "the operator runs from its chart as system:serviceaccount:anvil-system:anvil-operator, without cluster-wide Secrets"

"$anvil_dev" devstack up --state-dir "$state" --compute-clusters 2 >"$state/second-up.log"
pods_after="$(operator_pods)"
[[ "$pods_before" == "$pods_after" ]] || fail "a second up replaced the operator's pod ($pods_before -> $pods_after)"
grep -q "already running mgmt, compute-a, compute-b" "$state/second-up.log" || fail "a second up did not find the clusters running"
grep -q "c5c3-clusters/compute-a kept, c5c3-clusters/compute-b kept" "$state/second-up.log" \
  || fail "a second up wrote the registrations again: $(grep -m1 'c5c3-clusters/compute-a' "$state/second-up.log")"
grep -q "neutron-server already runs against" "$state/second-up.log" || fail "a second up restarted neutron-server"
pass "a second up changes nothing"

# The sample ControlPlane reads the services' real credentials, its Nova
# runs the control plane, and it goes Ready.
"${kubectl[@]}" --context anvil-mgmt wait controlplane/controlplane -n openstack --for=condition=Ready --timeout=10m >/dev/null \
  || fail "the sample ControlPlane did not become Ready"
release="$("${kubectl[@]}" --context anvil-mgmt get nova controlplane-nova -n openstack -o jsonpath='{.status.installedRelease}')"
[[ -n "$release" ]] || fail "the Nova reports no installedRelease"
pass "the sample ControlPlane is Ready and its Nova runs release $release"

# The OVN central is Ready, the ControlPlane's OVNReady says so, and the
# service set's Neutron answers through it.
ovn="$("${kubectl[@]}" --context anvil-mgmt get controlplane controlplane -n openstack \
  -o jsonpath='{.status.conditions[?(@.type=="OVNReady")].reason}')"
[[ "$ovn" == OVNCentralReady ]] || fail "the ControlPlane's OVNReady reads $ovn"
"${kubectl[@]}" --context anvil-mgmt wait ovncentral/controlplane-ovn -n openstack --for=condition=Ready --timeout=1m >/dev/null \
  || fail "the OVN central is not Ready"
openstack --os-cloud anvil network list >/dev/null || fail "Neutron does not answer on the devstack's central"
pass "OVNCentral controlplane-ovn is Ready and Neutron runs on it"

# The conductor and the scheduler that answer are the operator's pods, run
# as processes by the management cluster's pod runner, and openstack.sh
# runs no Nova of its own.
os_status="$(hack/openstack/openstack.sh status || true)"
if grep -q '^nova-' <<<"$os_status"; then
  fail "openstack.sh runs a Nova next to the devstack's"
fi
services="$(openstack --os-cloud anvil compute service list -f value -c Binary -c Host -c State)"
for binary in nova-conductor nova-scheduler; do
  component="${binary#nova-}"
  pods="$("${kubectl[@]}" --context anvil-mgmt get pods -n openstack \
    -l "app.kubernetes.io/instance=controlplane-nova,app.kubernetes.io/component=$component" \
    -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')"
  [[ -n "$pods" ]] || fail "no $binary pod runs"
  while read -r pod; do
    grep -qx "$binary $pod up" <<<"$services" || fail "no up $binary row for pod $pod: $services"
    mode="$("${kubectl[@]}" --context anvil-mgmt get pod "$pod" -n openstack -o jsonpath='{.metadata.annotations.anvil\.c5c3\.io/pod-runner}')"
    [[ "$mode" == process ]] || fail "pod $pod is $mode, not run as a process"
  done <<<"$pods"
done
pass "openstack compute service list shows the operator's conductor and scheduler pods up"

# Two kubelets on one node would fight over its lease and its status; the
# loser logs a conflict on the node or its lease. By now each runner has
# renewed its leases many times. Conflicts on pods are not that: the
# runner's pod status writes use its informer's resourceVersion, which lags
# behind its own last write and behind any controller's change to the pod,
# and the runner retries them.
for cluster in mgmt compute-a compute-b; do
  conflicts="$(grep "the object has been modified" "$state/podrunner-$cluster.log" \
    | grep -E 'on (nodes|leases[a-z0-9.]*) \\"' || true)"
  [[ -z $conflicts ]] || fail "$cluster's pod runner lost updates to another writer: $(head -3 <<<"$conflicts")"
done
pass "the pod runners' logs show no conflicting writers"

"$anvil_dev" devstack status --state-dir "$state" | tee "$state/status.txt"
grep -q "^operator *ready" "$state/status.txt" || fail "status does not report the operator ready"
grep -q "^openstack *running" "$state/status.txt" || fail "status does not report the OpenStack services running"
grep -q "^podrunner compute-b *running" "$state/status.txt" || fail "status does not report compute-b's pod runner"

# GitOps tools judge health with kstatus: on the settled devstack every
# Anvil object reads Current, and a pool whose Nova does not exist (yet)
# reads InProgress, not Failed: a pipeline may apply the Nova later.
kstatus=(env KUBECONFIG="$state/kubeconfig" "$anvil_dev" kstatus --context anvil-mgmt)
"${kstatus[@]}" >"$state/kstatus.log" 2>&1 || { cat "$state/kstatus.log" >&2; fail "kstatus does not read every Anvil object Current"; }
pass "kstatus reads every Anvil object Current ($(wc -l <"$state/kstatus.log") objects)"
"${kubectl[@]}" --context anvil-mgmt apply -f - >/dev/null <<'EOF'
apiVersion: nova.openstack.c5c3.io/v1alpha1
kind: NovaCompute
metadata:
  name: kstatus-probe
  namespace: openstack
spec:
  novaRef:
    name: no-such-nova
  nodeSelector:
    openstack.c5c3.io/nova-compute-pool: kstatus-probe
  libvirt:
    virtType: qemu
EOF
for _ in $(seq 30); do "${kstatus[@]}" --want InProgress novacomputes/openstack/kstatus-probe >/dev/null 2>&1 && break; sleep 1; done
"${kstatus[@]}" --want InProgress novacomputes/openstack/kstatus-probe >/dev/null || fail "a pool of a missing Nova does not read InProgress"
"${kubectl[@]}" --context anvil-mgmt delete novacompute kstatus-probe -n openstack --wait --timeout=2m >/dev/null
pass "kstatus reads a pool of a missing Nova InProgress"

if [[ -n "${E2E_DEVSTACK_THEN:-}" ]]; then
  E2E_GUIDE_ON_STACK=1 E2E_GUIDE_DIR="$state" "$E2E_DEVSTACK_THEN"
fi

# A setting comes and goes as GitOps does it: the console proxy is set with
# a merge patch, reaches the Nova, and is removed with a null. The
# ControlPlane is Ready again on the generation of the removal, and its
# Nova reads as before the setting. The hostname is published on nothing
# that dials it. It runs after the guide: the change rolls the Nova's
# pods twice, and the checks above and the guide expect the first ones.
mgmt=("${kubectl[@]}" --context anvil-mgmt -n openstack)
"${mgmt[@]}" wait controlplane/controlplane --for=condition=Ready --timeout=5m >/dev/null \
  || fail "the sample ControlPlane is not Ready before consoleProxy is set"
console_before="$("${mgmt[@]}" get nova controlplane-nova -o jsonpath='{.spec.consoleProxy}')"
"${mgmt[@]}" patch controlplane controlplane --type merge \
  -p '{"spec":{"services":{"nova":{"consoleProxy":{"enabled":true,"hostname":"console.anvil.invalid"}}}}}' >/dev/null
"${mgmt[@]}" wait nova/controlplane-nova --for=jsonpath='{.spec.consoleProxy.hostname}'=console.anvil.invalid --timeout=2m >/dev/null \
  || fail "the ControlPlane's consoleProxy did not reach its Nova"
"${mgmt[@]}" patch controlplane controlplane --type merge -p '{"spec":{"services":{"nova":{"consoleProxy":null}}}}' >/dev/null
generation="$("${mgmt[@]}" get controlplane controlplane -o jsonpath='{.metadata.generation}')"
"${mgmt[@]}" wait controlplane/controlplane --timeout=2m >/dev/null \
  --for=jsonpath='{.status.conditions[?(@.type=="Ready")].observedGeneration}'="$generation" \
  || fail "no pass of the ControlPlane on the generation that removed consoleProxy"
"${mgmt[@]}" wait controlplane/controlplane --for=condition=Ready --timeout=2m >/dev/null \
  || fail "the ControlPlane is not Ready after consoleProxy was removed"
console_after="$("${mgmt[@]}" get nova controlplane-nova -o jsonpath='{.spec.consoleProxy}')"
[[ "$console_after" == "$console_before" ]] \
  || fail "the Nova's consoleProxy reads $console_after after its removal, not $console_before"
pass "consoleProxy set and removed again: the ControlPlane is Ready on the new generation and its Nova as before"

# The devstack probe (make devstack-probe) runs as a user runs it: it moves
# the console hostname a few times, times each until compute-a's mirror has
# it, and puts consoleProxy back. Its ratio is a measurement, not checked.
probe_out="$(go run ./internal/dev/perf/cmd/anvil-probe --kubeconfig "$state/kubeconfig" --samples 3)" \
  || fail "the devstack probe failed: $probe_out"
grep -q '^ControlPlane spec change to the mirror: ' <<<"$probe_out" || fail "the devstack probe printed no result: $probe_out"
[[ "$("${mgmt[@]}" get controlplane controlplane -o jsonpath='{.spec.services.nova.consoleProxy}')" == "" ]] \
  || fail "the devstack probe left consoleProxy set on the ControlPlane"
pass "the devstack probe measured a ControlPlane change and put consoleProxy back: $(tail -n 1 <<<"$probe_out")"

# Without OpenStack, kwok takes the same nodes over and the runners stop.
# Nothing runs the chart's pod there, so the operator runs as a process.
"$anvil_dev" devstack up --state-dir "$state" --compute-clusters 2 --openstack=false --operator=process >"$state/kwok-up.log"
kubelet="$("${kubectl[@]}" --context anvil-compute-a get node compute-a-node-1 -o jsonpath='{.status.nodeInfo.kubeletVersion}')"
[[ "$kubelet" == kwok-* ]] || fail "with --openstack=false compute-a-node-1 is run by '$kubelet', want kwok"
if runners="$(pgrep -fa -- "anvil-podrunner.*$state")"; then
  fail "pod runners survived --openstack=false: $runners"
fi
pass "--openstack=false hands the nodes to kwok"

# And back: the runners take the same nodes over from kwok.
"$anvil_dev" devstack up --state-dir "$state" --compute-clusters 2 >"$state/runner-up.log"
for cluster in compute-a compute-b; do
  kubelet="$("${kubectl[@]}" --context "anvil-$cluster" get node "$cluster-node-1" -o jsonpath='{.status.nodeInfo.kubeletVersion}')"
  [[ "$kubelet" == "anvil-podrunner" ]] || fail "after --openstack=true $cluster-node-1 is run by '$kubelet', want the pod runner"
done
pods="$(operator_pods)"
[[ "$pods" == *" process anvil-operator" ]] || fail "back on the pod runners, the chart's operator does not run: $pods"
[[ "$(pgrep -fc -- "^$state/bin/anvil-operator ")" == 1 ]] || fail "more than one operator runs: $(pgrep -fa -- "$state/bin/anvil-operator")"
pass "--openstack=true hands the nodes back to the pod runners, and the operator to its chart"

test/e2e/leak-census.sh "$state"

"$anvil_dev" devstack down --state-dir "$state"
sleep 1
if leftovers="$(pgrep -fa -- "$state")"; then
  fail "processes survived down: $leftovers"
fi
[[ ! -e "$state" ]] || fail "down left $state behind"
if [[ $os_was_running == false ]] && hack/openstack/openstack.sh status >/dev/null 2>&1; then
  fail "down left the OpenStack services running that up started"
fi
pass "down stopped every process and removed the state"
trap - EXIT
echo "devstack e2e: 1 passed, 0 failed"
